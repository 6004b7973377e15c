package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Parse decodes every App document in data, the contents of file (a path
// relative to the repository root, recorded in App.File and in errors).
// Decoding is strict: unknown fields, duplicate keys, a wrong apiVersion or
// kind and a wrong value type are errors of that document, and the other
// documents still decode. Empty documents are skipped. Parse checks the shape
// of each document only; Validate checks its meaning.
func Parse(file string, data []byte) ([]App, []error) {
	var apps []App
	var errs []error
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, &Error{File: file, Doc: doc, Problem: "cannot split YAML documents: " + err.Error(), Fix: "fix the YAML syntax"})
			break
		}
		a, docErrs := parseDoc(file, doc, raw)
		errs = append(errs, docErrs...)
		if a != nil && len(docErrs) == 0 {
			apps = append(apps, *a)
		}
	}
	return apps, errs
}

// parseDoc decodes one document; it returns nil, nil for an empty document.
func parseDoc(file string, doc int, raw []byte) (*App, []error) {
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, []error{&Error{File: file, Doc: doc, Problem: "invalid YAML: " + err.Error(), Fix: "fix the YAML syntax"}}
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || string(js) == "null" {
		return nil, nil
	}
	var generic any
	if err := json.Unmarshal(js, &generic); err != nil {
		return nil, []error{&Error{File: file, Doc: doc, Problem: "invalid document: " + err.Error(), Fix: "fix the YAML syntax"}}
	}
	obj, ok := generic.(map[string]any)
	if !ok {
		return nil, []error{&Error{File: file, Doc: doc, Problem: fmt.Sprintf("document is a %T, not a mapping", generic), Fix: "write an App document with apiVersion, kind, metadata and spec"}}
	}
	name := nameOf(obj)
	mk := func(field, problem, fix string) error {
		return &Error{File: file, Doc: doc, App: name, Field: field, Problem: problem, Fix: fix}
	}
	var errs []error
	if v, _ := obj["apiVersion"].(string); v != APIVersion {
		errs = append(errs, mk("apiVersion", fmt.Sprintf("is %q, kdrift reads %q", v, APIVersion), "set apiVersion: "+APIVersion))
	}
	if k, _ := obj["kind"].(string); k != Kind {
		errs = append(errs, mk("kind", fmt.Sprintf("is %q, not %q", k, Kind), "set kind: "+Kind+" (only App documents belong in "+Dir+"/)"))
	}
	for _, u := range unknownFields(obj, reflect.TypeFor[App](), "") {
		fix := "remove it"
		if u.suggest != "" {
			fix = fmt.Sprintf("did you mean %q?", u.suggest)
		}
		errs = append(errs, mk(u.path, "unknown field", fix))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var a App
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, []error{decodeError(mk, err)}
	}
	a.File = file
	return &a, nil
}

// decodeError turns a JSON type error into an Error naming the field.
func decodeError(mk func(field, problem, fix string) error, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.String()
		if te.Type == reflect.TypeFor[time.Time]() {
			want = "an RFC 3339 time such as 2026-12-02T15:00:00Z"
		}
		return mk(te.Field, fmt.Sprintf("is a %s", te.Value), "write "+want)
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return mk("", fmt.Sprintf("invalid time %q", pe.Value), "write an RFC 3339 time such as 2026-12-02T15:00:00Z")
	}
	return mk("", err.Error(), "fix the document")
}

// nameOf reads metadata.name from a generic document, if it is there.
func nameOf(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

type unknownField struct {
	path    string
	suggest string
}

// unknownFields lists every key of v that t has no json field for, with its
// dotted path and, when a field differs only in case, a suggestion.
func unknownFields(v any, t reflect.Type, prefix string) []unknownField {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []unknownField
	switch t.Kind() {
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil // a type error; json decoding reports it
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			ft, ok := fields[k]
			if !ok {
				u := unknownField{path: p}
				for name := range fields {
					if strings.EqualFold(name, k) {
						u.suggest = name
					}
				}
				out = append(out, u)
				continue
			}
			out = append(out, unknownFields(m[k], ft, p)...)
		}
	case reflect.Slice:
		s, ok := v.([]any)
		if !ok {
			return nil
		}
		for i, e := range s {
			out = append(out, unknownFields(e, t.Elem(), fmt.Sprintf("%s[%d]", prefix, i))...)
		}
	}
	return out
}

// jsonFields maps the json names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}
