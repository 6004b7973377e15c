package cli

import (
	"context"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/app"
)

func init() {
	commands["ignore"] = newIgnoreCmd
}

// ignoreFlags are `kdrift ignore`'s flags.
type ignoreFlags struct {
	actionFlags
	rule   app.IgnoreRule
	reason string
}

func (f *ignoreFlags) register(fs *flag.FlagSet) {
	f.actionFlags.register(fs)
	fs.StringVar(&f.rule.Kind, "kind", "", "kind of object the rule covers (required)")
	fs.StringVar(&f.rule.Group, "group", "", "API group (empty: any)")
	fs.StringVar(&f.rule.Name, "name", "", "object name (empty: any)")
	fs.StringVarP(&f.rule.Namespace, "namespace", "n", "", "object namespace (empty: any)")
	fs.StringArrayVar(&f.rule.JSONPointers, "json-pointer", nil, "field to ignore, as an RFC 6901 JSON pointer (repeatable)")
	fs.StringArrayVar(&f.rule.ManagedFieldsManagers, "manager", nil, "field manager whose fields Git does not own (repeatable)")
	fs.StringVar(&f.reason, "reason", "", "why (required; recorded in the commit)")
}

func newIgnoreCmd(env *cliEnv) *cobra.Command {
	var f ignoreFlags
	cmd := &cobra.Command{
		Use:     "ignore APP --kind K [--group G] [--name N] [-n NS] (--json-pointer P | --manager M)... --reason TEXT",
		GroupID: groupAct,
		Short:   "Add an ignoreDifferences rule to an app, with a reason",
		Long: `Add an ignoreDifferences rule to APP's App file in one commit, and push it:
the fields it covers (by JSON pointer, or every field a manager owns) are no
longer Git's, so kdrift neither shows them as drift nor heals them. If kdrift
alone owned such a field, it first hands the live value over, so the
apiserver keeps it.`,
		Example: `  # the HPA owns the render worker's replicas
  kdrift ignore render-prod --group apps --kind Deployment --name render-worker --json-pointer /spec/replicas --reason "HPA owns replicas"

  # a cloud controller owns these Service fields
  kdrift ignore tts-dev --kind Service -n tts --manager cloud-controller --reason "the LB pool is the cloud's"`,
		Args:              argsExactly(1, "APP"),
		ValidArgsFunction: completeApps(&f.globalFlags, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runIgnore(cmd.Context(), env, &f, args[0]))
		},
	}
	f.register(cmd.Flags())
	registerCompletions(cmd, &f.globalFlags)
	return cmd
}

func runIgnore(ctx context.Context, env *cliEnv, f *ignoreFlags, name string) int {
	repo, err := f.open(ctx)
	if err != nil {
		return env.errorf("%v", err)
	}
	res, err := repo.Ignore(ctx, actions.IgnoreRequest{App: name, Rule: f.rule, Reason: f.reason, Typed: true})
	if err != nil {
		return env.errorf("ignore: %v", err)
	}
	return printResult(env, &f.actionFlags, "ignore "+name, res)
}
