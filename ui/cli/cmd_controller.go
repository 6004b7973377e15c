package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	ctrl "kdrift.dev/kdrift/controller"
	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/internal/memlimit"
)

func init() {
	commands["controller"] = newControllerCmd
}

func newControllerCmd(env *cliEnv) *cobra.Command {
	var g globalFlags
	var dec decryptionFlags
	var of ctrl.Flags
	var lf leaseFlags
	var shards int
	cmd := &cobra.Command{
		Use:     "controller [APP...]",
		GroupID: groupRun,
		Short:   "Run the engine headless until SIGTERM, writing every event as one JSON line",
		Long: `Run kdrift's engine without the UI: it compares, heals and prunes as the
Apps say (all of them, or only the APPs named) until SIGTERM or SIGINT, and
writes every event as one JSON object per line on stdout, with sorted keys
and at least time, type and app (see README's "JSON output"). This is what
deploy/ runs in a cluster.

Only one kdrift heals a repository on a cluster: the holder of the
repository's Lease in --namespace (default kdrift). Another controller waits
as a hot standby (it compares, it never writes) and takes over within
--lease-duration when the leader dies. The leader publishes each App's
status as an AppStatus object (kubectl get appstatuses -n kdrift). The
namespace and the AppStatus CRD are created when the credentials allow;
otherwise kdrift says what to apply.

For fleets one process cannot serve, --shards N splits the Apps into N
shards by a stable hash of their names, each with its own Lease: run the
same command in several replicas of one Deployment, and each holds a fair
share of the shards (the shards divided by the live replicas), compares,
heals and publishes only their Apps, and takes over a dead replica's
shards within --lease-duration. Every replica must run the same --shards.
An attached terminal follows every shard's published statuses.`,
		Example: `  # every app of a remote repository, events to a file
  kdrift controller --repo https://git.example.com/org/gitops.git > events.jsonl

  # two apps, only the heals
  kdrift controller render-prod tts-prod | jq -c 'select(.type == "Healed")'

  # one of 3 replicas sharing 6 shards (deploy/components/shards)
  kdrift controller --repo https://git.example.com/org/gitops.git --shards 6`,
		ValidArgsFunction: completeApps(&g, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runController(cmd.Context(), env, &g, &dec, &of, &lf, shards, args))
		},
	}
	g.register(cmd.Flags())
	lf.register(cmd.Flags())
	cmd.Flags().IntVar(&shards, "shards", 1, fmt.Sprintf("split the Apps into this many shards, each with its own Lease, shared among the replicas that run with the same number (1: one healer for all; at most %d)", leader.MaxShards))
	dec.register(cmd.Flags())
	of.Register(cmd.Flags())
	registerCompletions(cmd, &g)
	return cmd
}

func runController(ctx context.Context, env *cliEnv, g *globalFlags, dec *decryptionFlags, of *ctrl.Flags, lf *leaseFlags, shards int, apps []string) int {
	if err := lf.settings.Validate(); err != nil {
		return env.errorf("%v", err)
	}
	if shards < 1 || shards > leader.MaxShards {
		return env.errorf("--shards %d: give a number from 1 (one healer for every App) to %d", shards, leader.MaxShards)
	}
	log, closeLog, err := controllerLog(g, of, env)
	if err != nil {
		return env.errorf("%v", err)
	}
	defer closeLog()
	ctrl.RouteLibraryLogs(log)
	// A long-lived process in a Pod: the collector is told the
	// container's limit (ARCHITECTURE.md, "Memory of a long-lived process").
	log.Info("runtime memory", "setting", memlimit.Apply(memlimit.DefaultOptions()).String())
	gate := &leader.Gate{}
	if shards > 1 {
		gate.Sharded()
		g.serves = gate.Serves
	}
	ops := ctrl.New(ctrl.Options{MetricsAddr: of.MetricsAddr, Kubeconfig: g.kubeconfig, Context: g.context, Leading: gate.Leads, Log: log})
	g.observer = ops.Observer()
	g.mayWrite = gate.Open
	e, err := openEngine(ctx, g, false, headless, apps...)
	if err != nil {
		return env.errorf("%v", err)
	}
	cs, dyn, err := homeClients(g)
	if err != nil {
		return env.errorf("%v", err)
	}
	err = ctrl.Run(ctx, ctrl.RunOptions{
		Engine: e, Ops: ops, Gate: gate, Client: cs, Dynamic: dyn, Namespace: lf.Namespace(), Lease: lf.settings,
		LoadKeys: func(ctx context.Context) error {
			return dec.loadDecryptionKeys(ctx, e, func(err error) { log.Error("decryption keys", "err", err) })
		},
		Shards: shards, Apps: apps, Events: env.stdout, Log: log,
	})
	switch {
	case errors.Is(err, ctrl.ErrUnwritableEvent):
		return exitError
	case err != nil:
		return env.errorf("%v", err)
	}
	return exitOK
}

// controllerLog opens the controller's log: --log-file when given, else
// stderr, at --log-level in --log-format.
func controllerLog(g *globalFlags, of *ctrl.Flags, env *cliEnv) (*slog.Logger, func(), error) {
	var w io.Writer = env.stderr
	closeLog := func() {}
	if g.logFile != "" {
		f, err := os.OpenFile(g.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("log file %s cannot be opened: %w", g.logFile, err)
		}
		w = f
		closeLog = func() {
			if err := f.Close(); err != nil {
				fmt.Fprintf(env.stderr, "kdrift: log file %s: %v\n", g.logFile, err)
			}
		}
	}
	log, err := ctrl.NewLogger(w, of.LogLevel, of.LogFormat)
	if err != nil {
		closeLog()
		return nil, nil, err
	}
	return log, closeLog, nil
}
