package cli

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/keymap"
)

// engineUse says what a command opens an engine for.
type engineUse int

const (
	// oneShot compares (or syncs) once and exits: renders are kept on
	// disk between runs (render.DefaultCacheDir), and the cluster is
	// reached while Git is read (engine.Runner.Warm).
	oneShot engineUse = iota
	// terminal is the UI: renders are kept on disk; the cluster is not
	// reached ahead, since the terminal may follow a leader and compare
	// nothing itself.
	terminal
	// headless is kdrift controller: renders stay in memory, as long as
	// the process (its Pod's cache volume holds the clone).
	headless
)

// openEngine builds an engine from the global flags for use, with the age
// identities sops itself would find (SOPS_AGE_KEY, SOPS_AGE_KEY_FILE,
// ~/.config/sops/age/keys.txt) for SOPS-encrypted files.
func openEngine(ctx context.Context, g *globalFlags, readOnly bool, use engineUse, apps ...string) (*engine.Engine, error) {
	start := time.Now()
	if g.timings && g.timer == nil {
		g.timer = newTimings()
		g.timer.step(phaseStartup, processStart, nil)
	}
	keys, err := sops.LoadKeyring(os.Getenv)
	if err != nil {
		return nil, err
	}
	opts := engine.Options{
		Repo:        g.repo,
		Branch:      g.branch,
		Kubeconfig:  g.kubeconfig,
		Context:     g.context,
		Apps:        apps,
		ClusterPath: g.clusterPath,
		ChartRepos:  g.chartRepos,
		ReadOnly:    readOnly,
		Keys:        keys,
		Observer:    g.observer,
		MayWrite:    g.mayWrite,
		Serves:      g.serves,
		// Discovery is kept on disk between runs, as kubectl keeps it: a
		// one-shot command then asks the apiserver only for its objects.
		Live: live.Options{DiscoveryCacheDir: live.DefaultDiscoveryCacheDir()},
	}
	if g.timer != nil && opts.Observer == nil {
		opts.Observer = g.timer
	}
	if use != headless {
		// So are renders: the same command on the same commit skips
		// kustomize and Helm; and what finding the apps rendered, by
		// tree hash, so a one-app command renders no other app.
		opts.RenderCacheDir = render.DefaultCacheDir()
		if opts.RenderCacheDir != "" {
			opts.DiscoverCacheDir = filepath.Join(filepath.Dir(opts.RenderCacheDir), "discover")
			opts.ChartCacheDir = filepath.Join(filepath.Dir(opts.RenderCacheDir), "charts")
		}
	}
	if use == oneShot && readOnly {
		// Commands run one after another (status, then diff) fetch
		// once; --timings says when a fetch was skipped. A sync, which
		// applies what it read, always fetches.
		opts.FetchFresh = oneShotFetchFresh
	}
	// The command's own reads of the cluster (the leader's published
	// statuses) share the engine's connection.
	opts.Clients = engine.NewClients(opts)
	g.clients = opts.Clients
	e, err := engine.New(opts)
	g.timer.step(phaseOpen, start, err)
	if err != nil {
		return nil, err
	}
	g.timer.opened(e.RepoInfo)
	if use != terminal {
		// kustomize's set-up (without a disk cache) and the cluster's
		// connection, version check and discovery run while Git is read.
		e.Warm(ctx)
	}
	return e, nil
}

// oneShotFetchFresh is how recent a fetch of the same remote lets a
// one-shot command skip its own: a few seconds, so commands typed one
// after another, or a script's loop, fetch once, while a push made a
// moment ago by someone else is seen on the next command.
const oneShotFetchFresh = 5 * time.Second

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
