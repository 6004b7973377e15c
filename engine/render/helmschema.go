package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"kdrift.dev/kdrift/engine/redact"
)

// schemaFile is the file of a chart that Helm checks values against.
const schemaFile = "values.schema.json"

// schemaURL is the location a chart's schema is compiled at, as Helm does;
// a relative $ref resolves against it.
const schemaURL = "file:///" + schemaFile

// tickEvery is how many schema evaluations pass between two looks at the
// render's context.
const tickEvery = 1024

// SchemaRefError is a values.schema.json whose $ref names a document
// outside it: a URL, or a file (Helm would fetch the one and open the other
// on the machine that renders). kdrift fetches and opens nothing a
// repository names while rendering.
type SchemaRefError struct {
	// URL is the referenced location, credentials removed.
	URL string
}

// Error says which reference was refused and why.
func (e *SchemaRefError) Error() string {
	where := "a file outside the schema"
	if strings.HasPrefix(e.URL, "http://") || strings.HasPrefix(e.URL, "https://") {
		where = "a remote location"
	}
	return fmt.Sprintf("%s: $ref %q is %s; kdrift never fetches or opens what a schema refers to while rendering", schemaFile, e.URL, where)
}

// refusingLoader is the schema compiler's loader for every location that
// is not the schema itself: a urn: is the permissive schema Helm uses for
// one it cannot resolve, anything else is refused (and remembered: the
// compiler's error does not unwrap to it).
type refusingLoader struct {
	refused *SchemaRefError
}

// Load refuses url, or returns `true` for a urn.
func (l *refusingLoader) Load(url string) (any, error) {
	if strings.HasPrefix(url, "urn:") {
		return true, nil
	}
	if l.refused == nil {
		l.refused = &SchemaRefError{URL: redact.Text(url)}
	}
	return nil, l.refused
}

// schemaStopped is the panic value that ends a validation whose render
// ran out of time.
type schemaStopped struct{}

// validateSchemas checks the coalesced values of c against its
// values.schema.json and those of its dependencies, as Helm does before it
// renders (a dependency is checked against the values under its name),
// with three differences for an untrusted repository: a $ref to anything
// but the schema itself is refused, a schema nesting deeper than
// opts.MaxDepth is refused, and the check stops when ctx ends. The error
// reads as Helm's.
func validateSchemas(ctx context.Context, dir string, c *chart.Chart, vals map[string]any, opts Options) error {
	var sb strings.Builder
	if err := validateChartSchema(ctx, dir, c, vals, opts, &sb); err != nil {
		return err
	}
	if sb.Len() > 0 {
		return &ChartError{Chart: dir, Problem: oneLine("values don't meet the specifications of the schema(s) in the following chart(s): " + sb.String()),
			Fix: "fix the values, or the chart's " + schemaFile + " (Argo CD refuses to render it too)"}
	}
	return nil
}

// validateChartSchema is validateSchemas for c and its dependencies,
// writing failures to sb; an error is a schema kdrift will not use.
func validateChartSchema(ctx context.Context, dir string, c *chart.Chart, vals map[string]any, opts Options, sb *strings.Builder) error {
	if len(c.Schema) > 0 {
		err := validateOne(ctx, c.Schema, vals, opts)
		var verr *jsonschema.ValidationError
		switch {
		case errors.As(err, &verr):
			msg := strings.TrimPrefix(verr.Error(), "jsonschema validation failed with '"+schemaURL+"#'\n")
			fmt.Fprintf(sb, "%s: %s ", c.Name(), msg)
		case err != nil:
			var le *LimitError
			var re *SchemaRefError
			switch {
			case errors.As(err, &le) || context.Cause(ctx) != nil:
				return err
			case errors.As(err, &re):
				return &ChartError{Chart: dir, Problem: re.Error(), Fix: "inline what it refers to under $defs in " + path.Join(dir, schemaFile), Err: re}
			}
			return &ChartError{Chart: dir, Problem: oneLine(err.Error()), Fix: "fix " + path.Join(dir, schemaFile) + " (`helm template` refuses it too)"}
		}
	}
	for _, d := range c.Dependencies() {
		raw, ok := vals[d.Name()]
		if !ok || raw == nil {
			continue
		}
		sub, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(sb, "%s: invalid type for values: expected object (map), got %T ", d.Name(), raw)
			continue
		}
		if err := validateChartSchema(ctx, path.Join(dir, "charts", d.Name()), d, sub, opts, sb); err != nil {
			return err
		}
	}
	return nil
}

// validateOne compiles one schema offline and checks vals against it; the
// check looks at ctx every tickEvery schema evaluations, so a schema that
// would take exponential time (nested anyOf over shared definitions)
// stops with the render's time limit.
func validateOne(ctx context.Context, data []byte, vals map[string]any, opts Options) (err error) {
	defer func() {
		// The library panics on some schemas (a number too large for it):
		// the schema's error, as Helm reports it.
		if p := recover(); p != nil {
			if _, ok := p.(schemaStopped); ok {
				err = context.Cause(ctx)
				return
			}
			err = fmt.Errorf("%s: unable to validate schema: %v", schemaFile, p)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", schemaFile, err)
	}
	if d := jsonDepth(doc, opts.MaxDepth); d > opts.MaxDepth {
		return limitf(schemaFile, "nesting depth", "the schema nests deeper than %d levels", opts.MaxDepth)
	}
	comp := jsonschema.NewCompiler()
	loader := &refusingLoader{}
	comp.UseLoader(loader)
	if err := comp.AddResource(schemaURL, doc); err != nil {
		return fmt.Errorf("%s: %w", schemaFile, err)
	}
	sch, err := comp.Compile(schemaURL)
	if loader.refused != nil {
		return loader.refused
	}
	if err != nil {
		return err
	}
	n := 0
	tick := func() {
		if n++; n%tickEvery == 0 && ctx.Err() != nil {
			panic(schemaStopped{})
		}
	}
	instrumentSchema(sch, tick, map[*jsonschema.Schema]bool{})
	return sch.Validate(vals)
}

// jsonDepth returns how deeply v nests, counting no further than limit+1.
func jsonDepth(v any, limit int) int {
	if limit < 0 {
		return 0
	}
	deepest := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			deepest = max(deepest, jsonDepth(e, limit-1))
		}
	case []any:
		for _, e := range v {
			deepest = max(deepest, jsonDepth(e, limit-1))
		}
	default:
		return 0
	}
	return deepest + 1
}

// instrumentSchema makes every object schema reachable from s call tick
// each time a value is checked against it: through its format check,
// which the validator makes early for every schema that has one (a format
// the schema named keeps its name and check).
func instrumentSchema(s *jsonschema.Schema, tick func(), seen map[*jsonschema.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if s.Bool == nil {
		f := s.Format
		if f == nil {
			s.Format = &jsonschema.Format{Name: "kdrift-tick", Validate: func(any) error { tick(); return nil }}
		} else {
			s.Format = &jsonschema.Format{Name: f.Name, Validate: func(v any) error { tick(); return f.Validate(v) }}
		}
	}
	walkSchemas(reflect.ValueOf(*s), func(sub *jsonschema.Schema) { instrumentSchema(sub, tick, seen) })
}

// schemaType is the type of a compiled schema.
var schemaType = reflect.TypeFor[*jsonschema.Schema]()

// walkSchemas calls fn for every schema held by the exported fields of v
// (a Schema, or a slice, map, interface or struct within one): the
// compiled form keeps subschemas in many fields of several types.
func walkSchemas(v reflect.Value, fn func(*jsonschema.Schema)) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if v.Type() == schemaType {
			fn(v.Interface().(*jsonschema.Schema))
			return
		}
		walkSchemas(v.Elem(), fn)
	case reflect.Interface:
		if !v.IsNil() {
			walkSchemas(v.Elem(), fn)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkSchemas(v.Index(i), fn)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			walkSchemas(it.Value(), fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				walkSchemas(v.Field(i), fn)
			}
		}
	}
}
