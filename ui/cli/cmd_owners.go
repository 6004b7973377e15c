package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["owners"] = newOwnersCmd
}

// ownersFlags are `kdrift owners`'s flags.
type ownersFlags struct {
	globalFlags
	output  string
	kinds   []string
	all     bool
	orphans bool
	check   string
	// reviewedBy adds CODEOWNERS' owners to -o markdown.
	reviewedBy bool
}

func (o *ownersFlags) register(fs *flag.FlagSet) {
	o.globalFlags.register(fs)
	o.globalFlags.registerTimings(fs)
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json or markdown (a document to commit, such as OWNERSHIP.md)")
	if err := fs.SetAnnotation("output", outputFormatsAnnotation, []string{"table", "text", "json", "markdown"}); err != nil {
		panic(err) // only when the flag above is missing
	}
	fs.StringArrayVar(&o.kinds, "kind", nil, "only this kind, as KIND or KIND.GROUP (repeatable)")
	fs.BoolVar(&o.all, "all", false, "also list the fields only Git writes (folded into one line per kind by default)")
	fs.BoolVar(&o.orphans, "orphans", false, "list live objects in the apps' namespaces that no App renders and no controller made")
	fs.BoolVar(&o.reviewedBy, "reviewed-by", false, "with -o markdown: add a column with the code owners (CODEOWNERS at each App's revision) of the Apps whose objects have the field")
	fs.StringVar(&o.check, "check", "", "compare live ownership with this markdown document: exit 0 when it matches, 1 when a field has a writer it does not give")
}

func newOwnersCmd(env *cliEnv) *cobra.Command {
	var f ownersFlags
	cmd := &cobra.Command{
		Use:     "owners [APP...]",
		GroupID: groupLook,
		Short:   "Show who writes each field of the apps' objects, by kind",
		Long: `Build the field ownership table of the apps' objects (all apps by default)
from metadata.managedFields: one row per kind and field, each writer (Git,
a controller by manager name, a person, or defaulted) with how many objects
it holds the field in and when it last wrote, the ignore rules that cover
the field, and contested rows first. Fields only Git writes fold into one
line per kind unless --all.

--orphans lists live objects in the apps' namespaces that no App renders,
that no controller owns and that no controller created. -o markdown writes a
document to commit (OWNERSHIP.md); --check FILE compares the cluster with it
and exits 1 when a field has a writer the document does not give it.`,
		Example: `  # the table, contested fields first
  kdrift owners

  # keep it in Git and check it in CI
  kdrift owners -o markdown > OWNERSHIP.md
  kdrift owners --check OWNERSHIP.md

  # objects made by hand in the apps' namespaces
  kdrift owners --orphans`,
		ValidArgsFunction: completeApps(&f.globalFlags, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runOwners(cmd.Context(), env, &f, args))
		},
	}
	f.register(cmd.Flags())
	registerCompletions(cmd, &f.globalFlags)
	return cmd
}

func runOwners(ctx context.Context, env *cliEnv, f *ownersFlags, names []string) int {
	g := &f.globalFlags
	output, kinds, all, orphans, check := &f.output, &f.kinds, &f.all, &f.orphans, &f.check
	if *output == "text" {
		*output = "table"
	}
	switch *output {
	case "table", "json", "markdown":
	default:
		return env.errorf("-o %q: use table, json or markdown", *output)
	}
	if *orphans && *check != "" {
		return env.errorf("--orphans and --check do not go together; run them one at a time")
	}
	if f.reviewedBy && *output != "markdown" {
		return env.errorf("--reviewed-by adds a column to -o markdown; add -o markdown")
	}
	if f.reviewedBy && localRepo(g) == nil {
		return env.errorf("--reviewed-by reads CODEOWNERS from a local clone; pass --repo with a folder, not a URL")
	}
	if *orphans && *output == "markdown" {
		return env.errorf("--orphans writes table or json, not markdown")
	}
	opts := diff.OwnerMapOptions{All: *all}
	for _, k := range *kinds {
		f, err := diff.ParseKindFilter(k)
		if err != nil {
			return env.errorf("--kind: %v", err)
		}
		opts.Kinds = append(opts.Kinds, f)
	}
	var doc report.OwnershipDoc
	if *check != "" {
		f, err := os.Open(*check)
		if err != nil {
			return env.errorf("--check: %v; write it first with `kdrift owners -o markdown > %s`", err, *check)
		}
		doc, err = report.ParseOwnership(f)
		f.Close()
		if err != nil {
			var de *report.DocError
			if errors.As(err, &de) {
				return env.errorf("--check %s: %v; regenerate it with `kdrift owners -o markdown`", *check, err)
			}
			return env.errorf("--check %s: %v", *check, err)
		}
	}
	// Orphans need every app compared: an object another app renders is
	// not an orphan.
	var limit []string
	if !*orphans {
		limit = names
	}
	oneShotGC()
	e, err := openEngine(ctx, g, true, oneShot, limit...)
	defer func() { g.timer.write(env.stderr) }()
	if err != nil {
		return env.errorf("%v", err)
	}
	if err := e.Reconcile(ctx, limit...); err != nil {
		return env.errorf("%v", err)
	}
	if len(names) == 0 {
		// An empty map or list says why on stderr; stdout keeps its format.
		if err := report.WriteNoApps(env.stderr, report.NoApps(e.NoApps())); err != nil {
			return env.errorf("write stderr: %v", err)
		}
	}
	now := time.Now()
	// The ownership table is built from the compared objects, then
	// printed: both count as output.
	defer g.timer.step(phaseOutput, now, nil)
	if *orphans {
		list, err := e.Orphans(ctx, names...)
		if err != nil {
			return env.errorf("%v", err)
		}
		if *output == "json" {
			err = report.OrphansJSON(env.stdout, list)
		} else {
			err = report.OrphansTable(env.stdout, list, now)
		}
		if err != nil {
			return env.errorf("write orphans: %v", err)
		}
		return exitOK
	}
	m, err := e.Owners(ctx, opts, names...)
	if err != nil {
		return env.errorf("%v", err)
	}
	if *check != "" {
		vs := report.CheckOwnership(doc, m)
		if *output == "json" {
			if vs == nil {
				vs = []report.Violation{}
			}
			err = report.WriteJSON(env.stdout, struct {
				Violations []report.Violation `json:"violations"`
			}{vs})
		} else {
			err = report.Violations(env.stdout, vs, *check)
		}
		if err != nil {
			return env.errorf("write check: %v", err)
		}
		for _, e := range m.Errors {
			fmt.Fprintf(env.stderr, "kdrift: %s\n", e)
		}
		if len(vs) > 0 {
			return exitDrift
		}
		if len(m.Errors) > 0 {
			return exitError
		}
		return exitOK
	}
	switch *output {
	case "json":
		err = report.OwnersJSON(env.stdout, m)
	case "markdown":
		var reviewedBy func(string) []string
		if f.reviewedBy {
			if reviewedBy, err = appCodeOwners(g, e.Apps()); err != nil {
				return env.errorf("--reviewed-by: %v", err)
			}
		}
		err = report.OwnersMarkdown(env.stdout, m, reviewedBy)
	default:
		err = report.OwnersTable(env.stdout, m, now)
	}
	if err != nil {
		return env.errorf("write owners: %v", err)
	}
	return exitOK
}

// appCodeOwners gives, per App name, the code owners of its files at the
// revision compared. An App whose CODEOWNERS cannot be read fails the
// command: a column of reviewers that silently misses some would mislead.
func appCodeOwners(g *globalFlags, apps []status.AppStatus) (func(string) []string, error) {
	lookup := codeOwners(localRepo(g))
	byApp := map[string][]string{}
	for _, a := range apps {
		if a.Revision == "" {
			continue
		}
		owners, err := lookup(a)
		if err != nil {
			return nil, fmt.Errorf("App %s: %v", a.Name, err)
		}
		byApp[a.Name] = owners
	}
	return func(app string) []string { return byApp[app] }, nil
}
