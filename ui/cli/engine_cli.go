package cli

import (
	"os"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/sops"
)

// openEngine builds an engine from the global flags, with the age
// identities sops itself would find (SOPS_AGE_KEY, SOPS_AGE_KEY_FILE,
// ~/.config/sops/age/keys.txt) for SOPS-encrypted files.
func openEngine(g *globalFlags, readOnly bool, apps ...string) (*engine.Engine, error) {
	keys, err := sops.LoadKeyring(os.Getenv)
	if err != nil {
		return nil, err
	}
	return engine.New(engine.Options{
		Repo:       g.repo,
		Branch:     g.branch,
		Kubeconfig: g.kubeconfig,
		Context:    g.context,
		Apps:       apps,
		ReadOnly:   readOnly,
		Keys:       keys,
	})
}
