package cli

import (
	"context"
	"time"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["status"] = command{summary: "list apps with sync, health, self-heal state and drifted objects", run: runStatus}
}

func runStatus(ctx context.Context, env *cliEnv, args []string) int {
	var g globalFlags
	fs := flag.NewFlagSet("kdrift status [APP...]", flag.ContinueOnError)
	g.register(fs)
	output := fs.StringP("output", "o", "text", "output format: text or json")
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	if *output != "text" && *output != "json" {
		return env.errorf("-o %q: use text or json", *output)
	}
	e, err := openEngine(&g, true, fs.Args()...)
	if err != nil {
		return env.errorf("%v", err)
	}
	if err := e.Reconcile(ctx, fs.Args()...); err != nil {
		return env.errorf("%v", err)
	}
	apps := e.Apps()
	if *output == "json" {
		err = report.StatusJSON(env.stdout, apps)
	} else {
		err = report.Status(env.stdout, apps, time.Now())
	}
	if err != nil {
		return env.errorf("write status: %v", err)
	}
	return exitOK
}
