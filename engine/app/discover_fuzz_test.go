package app

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzDiscover: whatever a repository file holds, discovery returns (no
// panic, no runaway), each declaration is an App with an Origin or an
// Invalid entry whose error is an *Error, and the result is deterministic.
func FuzzDiscover(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  source: {repoURL: https://x/r, path: d}\n  destination: {name: in-cluster}\n  syncPolicy: {automated: {selfHeal: true}}\n  ignoreDifferences: [{jqPathExpressions: ['.spec.replicas']}]\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, annotations: {kdrift.dev/freeze-reason: r, kdrift.dev/freeze-at: bad}}\nspec: {source: {repoURL: https://x/r, path: d, helm: {valuesObject: {a: [1, {b: c}]}, parameters: [{name: x, value: y}]}}}\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec: {sources: [], source: 3, destination: [x]}\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  sources:\n  - {repoURL: https://x/r, path: d, helm: {valueFiles: [$v/d/cm.yaml, $w/x, $v]}}\n  - {repoURL: https://x/r.git, ref: v}\n  - {repoURL: https://h.example.com, chart: c, targetRevision: 1.x}\n",
		"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: g, namespace: n}\nspec: {url: https://x/r}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: k, namespace: n}\nspec: {sourceRef: {kind: GitRepository, name: g}, path: ./d, ignore: [{target: {kind: D}, jsonPointers: [/a]}], decryption: {provider: sops, secretRef: {name: s}}}\n",
		"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: k}\nspec: {sourceRef: {kind: GitRepository, name: missing}, ignore: 'x/*'}\n",
		"kind: Application\napiVersion: argoproj.io/v1alpha1\nmetadata: &a {name: *a}\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: [x]}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		fsys := fstest.MapFS{
			"apps/a.yaml": {Data: []byte(data)},
			"d/cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")},
		}
		same := func(u string) bool { return strings.TrimSuffix(u, ".git") == "https://x/r" }
		res := Discover(fsys, DiscoverOptions{SameRepo: same})
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
		res2 := Discover(fsys, DiscoverOptions{SameRepo: same})
		if len(res.Apps) != len(res2.Apps) || len(res.Invalid) != len(res2.Invalid) {
			t.Fatal("Discover is not deterministic")
		}
	})
}
