package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["ignore"] = newIgnoreCmd
}

// ignoreFlags are `kdrift ignore`'s flags.
type ignoreFlags struct {
	actionFlags
	proposeFlags
	rule   app.IgnoreRule
	reason string
}

func (f *ignoreFlags) register(fs *flag.FlagSet) {
	f.actionFlags.register(fs)
	f.proposeFlags.register(fs)
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
apiserver keeps it.

When the branch is protected (the remote refuses the push, or --propose),
the commit goes to the branch kdrift/ignore-APP-HASH (HASH: of the rule, so
the same ignore updates the same branch) and a pull request is opened with
the forge's API when a token is configured.`,
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
	f.actionFlags.propose = f.proposeFlags.propose
	repo, err := f.open(ctx)
	if err != nil {
		return env.errorf("%v", err)
	}
	res, err := f.act(ctx, repo, func(repo *actions.Repo) (actions.Result, error) {
		return repo.Ignore(ctx, actions.IgnoreRequest{App: name, Rule: f.rule, Reason: f.reason, Typed: true})
	})
	if err != nil {
		return env.errorf("ignore: %v", err)
	}
	if f.proposeFlags.proposing(res) {
		// The branch is named for the rule as resolved and the app by
		// its own name, so the same ignore typed another way (a short
		// kind, NAMESPACE/NAME) updates the same request.
		rule, appName := f.rule, name
		if res.Rule != nil {
			rule = *res.Rule
		}
		if len(res.Apps) == 1 {
			appName = res.Apps[0]
		}
		branch := actions.ProposalBranch("ignore", appName, ruleHash(rule))
		preview := func() string {
			var b bytes.Buffer
			fmt.Fprintf(&b, "App %s ignores %s: once merged, kdrift neither shows these fields as drift nor heals them.\n\n", appName, actions.DescribeRule(rule))
			diffs, err := repo.CommitDiff(res.Commit)
			if err != nil {
				return b.String() + "diff unavailable: " + err.Error()
			}
			if err := report.WriteFileDiffs(&b, diffs); err != nil {
				return b.String() + "diff unavailable: " + err.Error()
			}
			return b.String()
		}
		return proposeResult(ctx, env, &f.actionFlags, &f.proposeFlags, repo, "ignore "+name, res, branch, f.reason, "What the ignore changes", preview)
	}
	return printResult(env, &f.actionFlags, "ignore "+name, res)
}

// ruleHash is a short hash of an ignore rule as resolved, the order of
// its pointers and managers aside: the same ignore names the same
// proposal branch.
func ruleHash(r app.IgnoreRule) string {
	for _, l := range []*[]string{&r.JSONPointers, &r.ManagedFieldsManagers, &r.JQPathExpressions} {
		*l = slices.Sorted(slices.Values(*l))
	}
	b, _ := json.Marshal(r)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}
