package cli

import (
	"context"
	"fmt"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["audit"] = command{summary: "list kdrift's recorded actions (from Git), newest first", run: runAudit}
}

func runAudit(ctx context.Context, env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "Usage: kdrift audit [APP] [-o text|json] [--limit N]")
		fs.PrintDefaults()
	}
	var g globalFlags
	g.register(fs)
	output := fs.StringP("output", "o", "text", "output format: text or json")
	limit := fs.Int("limit", 0, "show at most this many entries (0: all)")
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return env.errorf("audit takes at most one APP; got %d arguments", fs.NArg())
	}
	if *output != "text" && *output != "json" {
		return env.errorf("-o %s: want text or json", *output)
	}
	repo, err := actions.Open(ctx, actions.RepoOptions{Repo: g.repo, Branch: g.branch})
	if err != nil {
		return env.errorf("%v", err)
	}
	entries, err := repo.Audit(ctx, actions.AuditOptions{App: fs.Arg(0), Limit: *limit})
	if err != nil {
		return env.errorf("audit: %v", err)
	}
	if entries == nil {
		entries = []actions.AuditEntry{}
	}
	if *output == "json" {
		err = report.WriteJSON(env.stdout, entries)
	} else {
		err = report.WriteAuditTable(env.stdout, entries)
	}
	if err != nil {
		return env.errorf("writing output failed: %v", err)
	}
	return exitOK
}
