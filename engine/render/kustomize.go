package render

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"kdrift.dev/kdrift/engine/redact"
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
	if err := applyOverlay(fsys, dir, ov); err != nil {
		e = r.entry(fsys)
		if le := fsys.limit(); le != nil {
			err = le
		}
		e.err = &Error{Path: dir, Err: err}
		return e
	}
	if err := checkKustomizations(fsys, dir, secrets); err != nil {
		e = r.entry(fsys)
		e.err = &Error{Path: dir, Err: err}
		return e
	}
	if err := acquire(ctx, r.kbuild, "another app's kustomize build"); err != nil {
		return &cacheEntry{err: &Error{Path: dir, Err: err}}
	}
	defer func() { <-r.kbuild }()
	defer func() {
		if p := recover(); p != nil {
			// A panic is treated like a render error, and cached: the same
			// input would panic again.
			e = r.entry(fsys)
			e.err = &Error{Path: dir, Err: &PanicError{Value: p, Stack: debug.Stack()}}
		}
	}()
	k := krusty.MakeKustomizer(kustomizeOptions())
	m, err := k.Run(fsys, "/"+dir)
	e = r.entry(fsys)
	if le := fsys.limit(); le != nil {
		// kustomize may have wrapped the refused read, or tried another
		// reading of the entry; the budget is the reason.
		e.err = &Error{Path: dir, Err: le}
		return e
	}
	if err != nil {
		e.err = &Error{Path: dir, Err: scrubbed(fsys.sops.scrub(err), secrets)}
		return e
	}
	var size int64
	for _, res := range m.Resources() {
		// Through JSON, so that numbers become int64/float64 as in every
		// other unstructured object (kyaml's own maps hold int).
		js, err := res.MarshalJSON()
		if err != nil {
			e.err = &Error{Path: dir, Err: scrubbed(fmt.Errorf("%s: %w", res.CurId(), err), secrets)}
			return e
		}
		if size += int64(len(js)); size > opts.MaxRenderBytes {
			e.objs, e.err = nil, &Error{Path: dir, Err: limitf("", "rendered size", "the objects rendered come to more than %d bytes", opts.MaxRenderBytes)}
			return e
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			e.err = &Error{Path: dir, Err: scrubbed(fmt.Errorf("%s: %w", res.CurId(), err), secrets)}
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

// kustomizeOptions are kustomize's own defences, a second line behind the
// guard: builtin plugins only (no exec, no KRM functions), no Helm, and
// files loaded from the kustomization's own folder only.
func kustomizeOptions() *krusty.Options {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionUnspecified
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.PluginConfig.HelmConfig.Enabled = false
	opts.PluginConfig.FnpLoadingOptions.EnableExec = false
	opts.PluginConfig.FnpLoadingOptions.Network = false
	opts.PluginConfig.FnpLoadingOptions.Mounts = nil
	return opts
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
}

// Error renders `kustomize panicked: VALUE`.
func (e *PanicError) Error() string { return fmt.Sprintf("kustomize panicked: %v", e.Value) }

// Warm starts, in the background, kustomize's one-time set-up (parsing
// its default transformer configuration: its first build does it, every
// later one reuses it), so that a one-shot command's first render need
// not do it: call it before the work that precedes rendering (reading
// Git). It builds a fixed kustomization of one ConfigMap in memory, with
// kdrift's kustomize options and in turn with the Renderer's other
// builds; it reads no repository, and a render that starts meanwhile
// waits for it. Only the first call on a Renderer builds. With a disk
// cache (SetDiskCache) it does nothing: a command run again on a commit
// reads its renders from disk, and a warm-up would only take the CPU from
// reading Git and connecting to the cluster.
func (r *Renderer) Warm() {
	r.mu.Lock()
	disk := r.disk != nil
	r.mu.Unlock()
	if disk {
		return
	}
	r.warm.Do(func() {
		go func() {
			r.kbuild <- struct{}{}
			defer func() { <-r.kbuild }()
			defer func() { _ = recover() }() // a real build reports the same failure
			fs := filesys.MakeFsInMemory()
			for name, doc := range map[string]string{
				"/kustomization.yaml": "namespace: warm\nresources:\n- cm.yaml\n",
				"/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: warm\n",
			} {
				if err := fs.WriteFile(name, []byte(doc)); err != nil {
					return
				}
			}
			_, _ = krusty.MakeKustomizer(kustomizeOptions()).Run(fs, "/")
		}()
	})
}
