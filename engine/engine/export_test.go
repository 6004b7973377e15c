package engine

import (
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/source"
)

// RepoOf is the repository e reads, for tests that change its Git
// configuration.
func RepoOf(e *Engine) *source.Repo { return e.Runner.(*core).repo }

// ClientSetOf is e's clients of a kubeconfig context, for tests that read
// the cluster through the engine's connection.
func ClientSetOf(e *Engine, context string) (*live.ClientSet, error) {
	return e.Runner.(*core).clients.For(context)
}
