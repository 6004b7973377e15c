package cli

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["sync"] = newSyncCmd
}

// syncFlags are `kdrift sync`'s flags.
type syncFlags struct {
	globalFlags
	prune  bool
	dryRun bool
	force  bool
	// owned syncs an app another GitOps engine owns.
	owned bool
	// confirmPrune lets --prune delete a large share of the app.
	confirmPrune bool
	// allowOlder applies a revision older than the one kdrift last
	// applied; reason is recorded with it.
	allowOlder bool
	reason     string
	lease      leaseFlags
	output     outputFlag
}

func (s *syncFlags) register(fs *flag.FlagSet) {
	s.globalFlags.register(fs)
	s.globalFlags.registerTimings(fs)
	fs.BoolVar(&s.prune, "prune", false, "also delete tracked objects Git no longer renders (never while frozen)")
	fs.BoolVar(&s.dryRun, "dry-run", false, "change nothing: show what the sync would apply and prune")
	fs.BoolVar(&s.force, "force", false, "sync even though the app is frozen, and overwrite resources and fields a resource or field freeze holds")
	fs.BoolVar(&s.owned, "owned", false, "sync an app Argo CD or Flux owns (its Application or Kustomization heals it; refused otherwise)")
	fs.BoolVar(&s.confirmPrune, "confirm-prune", false, "let --prune delete all of the app's objects or more than half of them (refused otherwise)")
	fs.BoolVar(&s.allowOlder, "allow-older", false, "apply a revision that does not contain the one kdrift last applied (a force-pushed or reset upstream, a stale mirror); needs --reason")
	fs.StringVar(&s.reason, "reason", "", "why the older revision is meant (with --allow-older; recorded on the app's AppStatus)")
	fs.StringVar(&s.lease.ns, "namespace", "", "namespace of the AppStatuses that keep each app's applied revision (default $"+EnvNamespace+", then kdrift)")
	s.output.register(fs)
}

func newSyncCmd(env *cliEnv) *cobra.Command {
	var f syncFlags
	cmd := &cobra.Command{
		Use:     "sync APP",
		GroupID: groupAct,
		Short:   "Apply Git to an app now",
		Long: `Apply what Git renders for APP to the cluster now, with Server-Side Apply
as field manager kdrift, and print what was applied and the app's status
after. --prune also deletes the objects kdrift applied earlier that Git no
longer renders; --dry-run prints the plan and changes nothing. A frozen app
is refused unless --force says so. Under a resource or field freeze
(kdrift freeze APP --resource …) the sync applies everything else and
lists what it left frozen; --force overwrites the frozen parts too. An app
another GitOps engine owns (an Argo CD Application or a Flux Kustomization)
is refused, naming the owner, unless --owned says so: kdrift never heals
such an app on its own. kdrift never applies a revision that does not
contain the one it last applied to the app (kept on the app's AppStatus):
when the upstream was force-pushed or reset, the sync is refused unless
--allow-older --reason "…" says the older state is meant; the reason and
who gave it are recorded there.`,
		Example: `  # preview, then apply
  kdrift sync render-prod --dry-run
  kdrift sync render-prod

  # apply and prune, although the app is frozen
  kdrift sync render-prod --prune --force`,
		Args:              argsExactly(1, "APP name (run `kdrift status` for the list)"),
		ValidArgsFunction: completeApps(&f.globalFlags, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runSync(cmd.Context(), env, &f, args[0]))
		},
	}
	f.register(cmd.Flags())
	registerCompletions(cmd, &f.globalFlags)
	return cmd
}

func runSync(ctx context.Context, env *cliEnv, f *syncFlags, name string) int {
	e, err := openEngine(ctx, &f.globalFlags, false, oneShot, name)
	defer func() { f.timer.write(env.stderr) }()
	if err != nil {
		return env.errorf("%v", err)
	}
	if f.reason != "" && !f.allowOlder {
		return env.errorf("--reason goes with --allow-older")
	}
	if f.allowOlder && strings.TrimSpace(f.reason) == "" {
		return env.errorf("--allow-older needs --reason \"…\": why the older revision is meant (it is recorded)")
	}
	if !f.dryRun {
		useMarks(e.Runner, e.RepoIdentity(), &f.globalFlags, f.lease.Namespace())
	}
	res, syncErr := e.Sync(ctx, name, engine.SyncOptions{Prune: f.prune, DryRun: f.dryRun, AllowFrozen: f.force, OverwriteFrozen: f.force, ConfirmPrune: f.confirmPrune, AllowOwned: f.owned,
		AllowOlder: f.allowOlder, OlderReason: f.reason, OlderBy: whoSyncs()})
	defer f.timer.step(phaseOutput, time.Now(), nil)
	if f.output.structured() {
		if err := f.output.write(env.stdout, res); err != nil {
			return env.errorf("write result: %v", err)
		}
	} else if f.dryRun {
		p := engine.PlanOf(res)
		p.App = name
		if err := report.Plan(env.stdout, p, syncErr); err != nil {
			return env.errorf("write plan: %v", err)
		}
	} else {
		fmt.Fprintf(env.stdout, "sync %s\n", name)
		for _, o := range res.Objects {
			line := fmt.Sprintf("  %-6s %s", o.Action, o.Ref)
			if len(o.Fields) > 0 {
				line += fmt.Sprintf(" %v", o.Fields)
			}
			if o.Error != "" {
				line += "  FAILED: " + o.Error
			}
			fmt.Fprintln(env.stdout, line)
		}
		report.LeftFrozen(env.stdout, res.LeftFrozen, "left")
		if len(res.Objects) == 0 && len(res.LeftFrozen) == 0 && syncErr == nil {
			fmt.Fprintln(env.stdout, "  nothing to do: in sync")
		}
		if syncErr == nil {
			if err := report.Status(env.stdout, []status.AppStatus{res.Status}, time.Now()); err != nil {
				return env.errorf("write status: %v", err)
			}
		}
	}
	if syncErr != nil {
		return env.errorf("%v", syncErr)
	}
	return exitOK
}

// useMarks makes a sync read and write the apps' applied revisions on the
// AppStatuses of the home cluster when it serves them, as the healer
// does (r keeps them, on the AppStatuses of repository identity id);
// without them the sync knows only what it applies itself.
func useMarks(r engine.Runner, id string, g *globalFlags, ns string) {
	cs, dyn, err := homeClients(g)
	if err != nil {
		return
	}
	if ok, err := publish.Served(cs); err != nil || !ok {
		return
	}
	r.SetMarks(publish.NewMarks(dyn, ns, id))
}

// whoSyncs is who an --allow-older is recorded for: $KDRIFT_AUTHOR, else
// the OS user.
func whoSyncs() string {
	if a := os.Getenv("KDRIFT_AUTHOR"); a != "" {
		return a
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
