package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/render/sandbox"
)

// kustomize builds dir with krusty over a read-recording view of tree,
// after the guard walked its kustomization graph. Builds are serialized
// and a panic inside kustomize becomes an error. A non-nil ov edits the
// kustomization in memory first (generating one for a Flux folder that
// has none) and post-processes the objects.
func (r *Renderer) kustomize(ctx context.Context, tree Tree, dir string, opts Options, ov *Overlay) (e *cacheEntry) {
	secrets := &redact.Secrets{}
	fsys := newTreeFS(ctx, tree, opts, secrets)
	fsys.sops = r.newSOPSReader(dir)
	r.sandboxFS(fsys, dir)
	if err := applyOverlay(fsys, dir, ov); err != nil {
		e = r.entry(fsys)
		if le := fsys.limit(); le != nil {
			err = le
		}
		e.err = &Error{Path: dir, Err: err}
		return e
	}
	if err := checkKustomizations(fsys, dir, secrets); err != nil && !r.noGuard {
		e = r.entry(fsys)
		e.err = &Error{Path: dir, Err: err}
		return e
	}
	js, err := r.runKustomize(ctx, fsys, dir, opts)
	e = r.entry(fsys)
	if le := fsys.limit(); le != nil {
		// kustomize may have wrapped the refused read, or tried another
		// reading of the entry; the budget is the reason.
		e.err = &Error{Path: dir, Err: le}
		return e
	}
	if err != nil {
		var le *sandbox.LimitError
		var pe *sandbox.PanicError
		switch {
		case errors.As(err, &le):
			// A budget is a setting, not the input: never cached.
			e.inputs, err = nil, limitf("", le.Limit, "%s", le.Detail)
		case errors.As(err, &pe):
			// Cached: the same input would panic again.
			err = &PanicError{Value: pe.Value, Stack: pe.Stack}
		case errors.Is(err, sandbox.ErrWorker), ctx.Err() != nil:
			e.inputs = nil
		}
		e.err = &Error{Path: dir, Err: scrubbed(fsys.sops.scrub(err), secrets)}
		return e
	}
	var size int64
	for _, raw := range js {
		if size += int64(len(raw)); size > opts.MaxRenderBytes {
			e.objs, e.err = nil, &Error{Path: dir, Err: limitf("", "rendered size", "the objects rendered come to more than %d bytes", opts.MaxRenderBytes)}
			return e
		}
		if err := fsys.spendJSON("", raw); err != nil {
			e.objs, e.err = nil, &Error{Path: dir, Err: err}
			return e
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			e.err = &Error{Path: dir, Err: scrubbed(fmt.Errorf("render worker sent an object that is not one: %w", err), secrets)}
			return e
		}
		e.objs = append(e.objs, obj)
	}
	if ov != nil {
		objs, err := ov.postBuild(e.objs, opts)
		if err != nil {
			e.objs, e.err = nil, &Error{Path: dir, Err: scrubbed(fsys.sops.scrub(err), secrets)}
			return e
		}
		e.objs = objs
	}
	return e
}

// runKustomize builds dir over fsys in a render worker (see package
// sandbox), or in this process for a test that compares the two. A worker
// that failed is errWorker; one killed past a budget is a
// *sandbox.LimitError.
func (r *Renderer) runKustomize(ctx context.Context, fsys *treeFS, dir string, opts Options) ([]json.RawMessage, error) {
	if r.inProcess {
		if err := acquire(ctx, r.kbuild, "another app's kustomize build"); err != nil {
			return nil, err
		}
		defer func() { <-r.kbuild }()
		return buildInProcess(fsys, dir, opts)
	}
	lim := sandbox.Limits{MaxOutputBytes: opts.MaxRenderBytes, MaxMemoryBytes: opts.MaxMemoryBytes}
	if r.testHook != nil {
		lim = lim.TestHook(r.testHook(dir))
	}
	return sandbox.Shared().Build(ctx, fsys, "/"+dir, lim)
}

// buildInProcess is the build a worker runs, in this process, with a
// panic turned into its error.
func buildInProcess(fsys *treeFS, dir string, opts Options) (js []json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			js, err = nil, &sandbox.PanicError{Value: fmt.Sprint(p), Stack: debug.Stack()}
		}
	}()
	return sandbox.Build(fsys, "/"+dir, opts.MaxRenderBytes)
}

// entry starts the cache entry of a build that read through fsys: its
// inputs, or none when it must not be cached (a read failed, a budget was
// hit).
func (r *Renderer) entry(fsys *treeFS) *cacheEntry {
	e := &cacheEntry{inputs: fsys.inputs(), sealed: fsys.sops.undecrypted(), secrets: fsys.sops.secrets()}
	if fsys.failed() {
		e.inputs = nil
	}
	return e
}

// scrubbed returns err with its message scrubbed of the Secret values the
// render read and of URL credentials; a typed error is kept as is when
// there is nothing to scrub.
func scrubbed(err error, secrets *redact.Secrets) error {
	msg := err.Error()
	if clean := secrets.Scrub(msg); clean != msg {
		return errors.New(clean)
	}
	return err
}

// checkOutput refuses a render whose objects, as JSON, come to more than
// opts.MaxRenderBytes.
func checkOutput(objs []*unstructured.Unstructured, opts Options) error {
	var size int64
	for _, o := range objs {
		js, err := o.MarshalJSON()
		if err != nil {
			return fmt.Errorf("%s/%s: %w", o.GetKind(), o.GetName(), err)
		}
		if size += int64(len(js)); size > opts.MaxRenderBytes {
			return limitf("", "rendered size", "the objects rendered come to more than %d bytes", opts.MaxRenderBytes)
		}
	}
	return nil
}

// PanicError is a panic inside a render, recovered.
type PanicError struct {
	// Value is what the render panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
	// Renderer is "helm" or "jsonnet" for a panic of theirs; "" is
	// kustomize (or kdrift's own code around a render).
	Renderer string
}

// Error renders `kustomize panicked: VALUE` (or the renderer's name).
func (e *PanicError) Error() string {
	if e.Renderer != "" {
		return fmt.Sprintf("%s panicked: %v", e.Renderer, e.Value)
	}
	return fmt.Sprintf("kustomize panicked: %v", e.Value)
}

// Warm starts, in the background, a render worker (see package sandbox)
// and in it kustomize's one-time set-up (parsing its default transformer
// configuration, which every later build reuses), so that a one-shot
// command's first render need not wait for them: call it before the work
// that precedes rendering (reading Git). The worker builds a fixed
// kustomization of one ConfigMap in memory and reads no repository. Only
// the first call on a Renderer starts one. With a disk cache
// (SetDiskCache) it does nothing: a command run again on a commit reads
// its renders from disk, and a warm-up would only take the CPU from
// reading Git and connecting to the cluster.
func (r *Renderer) Warm() {
	r.mu.Lock()
	disk := r.disk != nil
	r.mu.Unlock()
	if disk {
		return
	}
	r.warm.Do(func() {
		if r.inProcess {
			return
		}
		sandbox.Shared().Warm()
	})
}
