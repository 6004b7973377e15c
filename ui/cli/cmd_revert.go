package cli

import (
	"context"
	"fmt"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["revert"] = command{summary: "commit the undoing of a commit (like git revert), with a reason", run: runRevert}
}

func runRevert(ctx context.Context, env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("revert", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "Usage: kdrift revert COMMIT --reason TEXT [--mainline N] [--preview]")
		fs.PrintDefaults()
	}
	var af actionFlags
	af.register(fs)
	reason := fs.String("reason", "", "why (required; recorded in the commit)")
	mainline := fs.IntP("mainline", "m", 0, "for a merge commit: the parent (1-based) whose side to keep, as git revert -m")
	preview := fs.Bool("preview", false, "print what the revert would change, commit nothing")
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return env.errorf("revert takes one COMMIT; got %d arguments", fs.NArg())
	}
	repo, err := af.open(ctx)
	if err != nil {
		return env.errorf("%v", err)
	}
	req := actions.RevertRequest{Commit: fs.Arg(0), Mainline: *mainline, Reason: *reason}
	if *preview {
		diffs, err := repo.RevertPreview(ctx, req)
		if err != nil {
			return env.errorf("revert %s: %v", fs.Arg(0), err)
		}
		if af.output == "json" {
			err = report.WriteJSON(env.stdout, diffs)
		} else {
			err = report.WriteRevertPreview(env.stdout, diffs)
		}
		if err != nil {
			return env.errorf("writing output failed: %v", err)
		}
		return exitOK
	}
	res, err := repo.Revert(ctx, req)
	if err != nil {
		return env.errorf("revert %s: %v", fs.Arg(0), err)
	}
	return printResult(env, &af, "revert "+fs.Arg(0), res)
}
