package cli

import (
	"context"
	"fmt"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/app"
)

func init() {
	commands["ignore"] = command{summary: "add an ignoreDifferences rule to an app, with a reason", run: runIgnore}
}

func runIgnore(ctx context.Context, env *cliEnv, args []string) int {
	fs := flag.NewFlagSet("ignore", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "Usage: kdrift ignore APP --kind K [--group G] [--name N] [--namespace NS] (--json-pointer P | --manager M) --reason TEXT")
		fs.PrintDefaults()
	}
	var af actionFlags
	af.register(fs)
	var rule app.IgnoreRule
	fs.StringVar(&rule.Kind, "kind", "", "kind of object the rule covers (required)")
	fs.StringVar(&rule.Group, "group", "", "API group (empty: any)")
	fs.StringVar(&rule.Name, "name", "", "object name (empty: any)")
	fs.StringVar(&rule.Namespace, "namespace", "", "object namespace (empty: any)")
	fs.StringArrayVar(&rule.JSONPointers, "json-pointer", nil, "field to ignore, as an RFC 6901 JSON pointer (repeatable)")
	fs.StringArrayVar(&rule.ManagedFieldsManagers, "manager", nil, "field manager whose fields Git does not own (repeatable)")
	reason := fs.String("reason", "", "why (required; recorded in the commit)")
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return env.errorf("ignore takes one APP; got %d arguments", fs.NArg())
	}
	repo, err := af.open(ctx)
	if err != nil {
		return env.errorf("%v", err)
	}
	res, err := repo.Ignore(ctx, actions.IgnoreRequest{App: fs.Arg(0), Rule: rule, Reason: *reason})
	if err != nil {
		return env.errorf("ignore: %v", err)
	}
	return printResult(env, &af, "ignore "+fs.Arg(0), res)
}
