package cli

import (
	"context"
	"fmt"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
)

// actionFlags are the flags every committing command takes besides the
// global ones.
type actionFlags struct {
	globalFlags
	author string
	output outputFlag
}

func (a *actionFlags) register(fs *flag.FlagSet) {
	a.globalFlags.register(fs)
	fs.StringVar(&a.author, "author", "", "record the action as \"Name <email>\" (default: $KDRIFT_AUTHOR, then git config user.name/user.email)")
	a.output.register(fs)
}

func (a *actionFlags) open(ctx context.Context) (*actions.Repo, error) {
	return actions.Open(ctx, actions.RepoOptions{Repo: a.repo, Branch: a.branch, Author: a.author})
}

// printResult reports a committing action: the summary on stdout (or the
// Result as JSON or YAML), and a push failure also on stderr. The commit
// exists, so the exit code is 0 either way.
func printResult(env *cliEnv, a *actionFlags, what string, res actions.Result) int {
	if a.output.structured() {
		if err := a.output.write(env.stdout, res); err != nil {
			return env.errorf("writing output failed: %v", err)
		}
	} else {
		fmt.Fprintf(env.stdout, "%s: %s\n", what, res.Summary())
	}
	if res.PushError != "" {
		fmt.Fprintf(env.stderr, "kdrift: warning: %s\n", res.Summary())
	}
	return exitOK
}
