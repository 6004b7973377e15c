package render

import (
	"fmt"
	"runtime/debug"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
)

// kustomize builds dir with krusty over a read-recording view of tree.
// Builds are serialized and a panic inside kustomize becomes an error.
func (r *Renderer) kustomize(tree Tree, dir string) (e *cacheEntry) {
	fsys := newTreeFS(tree)
	fsys.sops = r.newSOPSReader()
	r.buildMu.Lock()
	defer r.buildMu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			// A panic is treated like a render error, and cached: the same
			// input would panic again.
			e = r.entry(fsys)
			e.err = &Error{Path: dir, Err: &PanicError{Value: p, Stack: debug.Stack()}}
		}
	}()
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionUnspecified
	k := krusty.MakeKustomizer(opts)
	m, err := k.Run(fsys, "/"+dir)
	e = r.entry(fsys)
	if err != nil {
		e.err = &Error{Path: dir, Err: fsys.sops.scrub(err)}
		return e
	}
	for _, res := range m.Resources() {
		// Through JSON, so that numbers become int64/float64 as in every
		// other unstructured object (kyaml's own maps hold int).
		js, err := res.MarshalJSON()
		if err != nil {
			e.err = &Error{Path: dir, Err: fmt.Errorf("%s: %w", res.CurId(), err)}
			return e
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			e.err = &Error{Path: dir, Err: fmt.Errorf("%s: %w", res.CurId(), err)}
			return e
		}
		e.objs = append(e.objs, obj)
	}
	return e
}

// entry starts the cache entry of a build that read through fsys: its
// inputs, or none when it must not be cached (a read failed, or a remote
// base was read and RemoteTTL forbids caching it).
func (r *Renderer) entry(fsys *treeFS) *cacheEntry {
	e := &cacheEntry{inputs: fsys.inputs(), sealed: fsys.sops.undecrypted(), secrets: fsys.sops.secrets()}
	if fsys.readRemote() {
		e.expires = time.Now().Add(r.RemoteTTL)
	}
	if fsys.failed() || (fsys.readRemote() && r.RemoteTTL <= 0) {
		e.inputs = nil
	}
	return e
}

// PanicError is a panic inside kustomize, recovered.
type PanicError struct {
	// Value is what kustomize panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error renders `kustomize panicked: VALUE`.
func (e *PanicError) Error() string { return fmt.Sprintf("kustomize panicked: %v", e.Value) }
