package cli

import (
	"context"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["diff"] = command{summary: "show an app's drifted fields with desired value, live value and owner (exit 0 in sync, 1 drift, 2 error)", run: runDiff}
}

func runDiff(ctx context.Context, env *cliEnv, args []string) int {
	var g globalFlags
	fs := flag.NewFlagSet("kdrift diff APP", flag.ContinueOnError)
	g.register(fs)
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return env.errorf("diff takes one APP name; run `kdrift status` for the list")
	}
	name := fs.Arg(0)
	e, err := openEngine(&g, true, name)
	if err != nil {
		return env.errorf("%v", err)
	}
	if err := e.Reconcile(ctx, name); err != nil {
		return env.errorf("%v", err)
	}
	a, _ := e.App(name)
	if err := report.Diff(env.stdout, a); err != nil {
		return env.errorf("write diff: %v", err)
	}
	switch a.Sync {
	case status.SyncSynced:
		return exitOK
	case status.SyncOutOfSync:
		return exitDrift
	}
	if a.Error != "" {
		return env.errorf("app %s: %s", name, a.Error)
	}
	return env.errorf("app %s: some objects could not be compared (see above)", name)
}
