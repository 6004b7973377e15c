package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["status"] = newStatusCmd
}

func newStatusCmd(env *cliEnv) *cobra.Command {
	var g globalFlags
	var o outputFlag
	var f followFlags
	var ff forgeFlags
	cmd := &cobra.Command{
		Use:     "status [APP...]",
		GroupID: groupLook,
		Short:   "List apps with sync, health, self-heal state and drifted objects",
		Long: `List the apps of the repository (or only the APPs named) with their sync
state, health, self-heal state (on, off or frozen, with who froze them and
why) and how many objects drifted. kdrift reads committed Git, compares it
with the cluster once, and prints; it changes nothing. When the repository's
leader (kdrift controller) publishes fresh statuses, kdrift prints those
instead, without comparing, and says whom it follows on stderr; --live
compares from here anyway.

-o json and -o yaml print {"apps": [AppSummary...]}, sorted by name (see
README's "JSON output").

With a forge token (--forge-token-file, or the environment as for
revert --propose), each App's open pull requests from kdrift's branches
are listed under the table (pullRequests in -o json), until they merge.`,
		Example: `  # every app of the repository in the current folder
  kdrift status

  # two apps, as JSON, on another repository
  kdrift status render-prod tts-prod -o json --repo ~/src/gitops`,
		ValidArgsFunction: completeApps(&g, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runStatus(cmd.Context(), env, &g, &o, &f, &ff, args))
		},
	}
	g.register(cmd.Flags())
	g.registerTimings(cmd.Flags())
	o.register(cmd.Flags())
	f.register(cmd.Flags())
	ff.register(cmd.Flags())
	registerCompletions(cmd, &g)
	return cmd
}

func runStatus(ctx context.Context, env *cliEnv, g *globalFlags, o *outputFlag, f *followFlags, ff *forgeFlags, names []string) int {
	oneShotGC()
	e, err := openEngine(ctx, g, true, oneShot, names...)
	defer func() { g.timer.write(env.stderr) }()
	if err != nil {
		return env.errorf("%v", err)
	}
	var apps []status.AppStatus
	var refused []string
	pub, note, published := readPublished(ctx, g, f, e.RepoInfo, names)
	if published {
		fmt.Fprintln(env.stderr, "kdrift: "+note)
		for _, p := range pub {
			apps = append(apps, p.AppStatus)
		}
	} else {
		if err := e.Reconcile(ctx, names...); err != nil {
			return env.errorf("%v", err)
		}
		apps = e.Apps()
		for _, f := range e.Channel().Refused {
			refused = append(refused, f.Error())
			fmt.Fprintln(env.stderr, "kdrift: "+f.Error())
		}
		if fc := e.FluxCluster(); fc != "" {
			fmt.Fprintln(env.stderr, "kdrift: "+fc)
		}
		if src := e.AppSource(); strings.Contains(src, "Argo CD") || strings.Contains(src, "live Flux") {
			fmt.Fprintln(env.stderr, "kdrift: "+src)
		}
	}
	doc := report.Summarize(apps)
	doc.ChannelRefused = refused
	if len(apps) == 0 && len(names) == 0 && !published {
		doc.NoApps = report.NoApps(e.NoApps())
	}
	prs, note := openRequests(ctx, g, ff)
	doc.AttachRequests(prs)
	doc.PullRequestsNote = note
	if note != "" {
		fmt.Fprintln(env.stderr, "kdrift: "+note)
	}
	out := time.Now()
	if o.structured() {
		err = o.write(env.stdout, doc)
	} else if err = report.Status(env.stdout, apps, time.Now()); err == nil {
		if err = report.WriteNoApps(env.stdout, doc.NoApps); err == nil {
			err = report.WriteRequests(env.stdout, doc)
		}
	}
	g.timer.step(phaseOutput, out, err)
	if err != nil {
		return env.errorf("write status: %v", err)
	}
	return exitOK
}
