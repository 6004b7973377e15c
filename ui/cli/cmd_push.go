package cli

import (
	"context"
	"fmt"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["push"] = command{summary: "push kdrift commits left local (never forced)", run: runPush}
}

func runPush(ctx context.Context, env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "Usage: kdrift push [-o text|json]")
		fs.PrintDefaults()
	}
	var g globalFlags
	g.register(fs)
	output := fs.StringP("output", "o", "text", "output format: text or json")
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return env.errorf("push takes no arguments")
	}
	repo, err := actions.Open(ctx, actions.RepoOptions{Repo: g.repo, Branch: g.branch})
	if err != nil {
		return env.errorf("%v", err)
	}
	res, err := repo.Push(ctx)
	if err != nil {
		return env.errorf("push: %v", err)
	}
	if *output == "json" {
		if err := report.WriteJSON(env.stdout, res); err != nil {
			return env.errorf("writing output failed: %v", err)
		}
	}
	if !res.Pushed {
		return env.errorf("push: nothing pushed: %s; the commits stay local", res.PushError)
	}
	if *output != "json" {
		fmt.Fprintf(env.stdout, "push: %s is at %s on %s\n", res.Branch, res.Commit[:12], res.Upstream)
	}
	return exitOK
}
