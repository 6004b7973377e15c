// Package sandbox runs kustomize builds, and the renderers registered with
// it (engine/render registers Helm's templates and Jsonnet), in a worker
// process that cannot do harm: started from kdrift's own binary, with an
// empty environment, no file descriptors but its pipes and an empty
// private working folder, and on Linux a seccomp filter that refuses
// starting a program and opening a socket, a network namespace of its own
// where the kernel allows, and Landlock rules that leave it no file of
// the disk. The worker reads the repository only through its pipes:
// every file system call of kustomize, and every file a registered
// renderer reads, is a request the parent answers from the
// filesys.FileSystem it was given, so the parent keeps everything
// trust-related (the tree, the read budgets, the YAML guard, SOPS
// decryption, the record of inputs) and no key or repository file ever
// enters the worker unless the parent sends it.
//
// The parent keeps a small pool of workers. A worker that overruns its
// time or memory, fails or breaks the protocol is killed (never waited
// for) and replaced; the render it ran fails with a *LimitError or an
// error naming what happened, and the other renders go on.
package sandbox

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Report says what confines a worker on this platform, in words, for the
// log and `kdrift version`.
type Report struct {
	// Exec says what keeps a render from starting a program.
	Exec string `json:"exec"`
	// Network says what keeps a render from opening a connection.
	Network string `json:"network"`
	// FS says what keeps a render from reading the local disk.
	FS string `json:"fs"`
}

// Limits are the budgets of one build or render in a worker; the wall
// time is the context's.
type Limits struct {
	// MaxOutputBytes bounds the objects a build returns, as JSON.
	MaxOutputBytes int64
	// MaxMemoryBytes bounds the worker's resident memory during the build.
	MaxMemoryBytes int64
	// testHook makes a test binary's worker misbehave on purpose; see
	// SetTestHook.
	testHook string
}

// LimitError is a build stopped because it went past a budget.
type LimitError struct {
	// Limit names the budget: "time", "memory" or "rendered size".
	Limit string
	// Detail says by how much.
	Detail string
}

// Error renders `LIMIT limit: DETAIL`.
func (e *LimitError) Error() string { return e.Limit + " limit: " + e.Detail }

// CodedError is an error a Handler returns so that the parent can rebuild
// its type: Code names the type, Data holds its fields as JSON, Msg is
// its message.
type CodedError struct {
	// Code names the error's type, for the code that reads it back.
	Code string
	// Data holds the error's fields as JSON.
	Data json.RawMessage
	// Msg is the error's message.
	Msg string
}

// Error returns Msg.
func (e *CodedError) Error() string { return e.Msg }

// Handler is a renderer other than kustomize that a worker runs: it reads
// the files it needs through fsys (each read answered by the parent),
// decodes its request from payload, and returns its output as JSON
// values of at most maxOutput bytes in all. An error that is a
// *CodedError or a *LimitError keeps its type across the pipe; any other
// error keeps its message.
type Handler func(fsys filesys.FileSystem, payload json.RawMessage, maxOutput int64) ([]json.RawMessage, error)

// handlers are the registered handlers by kind; see Register.
var handlers = map[string]Handler{}

// Register makes kind a request a worker serves with h. Call it from an
// init function, before ServeIfWorker; "" is kustomize's and is taken.
func Register(kind string, h Handler) {
	if kind == "" {
		panic("sandbox: the empty kind is kustomize's")
	}
	handlers[kind] = h
}

// PanicError is a panic inside a renderer, recovered in the worker.
type PanicError struct {
	// Value is the panic's value, printed.
	Value string
	// Stack is the worker goroutine's stack at the panic.
	Stack []byte
	// Kind is the request's kind (see Register); "" for kustomize.
	Kind string
}

// Error renders `kustomize panicked: VALUE` (or the renderer's name for
// another kind).
func (e *PanicError) Error() string {
	if e.Kind != "" {
		return e.Kind + " panicked: " + e.Value
	}
	return "kustomize panicked: " + e.Value
}

// KustomizeOptions are kustomize's own defences, a layer behind kdrift's
// guard and in front of the worker's confinement: builtin plugins only
// (no exec, no KRM functions), no Helm, and files loaded from the
// kustomization's own folder only.
func KustomizeOptions() *krusty.Options {
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

// Build runs kustomize on folder dir ("/"-rooted) of fsys in this process
// and returns the objects as JSON, at most maxOutput bytes in all (a
// *LimitError past it). The worker calls it; kdrift's tests call it to
// compare a worker's overhead with the build itself.
func Build(fsys filesys.FileSystem, dir string, maxOutput int64) ([]json.RawMessage, error) {
	m, err := krusty.MakeKustomizer(KustomizeOptions()).Run(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	var size int64
	for _, res := range m.Resources() {
		// Through JSON, so that numbers become int64/float64 as in every
		// other unstructured object (kyaml's own maps hold int).
		js, err := res.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.CurId(), err)
		}
		if size += int64(len(js)); maxOutput > 0 && size > maxOutput {
			return nil, &LimitError{Limit: "rendered size", Detail: fmt.Sprintf("the objects rendered come to more than %d bytes", maxOutput)}
		}
		out = append(out, js)
	}
	return out, nil
}

// warmUp builds a fixed kustomization of one ConfigMap in memory: it is
// kustomize's one-time set-up (parsing its default transformer
// configuration), which every later build reuses.
func warmUp() {
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
	_, _ = krusty.MakeKustomizer(KustomizeOptions()).Run(fs, "/")
}
