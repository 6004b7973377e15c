package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"kdrift.dev/kdrift/engine/render/sandbox"
)

// The renderers other than kustomize that a render worker runs, by the
// kind of their request (and kindGoTemplate, gotemplate.go).
const (
	kindHelm    = "helm"
	kindJsonnet = "jsonnet"
)

// init registers Helm's and Jsonnet's renderers with the render worker
// and, in a process started as a worker, serves renders and never
// returns: every binary that links this package (kdrift, its test
// binaries) is a worker too.
func init() {
	sandbox.Register(kindHelm, helmHandler)
	sandbox.Register(kindJsonnet, jsonnetHandler)
	sandbox.Register(kindGoTemplate, goTemplateHandler)
	sandbox.ServeIfWorker()
}

// sandboxFS sets how fsys's renders run: in a render worker (the
// default), or in this process for a test or benchmark that asked for it,
// with the test hook of the App folder dir.
func (r *Renderer) sandboxFS(fsys *treeFS, dir string) {
	fsys.inProcess = r.inProcess
	if r.testHook != nil {
		fsys.hook = r.testHook(dir)
	}
}

// runRenderer runs handler h (registered as kind) on req in a render
// worker, whose reads answer is the parent's side of; the worker has
// fsys's budgets (output, memory) and context (time). A renderer that
// went past a budget, panicked or took the worker down is this render's
// error, in kdrift's types (*LimitError, *PanicError, the renderer's own),
// and leaves fsys failed, so that it is not cached.
func runRenderer(fsys *treeFS, answer filesys.FileSystem, kind string, h sandbox.Handler, req any) ([]json.RawMessage, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%s request: %w", kind, err)
	}
	var out []json.RawMessage
	if fsys.inProcess {
		out, err = runInProcess(h, answer, payload, fsys.opts.MaxRenderBytes, kind)
	} else {
		lim := sandbox.Limits{MaxOutputBytes: fsys.opts.MaxRenderBytes, MaxMemoryBytes: fsys.opts.MaxMemoryBytes}
		if fsys.hook != "" {
			lim = lim.TestHook(fsys.hook)
		}
		out, err = sandbox.Shared().Run(fsys.ctx, answer, kind, payload, lim)
	}
	if err != nil {
		return nil, fromWorker(fsys, kind, err)
	}
	return out, nil
}

// runInProcess is what a worker does with a request, in this process,
// with a panic turned into its error.
func runInProcess(h sandbox.Handler, answer filesys.FileSystem, payload json.RawMessage, maxOutput int64, kind string) (out []json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &sandbox.PanicError{Value: fmt.Sprint(p), Stack: debug.Stack(), Kind: kind}
		}
	}()
	return h(answer, payload, maxOutput)
}

// The codes of the errors that keep their type across the pipe.
const (
	codeLimit  = "limit"
	codeImport = "import"
	codeChart  = "chart"
)

// chartWire is a *ChartError on the pipe.
type chartWire struct {
	Chart     string `json:"chart"`
	Problem   string `json:"problem"`
	Fix       string `json:"fix,omitempty"`
	SchemaRef string `json:"schemaRef,omitempty"`
}

// coded turns a renderer's typed error into a *sandbox.CodedError, so that
// the parent gets the type back (see fromWorker); the message is kept
// whole, wrapping included.
func coded(err error) error {
	var (
		le   *LimitError
		ie   *ImportError
		ce   *ChartError
		code string
		v    any
	)
	switch {
	case errors.As(err, &le):
		code, v = codeLimit, le
	case errors.As(err, &ie):
		code, v = codeImport, ie
	case errors.As(err, &ce):
		w := chartWire{Chart: ce.Chart, Problem: ce.Problem, Fix: ce.Fix}
		var re *SchemaRefError
		if errors.As(ce.Err, &re) {
			w.SchemaRef = re.URL
		}
		code, v = codeChart, w
	default:
		return err
	}
	data, jerr := json.Marshal(v)
	if jerr != nil {
		return err
	}
	return &sandbox.CodedError{Code: code, Data: data, Msg: err.Error()}
}

// keptError is a typed error that came back from a worker wrapped in a
// longer message: the message is the whole one, the type the inner one.
type keptError struct {
	msg string
	err error
}

func (e *keptError) Error() string { return e.msg }
func (e *keptError) Unwrap() error { return e.err }

// fromWorker turns what a worker's render failed with into kdrift's
// error types, and marks fsys failed where the result must not be cached
// (a budget, a worker that failed, a render that ran out of time).
func fromWorker(fsys *treeFS, kind string, err error) error {
	var (
		sle *LimitError
		le  *sandbox.LimitError
		pe  *sandbox.PanicError
		ce  *sandbox.CodedError
	)
	switch {
	case errors.As(err, &le):
		return fsys.refuse(limitf("", le.Limit, "%s", le.Detail))
	case errors.As(err, &sle):
		// The render's time limit, the cause of its context.
		return fsys.refuse(err)
	case errors.As(err, &pe):
		return &PanicError{Value: pe.Value, Stack: pe.Stack, Renderer: kind}
	case errors.As(err, &ce):
		typed := decodeCoded(ce)
		if typed == nil {
			return errors.New(ce.Msg)
		}
		if typed.Error() != ce.Msg {
			typed = &keptError{msg: ce.Msg, err: typed}
		}
		if ce.Code == codeLimit {
			return fsys.refuse(typed)
		}
		return typed
	case errors.Is(err, sandbox.ErrWorker), fsys.ctx.Err() != nil:
		fsys.markBroken()
	}
	return err
}

// decodeCoded rebuilds a coded error's type; nil when it cannot.
func decodeCoded(ce *sandbox.CodedError) error {
	switch ce.Code {
	case codeLimit:
		var le LimitError
		if json.Unmarshal(ce.Data, &le) == nil {
			return &le
		}
	case codeImport:
		var ie ImportError
		if json.Unmarshal(ce.Data, &ie) == nil {
			return &ie
		}
	case codeChart:
		var w chartWire
		if json.Unmarshal(ce.Data, &w) == nil {
			e := &ChartError{Chart: w.Chart, Problem: w.Problem, Fix: w.Fix}
			if w.SchemaRef != "" {
				e.Err = &SchemaRefError{URL: w.SchemaRef}
			}
			return e
		}
	}
	return nil
}
