package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["owners"] = command{summary: "the field ownership table of apps' objects: who writes each field (--orphans: objects nobody renders; --check FILE: exit 1 on a writer FILE does not give)", run: runOwners}
}

func runOwners(ctx context.Context, env *cliEnv, args []string) int {
	var g globalFlags
	fs := flag.NewFlagSet("kdrift owners [APP...]", flag.ContinueOnError)
	g.register(fs)
	output := fs.StringP("output", "o", "table", "output format: table, json or markdown (a document to commit, such as OWNERSHIP.md)")
	kinds := fs.StringArray("kind", nil, "only this kind, as KIND or KIND.GROUP (repeatable)")
	all := fs.Bool("all", false, "also list the fields only Git writes (folded into one line per kind by default)")
	orphans := fs.Bool("orphans", false, "list live objects in the apps' namespaces that no App renders and no controller made")
	check := fs.String("check", "", "compare live ownership with this markdown document: exit 0 when it matches, 1 when a field has a writer it does not give")
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	switch *output {
	case "table", "json", "markdown":
	default:
		return env.errorf("-o %q: use table, json or markdown", *output)
	}
	if *orphans && *check != "" {
		return env.errorf("--orphans and --check do not go together; run them one at a time")
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
	names := fs.Args()
	// Orphans need every app compared: an object another app renders is
	// not an orphan.
	var limit []string
	if !*orphans {
		limit = names
	}
	e, err := openEngine(&g, true, limit...)
	if err != nil {
		return env.errorf("%v", err)
	}
	if err := e.Reconcile(ctx, limit...); err != nil {
		return env.errorf("%v", err)
	}
	now := time.Now()
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
		err = report.OwnersMarkdown(env.stdout, m)
	default:
		err = report.OwnersTable(env.stdout, m, now)
	}
	if err != nil {
		return env.errorf("write owners: %v", err)
	}
	return exitOK
}
