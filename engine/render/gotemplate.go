package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/render/sandbox"
)

// kindGoTemplate is the render worker's request that executes Argo CD
// ApplicationSet Go templates.
const kindGoTemplate = "gotemplate"

// MaxGoTemplateRequest bounds one batch of Go templates sent to a render
// worker (texts and data as JSON); GoTemplates splits larger work.
const MaxGoTemplateRequest = 512 << 10

// GoTemplates is a batch of Argo CD ApplicationSet Go templates: every
// text is executed with every data value.
type GoTemplates struct {
	// Texts are the templates.
	Texts []string `json:"texts"`
	// Data are the values each text is executed with (a generator's
	// parameters).
	Data []any `json:"data"`
	// MissingKeyError makes a key absent from the data an error
	// (goTemplateOptions: ["missingkey=error"]); otherwise it renders as
	// "<no value>", as Argo CD does.
	MissingKeyError bool `json:"missingKeyError,omitempty"`
}

// GoTemplateError is a template that does not parse or execute: which
// text, and the template package's message.
type GoTemplateError struct {
	// Text is the template.
	Text string `json:"text"`
	// Err is what went wrong.
	Err string `json:"err"`
}

// Error names the template and says what went wrong.
func (e *GoTemplateError) Error() string {
	t := e.Text
	if len(t) > 80 {
		t = t[:80] + "..."
	}
	return fmt.Sprintf("template %q: %s", t, e.Err)
}

// codeGoTemplate is a *GoTemplateError on the pipe.
const codeGoTemplate = "gotemplate"

// ExecGoTemplates executes every text of req with every data value, in a
// render worker (or in this process when the Renderer was told to), and
// returns the outputs data-major: out[d*len(Texts)+t]. A repository's
// templates are untrusted: they get Sprig's functions without env,
// expandenv and getHostByName plus Argo CD's toYaml, fromYaml,
// fromYamlArray, normalize and slugify, every function bounded as in a
// chart render, and the batch ends at Options.Timeout (the worker is
// killed) and Options.MaxRenderBytes of output.
func (r *Renderer) ExecGoTemplates(ctx context.Context, req GoTemplates) ([]string, error) {
	opts := r.Options.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout,
		limitf("", "time", "the ApplicationSet templates took longer than %s", opts.Timeout))
	defer cancel()
	texts, err := json.Marshal(req.Texts)
	if err != nil {
		return nil, err
	}
	var out []string
	for start := 0; start < len(req.Data) || (start == 0 && len(req.Data) == 0); {
		size, end := len(texts), start
		for end < len(req.Data) {
			d, err := json.Marshal(req.Data[end])
			if err != nil {
				return nil, err
			}
			if size+len(d) > MaxGoTemplateRequest && end > start {
				break
			}
			if size+len(d) > MaxGoTemplateRequest {
				return nil, limitf("", "rendered size", "the parameters of one ApplicationSet element come to %d bytes, more than %d", len(d), MaxGoTemplateRequest)
			}
			size += len(d)
			end++
		}
		part, err := r.execGoTemplates(ctx, GoTemplates{Texts: req.Texts, Data: req.Data[start:end], MissingKeyError: req.MissingKeyError}, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
		if end == start {
			break
		}
		start = end
	}
	return out, nil
}

// execGoTemplates runs one batch that fits a worker's request.
func (r *Renderer) execGoTemplates(ctx context.Context, req GoTemplates, opts Options) ([]string, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var raw []json.RawMessage
	if r.inProcess {
		raw, err = runInProcess(goTemplateHandler, filesys.MakeFsInMemory(), payload, opts.MaxRenderBytes, kindGoTemplate)
	} else {
		raw, err = sandbox.Shared().Run(ctx, filesys.MakeFsInMemory(), kindGoTemplate, payload, sandbox.Limits{MaxOutputBytes: opts.MaxRenderBytes, MaxMemoryBytes: opts.MaxMemoryBytes})
	}
	if err != nil {
		var (
			le *sandbox.LimitError
			ce *sandbox.CodedError
		)
		switch {
		case errors.As(err, &le):
			return nil, limitf("", le.Limit, "%s", le.Detail)
		case errors.As(err, &ce) && ce.Code == codeGoTemplate:
			var ge GoTemplateError
			if json.Unmarshal(ce.Data, &ge) == nil {
				return nil, &ge
			}
		case errors.As(err, &ce) && ce.Code == codeLimit:
			var l LimitError
			if json.Unmarshal(ce.Data, &l) == nil {
				return nil, &l
			}
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	out := make([]string, len(raw))
	for i, m := range raw {
		if err := json.Unmarshal(m, &out[i]); err != nil {
			return nil, fmt.Errorf("ApplicationSet template output: %w", err)
		}
	}
	return out, nil
}

// goTemplateHandler executes a GoTemplates request: in a render worker,
// or in this process for a Renderer told to.
func goTemplateHandler(_ filesys.FileSystem, payload json.RawMessage, maxOutput int64) ([]json.RawMessage, error) {
	var req GoTemplates
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("gotemplate request: %w", err)
	}
	opts := DefaultOptions()
	opts.MaxRenderBytes = maxOutput
	wfs := newTreeFS(context.Background(), nil, opts, &redact.Secrets{})
	funcs := argoFuncs(context.Background(), wfs)
	option := "missingkey=default"
	if req.MissingKeyError {
		option = "missingkey=error"
	}
	tmpls := make([]*template.Template, len(req.Texts))
	for i, text := range req.Texts {
		t, err := template.New("").Option(option).Funcs(funcs).Parse(text)
		if err != nil {
			return nil, goTemplateErr(text, err)
		}
		tmpls[i] = t
	}
	var out []json.RawMessage
	var total int64
	for _, d := range req.Data {
		for i, t := range tmpls {
			var buf bytes.Buffer
			err := t.Execute(&limitedWriter{w: &buf, left: maxOutput - total}, d)
			if le := wfs.limit(); le != nil {
				return nil, coded(le)
			}
			if err != nil {
				if errors.Is(err, errOutputBudget) {
					return nil, coded(limitf("", "rendered size", "the ApplicationSet templates make more than %d bytes", maxOutput))
				}
				return nil, goTemplateErr(req.Texts[i], err)
			}
			js, err := json.Marshal(buf.String())
			if err != nil {
				return nil, err
			}
			total += int64(len(js))
			out = append(out, js)
		}
	}
	return out, nil
}

// goTemplateErr is a template's error, typed across the pipe.
func goTemplateErr(text string, err error) error {
	ge := &GoTemplateError{Text: text, Err: strings.TrimPrefix(err.Error(), "template: ")}
	data, jerr := json.Marshal(ge)
	if jerr != nil {
		return ge
	}
	return &sandbox.CodedError{Code: codeGoTemplate, Data: data, Msg: ge.Error()}
}

// errOutputBudget is a template that wrote past its budget.
var errOutputBudget = errors.New("output budget")

// limitedWriter fails once more than left bytes are written, which stops
// the template.
type limitedWriter struct {
	w    *bytes.Buffer
	left int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, errOutputBudget
	}
	l.left -= int64(len(p))
	return l.w.Write(p)
}

// argoFuncs are the functions an ApplicationSet template may call: the
// bounded Sprig set of a chart render (no env, expandenv or
// getHostByName) and Argo CD's own additions.
func argoFuncs(ctx context.Context, fsys *treeFS) template.FuncMap {
	funcs := boundedFuncs(ctx, fsys)
	funcs["toYaml"] = func(v any) (string, error) {
		b, err := yaml.Marshal(v)
		return strings.TrimSuffix(string(b), "\n"), err
	}
	funcs["fromYaml"] = func(s string) (map[string]any, error) {
		m := map[string]any{}
		err := yaml.Unmarshal([]byte(s), &m)
		return m, err
	}
	funcs["fromYamlArray"] = func(s string) ([]any, error) {
		var a []any
		err := yaml.Unmarshal([]byte(s), &a)
		return a, err
	}
	funcs["normalize"] = SanitizeName
	funcs["slugify"] = func(maxSize int, smarttruncate bool, s string) string {
		return slugify(s, maxSize, smarttruncate)
	}
	for _, name := range []string{"toYaml", "fromYaml", "fromYamlArray", "normalize", "slugify"} {
		funcs[name] = guardFunc(ctx, name, funcs[name], func(n string, size int64) {
			if size > fsys.opts.MaxRenderBytes {
				panic(fsys.refuse(limitf("", "rendered size", "template function %s would make %d bytes or items", n, size)))
			}
		})
	}
	return funcs
}

var invalidDNSChars = regexp.MustCompile(`[^-a-z0-9.]`)

// SanitizeName is Argo CD's normalize: lower case, every character a DNS
// name does not allow made a dash, at most 253 characters, no leading or
// trailing dash or dot.
func SanitizeName(name string) string {
	name = invalidDNSChars.ReplaceAllString(strings.ToLower(name), "-")
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.Trim(name, "-.")
}

var slugInvalid = regexp.MustCompile(`[^a-z0-9-]+`)

// slugify is Argo CD's slugify: lower case, runs of other characters a
// dash, cut at maxSize (at a dash when smarttruncate).
func slugify(s string, maxSize int, smart bool) string {
	s = strings.Trim(slugInvalid.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if maxSize > 0 && len(s) > maxSize {
		if smart {
			cut := strings.LastIndex(s[:maxSize+1], "-")
			if cut > 0 {
				s = s[:cut]
			} else {
				s = s[:maxSize]
			}
		} else {
			s = s[:maxSize]
		}
	}
	return strings.Trim(s, "-")
}
