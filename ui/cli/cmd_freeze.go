package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
)

func init() {
	commands["freeze"] = command{summary: "stop self-heal and prune of apps, with a reason committed to Git", run: runFreeze}
	commands["unfreeze"] = command{summary: "lift the freeze of apps, with a reason committed to Git", run: runUnfreeze}
}

func runFreeze(ctx context.Context, env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("freeze", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "Usage: kdrift freeze APP... --reason TEXT [--for DURATION | --until RFC3339]\n       kdrift freeze --all [--selector k=v,...] --reason TEXT\n       kdrift freeze APP --extend DURATION --reason TEXT")
		fs.PrintDefaults()
	}
	var af actionFlags
	af.register(fs)
	reason := fs.String("reason", "", "why (required; recorded in the commit and in spec.freeze.reason)")
	forD := fs.Duration("for", 0, "end the freeze after this long (e.g. 4h)")
	until := fs.String("until", "", "end the freeze at this time (RFC 3339, e.g. 2026-12-02T19:00:00Z)")
	extend := fs.Duration("extend", 0, "move the end of an existing freeze by this long")
	all := fs.Bool("all", false, "freeze every app (matching --selector)")
	selector := fs.String("selector", "", "with --all: only apps whose labels match k=v[,k=v]")
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	if *extend != 0 && (*forD != 0 || *until != "" || *all) {
		return env.errorf("--extend moves an existing freeze; it takes APP names only, not --for, --until or --all")
	}
	var untilT *time.Time
	if *until != "" {
		t, err := time.Parse(time.RFC3339, *until)
		if err != nil {
			return env.errorf("--until %q: want an RFC 3339 time such as 2026-12-02T19:00:00Z", *until)
		}
		untilT = &t
	}
	repo, err := af.open(ctx)
	if err != nil {
		return env.errorf("%v", err)
	}
	var res actions.Result
	what := "freeze"
	if *extend != 0 {
		what = "extend"
		res, err = repo.Extend(ctx, actions.ExtendRequest{Apps: fs.Args(), By: *extend, Reason: *reason})
	} else {
		res, err = repo.Freeze(ctx, actions.FreezeRequest{
			Selection: actions.Selection{Apps: fs.Args(), All: *all, Selector: *selector},
			Reason:    *reason, For: *forD, Until: untilT,
		})
	}
	if err != nil {
		return env.errorf("%s: %v", what, err)
	}
	return printResult(env, &af, what+" "+strings.Join(res.Apps, ","), res)
}

func runUnfreeze(ctx context.Context, env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("unfreeze", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "Usage: kdrift unfreeze APP... --reason TEXT\n       kdrift unfreeze --all [--selector k=v,...] --reason TEXT")
		fs.PrintDefaults()
	}
	var af actionFlags
	af.register(fs)
	reason := fs.String("reason", "", "why (required; recorded in the commit)")
	all := fs.Bool("all", false, "unfreeze every frozen app (matching --selector)")
	selector := fs.String("selector", "", "with --all: only apps whose labels match k=v[,k=v]")
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	repo, err := af.open(ctx)
	if err != nil {
		return env.errorf("%v", err)
	}
	res, err := repo.Unfreeze(ctx, actions.UnfreezeRequest{Selection: actions.Selection{Apps: fs.Args(), All: *all, Selector: *selector}, Reason: *reason})
	if err != nil {
		return env.errorf("unfreeze: %v", err)
	}
	return printResult(env, &af, "unfreeze "+strings.Join(res.Apps, ","), res)
}
