package cli

import (
	"context"
	"fmt"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/ui/report"
)

// actionFlags are the flags every committing command takes besides the
// global ones.
type actionFlags struct {
	globalFlags
	author string
	output string
}

func (a *actionFlags) register(fs *flag.FlagSet) {
	a.globalFlags.register(fs)
	fs.StringVar(&a.author, "author", "", "record the action as \"Name <email>\" (default: $KDRIFT_AUTHOR, then git config user.name/user.email)")
	fs.StringVarP(&a.output, "output", "o", "text", "output format: text or json")
}

func (a *actionFlags) open(ctx context.Context) (*actions.Repo, error) {
	if a.output != "text" && a.output != "json" {
		return nil, fmt.Errorf("-o %s: want text or json", a.output)
	}
	return actions.Open(ctx, actions.RepoOptions{Repo: a.repo, Branch: a.branch, Author: a.author})
}

// printResult reports a committing action: the summary on stdout (or the
// Result as JSON), and a push failure also on stderr. The commit exists, so
// the exit code is 0 either way.
func printResult(env *cliEnv, a *actionFlags, what string, res actions.Result) int {
	if a.output == "json" {
		if err := report.WriteJSON(env.stdout, res); err != nil {
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
