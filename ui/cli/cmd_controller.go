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
)

func init() {
	commands["controller"] = newControllerCmd
}

func newControllerCmd(env *cliEnv) *cobra.Command {
	var g globalFlags
	var dec decryptionFlags
	var of ctrl.Flags
	var lf leaseFlags
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
otherwise kdrift says what to apply.`,
		Example: `  # every app of a remote repository, events to a file
  kdrift controller --repo https://git.example.com/org/gitops.git > events.jsonl

  # two apps, only the heals
  kdrift controller render-prod tts-prod | jq -c 'select(.type == "Healed")'`,
		ValidArgsFunction: completeApps(&g, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runController(cmd.Context(), env, &g, &dec, &of, &lf, args))
		},
	}
	g.register(cmd.Flags())
	lf.register(cmd.Flags())
	dec.register(cmd.Flags())
	of.Register(cmd.Flags())
	registerCompletions(cmd, &g)
	return cmd
}

func runController(ctx context.Context, env *cliEnv, g *globalFlags, dec *decryptionFlags, of *ctrl.Flags, lf *leaseFlags, apps []string) int {
	if err := lf.settings.Validate(); err != nil {
		return env.errorf("%v", err)
	}
	log, closeLog, err := controllerLog(g, of, env)
	if err != nil {
		return env.errorf("%v", err)
	}
	defer closeLog()
	ctrl.RouteLibraryLogs(log)
	gate := &leader.Gate{}
	ops := ctrl.New(ctrl.Options{MetricsAddr: of.MetricsAddr, Kubeconfig: g.kubeconfig, Context: g.context, Leading: gate.Open, Log: log})
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
		Apps: apps, Events: env.stdout, Log: log,
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
