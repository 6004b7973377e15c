package app

import (
	"errors"
	"testing"
)

// FuzzAppSet: whatever an ApplicationSet holds, discovery returns within
// its budgets, every generated declaration is an App with an Origin or an
// Invalid entry whose error is an *Error, and the result is deterministic.
func FuzzAppSet(f *testing.F) {
	for _, seed := range []string{
		"spec:\n  generators: [{git: {repoURL: https://git.example.com/team/gitops, directories: [{path: 'apps/*'}, {path: apps/excluded, exclude: true}]}}]\n  template: {metadata: {name: '{{path.basename}}'}, spec: {source: {repoURL: https://git.example.com/team/gitops, path: '{{path}}'}, destination: {namespace: '{{path[1]}}'}}}\n",
		"spec:\n  generators: [{matrix: {generators: [{git: {repoURL: https://git.example.com/team/gitops, files: [{path: 'clusters/**'}]}}, {list: {elements: [{app: guestbook}]}}]}}]\n  template: {metadata: {name: '{{app}}-{{cluster.name}}'}, spec: {source: {repoURL: https://git.example.com/team/gitops, path: 'apps/{{app}}'}}}\n",
		"spec:\n  generators: [{merge: {mergeKeys: [a], generators: [{list: {elements: [{a: 1}, {a: 2}]}}, {list: {elementsYaml: '[{a: 1, b: 2}]'}}]}, selector: {matchLabels: {a: '1'}}}]\n  template: {metadata: {name: 'x{{a}}'}, spec: {source: {repoURL: https://git.example.com/team/gitops, path: apps/guestbook}}}\n",
		"spec:\n  generators: [{clusters: {selector: {matchExpressions: [{key: env, operator: In, values: [prod]}]}, values: {v: '{{name}}'}}}]\n  template: {metadata: {name: '{{name}}'}, spec: {source: {repoURL: https://git.example.com/team/gitops, path: apps/guestbook}, destination: {server: '{{server}}'}}}\n",
		"spec:\n  goTemplate: true\n  generators: [{list: {elements: [{a: b}], template: {metadata: {name: over}}}}]\n  template: {metadata: {name: '{{.a}}'}, spec: {}}\n",
		"spec: {generators: [{matrix: {generators: [{matrix: {generators: [{matrix: {generators: [{list: {}}, {list: {}}]}}, {list: {}}]}}, {list: {}}]}}], template: {}}\n",
		"spec: {generators: [{scmProvider: {}}, {pullRequest: {}}], template: {metadata: {name: x}}}\n",
		"spec: {generators: 3, template: [x]}\n",
	} {
		f.Add("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s}\n" + seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		fsys := appSetRepo(data)
		res := Discover(fsys, DiscoverOptions{SameRepo: sameRepo})
		if len(res.Apps) > MaxAppSetApps {
			t.Fatalf("%d apps, past the budget", len(res.Apps))
		}
		for _, a := range res.Apps {
			if a.Origin == nil || a.Metadata.Name == "" {
				t.Fatalf("App %+v has no origin or name", a)
			}
		}
		for _, in := range res.Invalid {
			var e *Error
			if !errors.As(in.Err, &e) {
				t.Fatalf("invalid %+v: %T is not an *Error", in, in.Err)
			}
		}
		res2 := Discover(fsys, DiscoverOptions{SameRepo: sameRepo})
		if len(res.Apps) != len(res2.Apps) || len(res.Invalid) != len(res2.Invalid) {
			t.Fatal("Discover is not deterministic")
		}
	})
}
