package render

import (
	"fmt"
	"time"
)

// Options are the budgets of one render: what a repository's documents may
// cost the process. A zero field takes its default.
type Options struct {
	// MaxFileBytes bounds one file read by a render. Default 4 MiB: the
	// largest Kubernetes object the apiserver stores is about 1.5 MiB.
	MaxFileBytes int64
	// MaxRenderBytes bounds what one render reads in total and, separately,
	// the size of what it produces (as JSON). Default 64 MiB.
	MaxRenderBytes int64
	// MaxAliasNodes bounds, per YAML document, how many nodes alias
	// expansion (*name) may add; a self-referencing anchor is refused
	// whatever the bound. Default 10,000, far above shared container specs
	// and far below a "billion laughs".
	MaxAliasNodes int
	// MaxDepth bounds how deeply a YAML or JSON document nests, aliases
	// expanded. Default 200: the deepest CRD schemas nest about 60 levels.
	MaxDepth int
	// MaxFileNodes bounds the YAML or JSON nodes of one file or one
	// rendered manifest, counted from its text before any parser builds
	// one (an upper bound: a plain scalar that goes on over lines counts
	// once per line). Default 200,000: 4 MiB of CustomResourceDefinitions
	// count about 130,000, and a yaml.v3 tree of 200,000 nodes takes
	// about 32 MiB (50 MiB allocated) while it is checked.
	MaxFileNodes int
	// MaxRenderNodes bounds the nodes, aliases expanded, that the parent
	// decodes for one render: what it reads and, separately, what it
	// renders (every object a render worker sends back, every template's
	// output). Default 500,000: about 15 MiB of manifests, far above the
	// largest charts, and what a render decodes of it stays within
	// about 100 MiB.
	MaxRenderNodes int
	// MaxScalarBytes bounds the bytes of the values (strings, numbers,
	// keys) that the parent decodes for one render, aliases expanded:
	// what it reads and, separately, what it renders. Default 12 MiB: the
	// parent keeps each value in the cached objects and passes it through
	// several copies (YAML to JSON to objects, the copy a caller gets, the
	// disk cache), and parsing a large value leaves several times its size
	// in garbage; 16 MiB of 4 MiB values took the parent 230 MB above a
	// trivial repository. The render worker's own reads stay within
	// MaxRenderBytes.
	MaxScalarBytes int64
	// MaxMemoryBytes bounds the resident memory of the render worker
	// running one kustomize build, Helm chart or Jsonnet file: past it
	// the worker is killed and the render fails. Default 256 MiB.
	MaxMemoryBytes int64
	// Timeout bounds the wall time of one render, waiting for another
	// kustomize build included. Default 30s.
	Timeout time.Duration
}

// Default budgets; see Options.
const (
	DefaultMaxFileBytes   = 4 << 20
	DefaultMaxRenderBytes = 64 << 20
	DefaultMaxAliasNodes  = 10_000
	DefaultMaxDepth       = 200
	DefaultMaxFileNodes   = 200_000
	DefaultMaxRenderNodes = 500_000
	DefaultMaxScalarBytes = 12 << 20
	DefaultTimeout        = 30 * time.Second
	DefaultMaxMemoryBytes = 256 << 20
)

// DefaultOptions returns the default budgets.
func DefaultOptions() Options {
	return Options{
		MaxFileBytes:   DefaultMaxFileBytes,
		MaxRenderBytes: DefaultMaxRenderBytes,
		MaxAliasNodes:  DefaultMaxAliasNodes,
		MaxDepth:       DefaultMaxDepth,
		MaxFileNodes:   DefaultMaxFileNodes,
		MaxRenderNodes: DefaultMaxRenderNodes,
		MaxScalarBytes: DefaultMaxScalarBytes,
		Timeout:        DefaultTimeout,
		MaxMemoryBytes: DefaultMaxMemoryBytes,
	}
}

// withDefaults fills zero fields with their defaults.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = d.MaxFileBytes
	}
	if o.MaxRenderBytes <= 0 {
		o.MaxRenderBytes = d.MaxRenderBytes
	}
	if o.MaxAliasNodes <= 0 {
		o.MaxAliasNodes = d.MaxAliasNodes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = d.MaxDepth
	}
	if o.MaxFileNodes <= 0 {
		o.MaxFileNodes = d.MaxFileNodes
	}
	if o.MaxRenderNodes <= 0 {
		o.MaxRenderNodes = d.MaxRenderNodes
	}
	if o.MaxScalarBytes <= 0 {
		o.MaxScalarBytes = d.MaxScalarBytes
	}
	if o.MaxMemoryBytes <= 0 {
		o.MaxMemoryBytes = d.MaxMemoryBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	return o
}

// LimitError is a render refused because it went past a budget.
type LimitError struct {
	// File is the file (relative to the repository root) that went past
	// the limit; empty for the render as a whole.
	File string
	// Limit names the budget: "file size", "rendered size", "read size",
	// "alias expansion", "recursive alias", "nesting depth", "nodes" (a
	// file's or a render's), "scalar bytes", "time", "memory" (a render worker's), or for
	// Helm templates "template loop" and "template depth", for Jsonnet
	// "jsonnet stack".
	Limit string
	// Detail says by how much.
	Detail string
}

// Error renders `FILE: LIMIT limit: DETAIL; FIX`.
func (e *LimitError) Error() string {
	s := e.Limit + " limit: " + e.Detail
	if e.Limit == "recursive alias" {
		s = "recursive alias refused: " + e.Detail
	}
	if e.File != "" {
		s = e.File + ": " + s
	}
	return s + "; kdrift refuses documents that could exhaust it (see Security in README)"
}

func limitf(file, limit, format string, args ...any) *LimitError {
	return &LimitError{File: file, Limit: limit, Detail: fmt.Sprintf(format, args...)}
}
