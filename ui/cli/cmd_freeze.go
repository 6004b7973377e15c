package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/app"
)

func init() {
	commands["freeze"] = newFreezeCmd
	commands["unfreeze"] = newUnfreezeCmd
}

// freezeFlags are `kdrift freeze`'s flags.
type freezeFlags struct {
	actionFlags
	reason   string
	forD     time.Duration
	until    string
	extend   time.Duration
	all      bool
	selector string
	target   resourceFlags
}

// resourceFlags pick one object of an app and some of its fields, for
// resource and field freezes.
type resourceFlags struct {
	resource  string
	namespace string
	fields    []string
}

func (r *resourceFlags) register(fs *flag.FlagSet, verb string) {
	fs.StringVar(&r.resource, "resource", "", verb+" only this object of the app, KIND[.GROUP]/NAME (e.g. Deployment.apps/render-worker); the rest of the app keeps healing")
	fs.StringVar(&r.namespace, "namespace", "", "with --resource: the object's namespace (default: the app's destination namespace)")
	fs.StringArrayVar(&r.fields, "field", nil, "with --resource: "+verb+" only this field, a JSON pointer such as /spec/replicas (repeatable)")
}

// ref reads --resource and --namespace; ok is false when --resource is
// not given (--namespace and --field then are errors).
func (r *resourceFlags) ref() (app.ResourceQuery, bool, error) {
	if r.resource == "" {
		if r.namespace != "" || len(r.fields) > 0 {
			return app.ResourceQuery{}, false, fmt.Errorf("--namespace and --field go with --resource KIND[.GROUP]/NAME")
		}
		return app.ResourceQuery{}, false, nil
	}
	q, err := app.ParseResourceQuery(r.resource, r.namespace)
	return q, true, err
}

// oneApp is the single APP a resource or field freeze takes.
func oneApp(apps []string, all bool) (string, error) {
	if all || len(apps) != 1 {
		return "", fmt.Errorf("--resource freezes an object of one app: name exactly one APP (not --all)")
	}
	return apps[0], nil
}

func (f *freezeFlags) register(fs *flag.FlagSet) {
	f.actionFlags.register(fs)
	fs.StringVar(&f.reason, "reason", "", "why (required; recorded in the commit and in spec.freeze.reason)")
	fs.DurationVar(&f.forD, "for", 0, "end the freeze after this long (e.g. 4h)")
	fs.StringVar(&f.until, "until", "", "end the freeze at this time (RFC 3339, e.g. 2026-12-02T19:00:00Z)")
	fs.DurationVar(&f.extend, "extend", 0, "move the end of an existing freeze by this long")
	fs.BoolVar(&f.all, "all", false, "freeze every app (matching --selector)")
	fs.StringVar(&f.selector, "selector", "", "with --all: only apps whose labels match k=v[,k=v]")
	f.target.register(fs, "freeze")
}

func newFreezeCmd(env *cliEnv) *cobra.Command {
	var f freezeFlags
	cmd := &cobra.Command{
		Use:     "freeze (APP... | --all [--selector k=v,...] | APP --resource KIND[.GROUP]/NAME [--namespace NS] [--field POINTER]...) --reason TEXT [--for DURATION | --until RFC3339 | --extend DURATION]",
		GroupID: groupAct,
		Short:   "Stop self-heal and prune of apps, with a reason committed to Git",
		Long: `Freeze apps: one commit sets spec.freeze (reason, who, when, optionally
until) in their App files and is pushed. While an app is frozen, kdrift
neither heals nor prunes it; drift stays visible. A freeze whose --for or
--until has passed no longer counts. --all freezes a fleet (only the apps
whose labels match --selector, if given); --extend moves the end of an
existing freeze.

--resource freezes one object of the app instead, and --field only some
of its fields (JSON pointers): one commit adds an entry to spec.freezes
(resource, fields, reason, who, when, until). Self-heal leaves those
fields (or the whole object, which prune then never deletes) as they are
live, and gives up its ownership of them so the person's value stays,
while the rest of the app keeps healing; their drift stays visible,
marked frozen.`,
		Example: `  # keep a hand-scaled Deployment's replicas; everything else keeps healing
  kdrift freeze digital-human-staging --resource Deployment.apps/render-worker --field /spec/replicas --reason "INC-1002 scaled to 12 by hand" --for 4h

  # hold staging for an hour during an incident
  kdrift freeze digital-human-staging --reason "INC-1002 debugging the TTS gateway" --for 1h

  # every prod app, until a given time
  kdrift freeze --all --selector env=prod --reason "INC-7 change freeze" --until 2026-12-02T19:00:00Z

  # two more hours
  kdrift freeze digital-human-staging --extend 2h --reason "INC-1002 still open"`,
		ValidArgsFunction: completeApps(&f.globalFlags, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runFreeze(cmd.Context(), env, &f, args))
		},
	}
	f.register(cmd.Flags())
	registerCompletions(cmd, &f.globalFlags)
	return cmd
}

func runFreeze(ctx context.Context, env *cliEnv, f *freezeFlags, apps []string) int {
	ref, byResource, err := f.target.ref()
	if err != nil {
		return env.errorf("freeze: %v", err)
	}
	if byResource && (f.extend != 0 || f.selector != "") {
		return env.errorf("freeze: --resource takes one APP with --for or --until; not --extend or --selector")
	}
	if f.extend != 0 && (f.forD != 0 || f.until != "" || f.all) {
		return env.errorf("--extend moves an existing freeze; it takes APP names only, not --for, --until or --all")
	}
	var untilT *time.Time
	if f.until != "" {
		t, err := time.Parse(time.RFC3339, f.until)
		if err != nil {
			return env.errorf("--until %q: want an RFC 3339 time such as 2026-12-02T19:00:00Z", f.until)
		}
		untilT = &t
	}
	repo, err := f.open(ctx)
	if err != nil {
		return env.errorf("%v", err)
	}
	var res actions.Result
	what := "freeze"
	if byResource {
		name, err := oneApp(apps, f.all)
		if err != nil {
			return env.errorf("freeze: %v", err)
		}
		res, err = f.act(ctx, repo, func(repo *actions.Repo) (actions.Result, error) {
			return repo.FreezeResource(ctx, actions.ResourceFreezeRequest{App: name, Queries: []app.ResourceQuery{ref}, Fields: f.target.fields, Reason: f.reason, For: f.forD, Until: untilT})
		})
		if err != nil {
			return env.errorf("freeze: %v", err)
		}
		return printResult(env, &f.actionFlags, fmt.Sprintf("freeze %s %s%s", name, strings.Join(res.Resources, ","), fieldList(f.target.fields)), res)
	}
	if f.extend != 0 {
		what = "extend"
		res, err = f.act(ctx, repo, func(repo *actions.Repo) (actions.Result, error) {
			return repo.Extend(ctx, actions.ExtendRequest{Apps: apps, By: f.extend, Reason: f.reason})
		})
	} else {
		res, err = f.act(ctx, repo, func(repo *actions.Repo) (actions.Result, error) {
			return repo.Freeze(ctx, actions.FreezeRequest{
				Selection: actions.Selection{Apps: apps, All: f.all, Selector: f.selector},
				Reason:    f.reason, For: f.forD, Until: untilT,
			})
		})
	}
	if err != nil {
		return env.errorf("%s: %v", what, err)
	}
	return printResult(env, &f.actionFlags, what+" "+strings.Join(res.Apps, ","), res)
}

// unfreezeFlags are `kdrift unfreeze`'s flags.
type unfreezeFlags struct {
	actionFlags
	reason   string
	all      bool
	selector string
	target   resourceFlags
}

func (f *unfreezeFlags) register(fs *flag.FlagSet) {
	f.actionFlags.register(fs)
	f.target.register(fs, "unfreeze")
	fs.StringVar(&f.reason, "reason", "", "why (required; recorded in the commit)")
	fs.BoolVar(&f.all, "all", false, "unfreeze every frozen app (matching --selector)")
	fs.StringVar(&f.selector, "selector", "", "with --all: only apps whose labels match k=v[,k=v]")
}

func newUnfreezeCmd(env *cliEnv) *cobra.Command {
	var f unfreezeFlags
	cmd := &cobra.Command{
		Use:     "unfreeze (APP... | --all [--selector k=v,...] | APP --resource KIND[.GROUP]/NAME [--namespace NS] [--field POINTER]...) --reason TEXT",
		GroupID: groupAct,
		Short:   "Lift the freeze of apps, with a reason committed to Git",
		Long: `Lift the freeze of apps: one commit removes spec.freeze from their App files,
with its own reason, and is pushed. Self-heal and prune are on again as the
App says. --all lifts every freeze (only of the apps whose labels match
--selector, if given). --resource lifts the freezes of one object of the
app (with --field, only those fields): self-heal puts them back to Git.`,
		Example: `  # the hand-scaled replicas go back to Git
  kdrift unfreeze digital-human-staging --resource Deployment.apps/render-worker --field /spec/replicas --reason "INC-1002 fixed"

  # back to Git
  kdrift unfreeze digital-human-staging --reason "INC-1001 resolved"

  # every prod app
  kdrift unfreeze --all --selector env=prod --reason "INC-7 change freeze over"`,
		ValidArgsFunction: completeApps(&f.globalFlags, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runUnfreeze(cmd.Context(), env, &f, args))
		},
	}
	f.register(cmd.Flags())
	registerCompletions(cmd, &f.globalFlags)
	return cmd
}

func runUnfreeze(ctx context.Context, env *cliEnv, f *unfreezeFlags, apps []string) int {
	repo, err := f.open(ctx)
	if err != nil {
		return env.errorf("%v", err)
	}
	ref, byResource, err := f.target.ref()
	if err != nil {
		return env.errorf("unfreeze: %v", err)
	}
	if byResource {
		name, err := oneApp(apps, f.all)
		if err != nil {
			return env.errorf("unfreeze: %v", err)
		}
		res, err := f.act(ctx, repo, func(repo *actions.Repo) (actions.Result, error) {
			return repo.UnfreezeResource(ctx, actions.ResourceUnfreezeRequest{App: name, Query: &ref, Fields: f.target.fields, Reason: f.reason})
		})
		if err != nil {
			return env.errorf("unfreeze: %v", err)
		}
		return printResult(env, &f.actionFlags, fmt.Sprintf("unfreeze %s %s%s", name, strings.Join(res.Resources, ","), fieldList(f.target.fields)), res)
	}
	res, err := f.act(ctx, repo, func(repo *actions.Repo) (actions.Result, error) {
		return repo.Unfreeze(ctx, actions.UnfreezeRequest{Selection: actions.Selection{Apps: apps, All: f.all, Selector: f.selector}, Reason: f.reason})
	})
	if err != nil {
		return env.errorf("unfreeze: %v", err)
	}
	return printResult(env, &f.actionFlags, "unfreeze "+strings.Join(res.Apps, ","), res)
}

// fieldList is " [/spec/replicas …]", or "" for a whole resource.
func fieldList(fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	return " [" + strings.Join(fields, " ") + "]"
}
