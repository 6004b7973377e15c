package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["diff"] = newDiffCmd
}

func newDiffCmd(env *cliEnv) *cobra.Command {
	var g globalFlags
	var o outputFlag
	var f followFlags
	cmd := &cobra.Command{
		Use:     "diff APP",
		GroupID: groupLook,
		Short:   "Show an app's drifted fields with desired value, live value and owner",
		Long: `Show each drifted object of APP: every changed field with the value Git
wants, the live value, and who wrote it (the field manager, its operation and
its class: person, controller, defaulted or kdrift), from
metadata.managedFields. kdrift compares once and changes nothing. When the
repository's leader (kdrift controller) publishes a fresh status of APP with
every drifted field, kdrift shows it without comparing and says whom it
follows on stderr; --live compares from here anyway.

The exit code follows kubectl diff: 0 in sync, 1 drift, 2 error.
-o json and -o yaml print the app's summary as in "kdrift status -o json".`,
		Example: `  # what drifted in staging, and who did it
  kdrift diff digital-human-staging

  # in a script: exit 1 means drift
  kdrift diff render-prod --repo ~/src/gitops || echo drifted`,
		Args:              argsExactly(1, "APP name (run `kdrift status` for the list)"),
		ValidArgsFunction: completeApps(&g, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runDiff(cmd.Context(), env, &g, &o, &f, args[0]))
		},
	}
	g.register(cmd.Flags())
	g.registerTimings(cmd.Flags())
	o.register(cmd.Flags())
	f.register(cmd.Flags())
	registerCompletions(cmd, &g)
	return cmd
}

func runDiff(ctx context.Context, env *cliEnv, g *globalFlags, o *outputFlag, f *followFlags, name string) int {
	oneShotGC()
	e, err := openEngine(ctx, g, true, oneShot, name)
	defer func() { g.timer.write(env.stderr) }()
	if err != nil {
		return env.errorf("%v", err)
	}
	var a status.AppStatus
	if apps, note, ok := readPublished(ctx, g, f, e.RepoInfo, []string{name}); ok && apps[0].Complete() {
		fmt.Fprintln(env.stderr, "kdrift: "+note)
		a = apps[0].AppStatus
	} else {
		if err := e.Reconcile(ctx, name); err != nil {
			return env.errorf("%v", err)
		}
		a, _ = e.App(name)
		if fc := e.FluxCluster(); fc != "" {
			fmt.Fprintln(env.stderr, "kdrift: "+fc)
		}
	}
	out := time.Now()
	if o.structured() {
		err = o.write(env.stdout, report.Summarize([]status.AppStatus{a}).Apps[0])
	} else {
		err = report.Diff(env.stdout, a)
	}
	g.timer.step(phaseOutput, out, err)
	if err != nil {
		return env.errorf("write diff: %v", err)
	}
	switch a.Sync {
	case status.SyncSynced:
		return exitOK
	case status.SyncOutOfSync:
		return exitDrift
	}
	if a.Error != "" {
		return env.errorf("app %s: %s", name, a.Error)
	}
	return env.errorf("app %s: some objects could not be compared (see above)", name)
}
