package cli

import (
	"context"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["audit"] = newAuditCmd
}

// auditFlags are `kdrift audit`'s flags.
type auditFlags struct {
	globalFlags
	output outputFlag
	limit  int
}

func (a *auditFlags) register(fs *flag.FlagSet) {
	a.globalFlags.register(fs)
	a.output.register(fs)
	fs.IntVar(&a.limit, "limit", 0, "show at most this many entries (0: all)")
}

func newAuditCmd(env *cliEnv) *cobra.Command {
	var f auditFlags
	cmd := &cobra.Command{
		Use:     "audit [APP]",
		GroupID: groupLook,
		Short:   "List kdrift's recorded actions (from Git), newest first",
		Long: `List the actions people took with kdrift (freeze, unfreeze, extend, ignore,
revert), newest first, read back from the trailers of the commits that
recorded them: when, who, which apps, the commit and the reason. For a
freeze, whether it is still active, expired or lifted. Only Git is read.`,
		Example: `  # every action in the repository in the current folder
  kdrift audit

  # the last five actions on one app, as JSON
  kdrift audit render-prod --limit 5 -o json`,
		Args:              argsAtMost(1, "APP"),
		ValidArgsFunction: completeApps(&f.globalFlags, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			app := ""
			if len(args) == 1 {
				app = args[0]
			}
			return exit(runAudit(cmd.Context(), env, &f, app))
		},
	}
	f.register(cmd.Flags())
	registerCompletions(cmd, &f.globalFlags)
	return cmd
}

func runAudit(ctx context.Context, env *cliEnv, f *auditFlags, app string) int {
	repo, err := actions.Open(ctx, actions.RepoOptions{Repo: f.repo, Branch: f.branch})
	if err != nil {
		return env.errorf("%v", err)
	}
	entries, err := repo.Audit(ctx, actions.AuditOptions{App: app, Limit: f.limit})
	if err != nil {
		return env.errorf("audit: %v", err)
	}
	if entries == nil {
		entries = []actions.AuditEntry{}
	}
	if f.output.structured() {
		err = f.output.write(env.stdout, entries)
	} else {
		err = report.WriteAuditTable(env.stdout, entries)
	}
	if err != nil {
		return env.errorf("writing output failed: %v", err)
	}
	return exitOK
}
