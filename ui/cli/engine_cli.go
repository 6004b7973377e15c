package cli

import (
	"context"
	"os"
	"runtime/debug"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/keymap"
)

// openEngine builds an engine from the global flags, with the age
// identities sops itself would find (SOPS_AGE_KEY, SOPS_AGE_KEY_FILE,
// ~/.config/sops/age/keys.txt) for SOPS-encrypted files. keepRenders keeps
// renders on disk between runs (render.DefaultCacheDir): a person's
// commands and terminal, not the controller, whose Pod's cache volume
// holds its clone and whose renders live as long as it does.
func openEngine(ctx context.Context, g *globalFlags, readOnly, keepRenders bool, apps ...string) (*engine.Engine, error) {
	keys, err := sops.LoadKeyring(os.Getenv)
	if err != nil {
		return nil, err
	}
	opts := engine.Options{
		Repo:       g.repo,
		Branch:     g.branch,
		Kubeconfig: g.kubeconfig,
		Context:    g.context,
		Apps:       apps,
		ReadOnly:   readOnly,
		Keys:       keys,
		Observer:   g.observer,
		MayWrite:   g.mayWrite,
		// Discovery is kept on disk between runs, as kubectl keeps it: a
		// one-shot command then asks the apiserver only for its objects.
		Live: live.Options{DiscoveryCacheDir: live.DefaultDiscoveryCacheDir()},
	}
	if keepRenders {
		// So are renders: the same command on the same commit skips
		// kustomize and Helm.
		opts.RenderCacheDir = render.DefaultCacheDir()
	}
	e, err := engine.New(opts)
	if err != nil {
		return nil, err
	}
	// kustomize's set-up and the cluster's connection, version check and
	// discovery run while Git is read.
	e.Warm(ctx)
	return e, nil
}

// uiReadOnly says whether the UI runs read-only: the --readonly flag or
// `readonly: true` in the config file (configPath, or the default path).
// The answer goes to the engine as well as to the keys, so a read-only UI
// never writes to a cluster from any path.
func uiReadOnly(flag bool, configPath string) (bool, error) {
	if flag {
		return true, nil
	}
	path := configPath
	if path == "" {
		p, err := keymap.ConfigPath()
		if err != nil {
			return false, err
		}
		path = p
	}
	fc, err := keymap.LoadConfig(path)
	if err != nil {
		return false, err // it names the file
	}
	return fc.Readonly, nil
}

// oneShotGC lets the garbage collector run less often in a command that
// compares once and exits (diff, status, owners): most of what it
// allocates lives until it prints, so collecting at every doubling of the
// heap is mostly wasted work. The heap may grow to five times what is
// live, under a soft limit of 2 GiB. GOGC and GOMEMLIMIT, when set, win.
func oneShotGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(2 << 30)
	}
}
