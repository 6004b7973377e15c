package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["sync"] = command{summary: "apply Git to an app now (--prune deletes tracked objects that left Git, --dry-run shows the plan)", run: runSync}
}

func runSync(ctx context.Context, env *cliEnv, args []string) int {
	var g globalFlags
	fs := flag.NewFlagSet("kdrift sync APP", flag.ContinueOnError)
	g.register(fs)
	prune := fs.Bool("prune", false, "also delete tracked objects Git no longer renders (never while frozen)")
	dryRun := fs.Bool("dry-run", false, "change nothing: show what the sync would apply and prune")
	force := fs.Bool("force", false, "sync even though the app is frozen")
	confirmPrune := fs.Bool("confirm-prune", false, "let --prune delete all of the app's objects or more than half of them (refused otherwise)")
	output := fs.StringP("output", "o", "text", "output format: text or json")
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return env.errorf("sync takes one APP name")
	}
	name := fs.Arg(0)
	e, err := openEngine(&g, false, name)
	if err != nil {
		return env.errorf("%v", err)
	}
	res, syncErr := e.Sync(ctx, name, engine.SyncOptions{Prune: *prune, DryRun: *dryRun, AllowFrozen: *force, ConfirmPrune: *confirmPrune})
	if *output == "json" {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return env.errorf("write result: %v", err)
		}
	} else {
		verb := ""
		if *dryRun {
			verb = " (dry run: nothing changed)"
		}
		fmt.Fprintf(env.stdout, "sync %s%s\n", name, verb)
		for _, o := range res.Objects {
			line := fmt.Sprintf("  %-6s %s", o.Action, o.Ref)
			if len(o.Fields) > 0 {
				line += fmt.Sprintf(" %v", o.Fields)
			}
			if o.Error != "" {
				line += "  FAILED: " + o.Error
			}
			fmt.Fprintln(env.stdout, line)
		}
		if res.PruneRefused != nil && *dryRun {
			fmt.Fprintf(env.stdout, "  %v\n", res.PruneRefused)
		}
		if len(res.Objects) == 0 && syncErr == nil {
			fmt.Fprintln(env.stdout, "  nothing to do: in sync")
		}
		if !*dryRun && syncErr == nil {
			if err := report.Status(env.stdout, []status.AppStatus{res.Status}, time.Now()); err != nil {
				return env.errorf("write status: %v", err)
			}
		}
	}
	if syncErr != nil {
		return env.errorf("%v", syncErr)
	}
	return exitOK
}
