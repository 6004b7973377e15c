package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"kdrift.dev/kdrift/engine/actions"
)

func init() {
	commands["push"] = newPushCmd
}

func newPushCmd(env *cliEnv) *cobra.Command {
	var g globalFlags
	var o outputFlag
	cmd := &cobra.Command{
		Use:     "push",
		GroupID: groupAct,
		Short:   "Push kdrift commits left local (never forced)",
		Long: `Push the action commits a failed push left local to the branch's upstream.
If the upstream moved on, kdrift re-applies its own unpushed actions on top
of it; it never force-pushes and never publishes a person's own unpushed
commits. Exit 2 when nothing could be pushed.`,
		Example: `  # after the remote is reachable again
  kdrift push

  # in a script
  kdrift push -o json --repo ~/src/gitops`,
		Args:              argsExactly(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runPush(cmd.Context(), env, &g, &o))
		},
	}
	g.register(cmd.Flags())
	o.register(cmd.Flags())
	registerCompletions(cmd, &g)
	return cmd
}

func runPush(ctx context.Context, env *cliEnv, g *globalFlags, o *outputFlag) int {
	repo, err := actions.Open(ctx, actions.RepoOptions{Repo: g.repo, Branch: g.branch})
	if err != nil {
		return env.errorf("%v", err)
	}
	res, err := repo.Push(ctx)
	if err != nil {
		return env.errorf("push: %v", err)
	}
	if o.structured() {
		if err := o.write(env.stdout, res); err != nil {
			return env.errorf("writing output failed: %v", err)
		}
	}
	if res.Refused != nil {
		env.errorf("push: the remote refused it: %s; the commits stay local and are in force nowhere", res.Refused.Error())
		return exitRefused
	}
	if !res.Pushed {
		return env.errorf("push: nothing pushed: %s; the commits stay local", res.PushError)
	}
	if !o.structured() {
		fmt.Fprintf(env.stdout, "push: %s is at %s on %s\n", res.Branch, res.Commit[:12], res.Upstream)
	}
	return exitOK
}
