package cli

import (
	"kdrift.dev/kdrift/engine/engine"
)

// openEngine builds an engine from the global flags.
func openEngine(g *globalFlags, readOnly bool, apps ...string) (*engine.Engine, error) {
	return engine.New(engine.Options{
		Repo:       g.repo,
		Branch:     g.branch,
		Kubeconfig: g.kubeconfig,
		Context:    g.context,
		Apps:       apps,
		ReadOnly:   readOnly,
		Observer:   g.observer,
	})
}
