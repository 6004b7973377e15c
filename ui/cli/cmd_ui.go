package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/healer"
	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/ui"
	"kdrift.dev/kdrift/ui/backend"
)

func init() {
	commands["ui"] = newUICmd
}

// uiFlags are the UI's own flags, beside the global ones.
type uiFlags struct {
	readonly bool
	config   string
	author   string
	follow   followFlags
	forge    forgeFlags
}

func (u *uiFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&u.readonly, "readonly", false, "disable every key that changes the cluster or Git (also readonly: true in the config file)")
	fs.StringVar(&u.config, "config", "", "config file (default: $XDG_CONFIG_HOME/kdrift/config.yaml or ~/.config/kdrift/config.yaml)")
	fs.StringVar(&u.author, "author", "", "record actions as \"Name <email>\" (default: $KDRIFT_AUTHOR, then git config)")
	u.follow.lease.registerNamespace(fs)
	u.forge.register(fs)
	fs.BoolVar(&u.follow.live, "live", false, "compare from this terminal even when the repository's leader publishes its statuses (this terminal still heals only if it holds the Lease)")
}

func newUICmd(env *cliEnv) *cobra.Command {
	var g globalFlags
	var u uiFlags
	cmd := &cobra.Command{
		Use:     "ui",
		GroupID: groupRun,
		Short:   "The terminal UI (the default when no command is given)",
		Long: `Start the terminal UI: the apps and their drift, kept up to date in the
background, with the diff, ownership and history views and the actions (sync,
freeze, unfreeze, revert, ignore) on keys; ? shows them all. "kdrift ui" and
"kdrift" alone are the same. --readonly disables every key that changes the
cluster or Git.`,
		Example: `  # the UI on the repository in the current folder
  kdrift ui

  # read only, one context, a log file to look at afterwards
  kdrift ui --readonly --context prod --log-file /tmp/kdrift.log`,
		Args:              argsExactly(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runUI(cmd.Context(), env, &g, &u))
		},
	}
	g.register(cmd.Flags())
	u.register(cmd.Flags())
	registerCompletions(cmd, &g)
	return cmd
}

func runUI(ctx context.Context, env *cliEnv, g *globalFlags, u *uiFlags) int {
	if !term.IsTerminal(int(os.Stdin.Fd())) || !term.IsTerminal(int(os.Stdout.Fd())) {
		return env.errorf("the UI needs a terminal; for scripts use `kdrift status`, `kdrift diff APP` or `kdrift controller`")
	}
	readonly, err := uiReadOnly(u.readonly, u.config)
	if err != nil {
		return env.errorf("%v", err)
	}
	gate := &leader.Gate{}
	g.mayWrite = gate.Open
	e, err := openEngine(ctx, g, readonly, terminal)
	if err != nil {
		return env.errorf("%v", err)
	}
	opts := actions.RepoOptions{Repo: g.repo, Branch: g.branch, Author: u.author, ClusterPath: g.clusterPath}
	fg, note := uiForge(g, &u.forge)
	if note != "" {
		fmt.Fprintln(env.stderr, "kdrift: "+note)
	}
	uopts := ui.Options{Readonly: readonly, LogFile: g.logFile, ConfigPath: u.config, NoColor: env.colorOff(), Forge: fg}
	ns := u.follow.lease.Namespace()
	nudge := func(res actions.Result) string {
		r, err := actions.Open(ctx, opts)
		if err != nil {
			return "not told: " + err.Error()
		}
		return tellLeader(g, ns, r, res)
	}
	cs, dyn, cerr := homeClients(g)
	if cerr == nil && !u.follow.live && g.context == "" {
		actx, stopFollowing := context.WithCancel(ctx)
		defer stopFollowing()
		if be, follow, ok := attach(actx, cs, dyn, ns, e, opts, nudge); ok {
			sw := backend.NewSwitch(be)
			h := &handover{e: e, gate: gate, cs: cs, dyn: dyn, ns: ns, readonly: readonly, opts: opts, nudge: nudge, follow: follow, sw: sw}
			h.start(actx)
			uiErr := ui.Run(ctx, sw, uopts)
			// The engine (if the leader went) stops after its last write,
			// then the Lease is released; only then the backends close.
			engErr := h.stop()
			sw.Close()
			if uiErr != nil {
				return env.errorf("%v", uiErr)
			}
			if engErr != nil {
				return env.errorf("%v", engErr)
			}
			return exitOK
		}
	}
	role := func() string { return "not healing: no cluster to hold the Lease in" }
	if cerr == nil && !readonly {
		var stop func()
		role, stop = candidate(ctx, cs, dyn, ns, e, gate)
		// Runs after runEngineUI returned: the engine wrote its last write
		// before the Lease is released.
		defer stop()
	} else if readonly {
		role = func() string { return "" }
	}
	if err := runEngineUI(ctx, e, opts, uopts, role, nudge); err != nil {
		return env.errorf("%v", err)
	}
	return exitOK
}

// uiEngine is the engine as the UI's wiring uses it: the backends'
// (backend.Reconciler), a healer candidate's (healer.Engine) and the
// repository identity the leader is found by.
type uiEngine interface {
	engine.Runner
	engine.Reader
	engine.Actor
	engine.RepoInfo
}

// attach follows the repository's leader when one is live and the cluster
// serves AppStatus: the UI shows the published statuses and compares
// nothing in the background. The Follower says when the leader is gone.
func attach(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, ns string, e uiEngine, opts actions.RepoOptions, nudge func(actions.Result) string) (*backend.Attached, *leader.Follower, bool) {
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if served, err := publish.Served(cs); err != nil || !served {
		return nil, nil, false
	}
	obs, err := leader.Observe(octx, cs, ns, e.RepoIdentity())
	if err != nil || !obs.Live(time.Now()) {
		return nil, nil, false
	}
	follow := leader.Follow(ctx, cs, ns, e.RepoIdentity(), obs)
	role := func() string {
		o := follow.Current()
		select {
		case <-follow.Gone():
			// The hand-over announces itself at once; this shows only
			// in between.
			return fmt.Sprintf("leader %s/%s gone", o.Namespace, o.Holder)
		default:
		}
		if o.Shards > 1 {
			return fmt.Sprintf("following a controller of %d shards (%s/%s since %s)", o.Shards, o.Namespace, o.Holder, o.Since.Local().Format("15:04"))
		}
		return fmt.Sprintf("following %s/%s, leader since %s", o.Namespace, o.Holder, o.Since.Local().Format("15:04"))
	}
	refresh := func() {
		go publish.Nudge(context.WithoutCancel(ctx), cs, dyn, ns, e.RepoIdentity(), "refresh", nil)
	}
	be, err := backend.NewAttached(ctx, e, opts, publish.NewWatcher(dyn, ns, e.RepoIdentity()), role, refresh)
	if err != nil {
		return nil, nil, false
	}
	be.SetLeader(role, nudge)
	return be, follow, true
}

// candidate makes this terminal a candidate for the repository's Lease:
// it heals only while it holds it. The namespace and the CRD are created
// when the person's credentials allow; otherwise the terminal does not
// heal, and the role says why.
func candidate(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, ns string, e healer.Engine, gate *leader.Gate) (role func() string, stop func()) {
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := publish.Ensure(ectx, cs, dyn, ns); err != nil {
		msg := "not healing: no Lease (" + err.Error() + ")"
		var setup *publish.SetupError
		if errors.As(err, &setup) {
			msg = "not healing: " + strings.Join(setup.Missing, " and ") + " missing; run: " + setup.Command
		}
		return func() string { return msg }, func() {}
	}
	hctx, stopHealer := context.WithCancel(context.WithoutCancel(ctx))
	h, err := healer.Start(hctx, healer.Options{Engine: e, Gate: gate, Client: cs, Dynamic: dyn, Namespace: ns})
	if err != nil {
		stopHealer()
		msg := "not healing: " + err.Error()
		return func() string { return msg }, func() {}
	}
	stop = func() {
		stopHealer()
		h.Wait()
	}
	var mu sync.Mutex
	var cur leader.Observation
	go leader.Watch(hctx, cs, ns, e.RepoIdentity(), func(o leader.Observation) {
		mu.Lock()
		cur = o
		mu.Unlock()
	})
	return func() string {
		if h.Leading() {
			return "healing from this terminal"
		}
		mu.Lock()
		o := cur
		mu.Unlock()
		if o.Live(time.Now()) {
			return fmt.Sprintf("standby: %s/%s heals", o.Namespace, o.Holder)
		}
		return "not healing yet: taking the Lease"
	}, stop
}

// runEngineUI runs the engine in the background and the UI in front until
// the UI quits or ctx ends; then it stops the engine and waits for it.
func runEngineUI(ctx context.Context, e backend.Reconciler, actionOpts actions.RepoOptions, opts ui.Options, role func() string, nudge func(actions.Result) string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	be := backend.NewEngine(e, actionOpts)
	be.SetLeader(role, nudge)
	defer be.Close()
	engineDone := make(chan error, 1)
	go func() { engineDone <- e.Run(ctx) }()
	uiErr := ui.Run(ctx, be, opts)
	cancel()
	engErr := <-engineDone
	if engErr != nil && !errors.Is(engErr, context.Canceled) {
		if uiErr == nil {
			return fmt.Errorf("engine: %w", engErr)
		}
	}
	return uiErr
}
