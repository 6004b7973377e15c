package app_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

// BenchmarkDiscover measures discovery on a fleet repository of 200 Argo
// CD Applications and 200 app folders (three YAML files each), read from
// a fresh snapshot every time: the cost a new branch head pays once.
func BenchmarkDiscover(b *testing.B) {
	const n = 200
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("app-%03d", i)
		files["argocd/"+name+".yaml"] = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\n  namespace: argocd\nspec:\n  source:\n    repoURL: https://github.com/example/fleet\n    path: apps/" + name + "\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: " + name + "\n  syncPolicy:\n    automated: {selfHeal: true}\n"
		for j := range 3 {
			files[fmt.Sprintf("apps/%s/cm-%d.yaml", name, j)] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: \"1\"\n"
		}
	}
	repo := gittest.Init(b)
	repo.Git("remote", "add", "origin", "https://github.com/example/fleet.git")
	hash := repo.Commit("fleet", files)
	r, err := source.Open(context.Background(), source.Options{Location: repo.Dir})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		snap, err := source.SnapshotOf(r.Git(), plumbing.NewHash(hash))
		if err != nil {
			b.Fatal(err)
		}
		if res := snap.Apps(); len(res.Apps) != n || len(res.Invalid) != 0 {
			b.Fatalf("%d apps, %d invalid", len(res.Apps), len(res.Invalid))
		}
	}
}

// BenchmarkDiscoverAppSet measures discovery of the same 200-app fleet
// from one ApplicationSet (git directories): with fasttemplate, and with
// goTemplate, whose templates run in the render worker.
func BenchmarkDiscoverAppSet(b *testing.B) {
	for _, goTemplate := range []bool{false, true} {
		b.Run(fmt.Sprintf("goTemplate=%v", goTemplate), func(b *testing.B) {
			const n = 200
			name, path, opts := "'{{path.basename}}'", "'{{path}}'", ""
			if goTemplate {
				name, path, opts = "'{{.path.basename}}'", "'{{.path.path}}'", "  goTemplate: true\n  goTemplateOptions: [\"missingkey=error\"]\n"
			}
			files := map[string]string{"argocd/apps.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: apps, namespace: argocd}\nspec:\n" + opts +
				"  generators: [{git: {repoURL: https://github.com/example/fleet, revision: HEAD, directories: [{path: 'apps/*'}]}}]\n" +
				"  template:\n    metadata: {name: " + name + "}\n    spec:\n      source: {repoURL: https://github.com/example/fleet, path: " + path + "}\n      destination: {server: https://kubernetes.default.svc, namespace: " + name + "}\n"}
			for i := range n {
				for j := range 3 {
					files[fmt.Sprintf("apps/app-%03d/cm-%d.yaml", i, j)] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: \"1\"\n"
				}
			}
			repo := gittest.Init(b)
			repo.Git("remote", "add", "origin", "https://github.com/example/fleet.git")
			hash := repo.Commit("fleet", files)
			r, err := source.Open(context.Background(), source.Options{Location: repo.Dir})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				snap, err := source.SnapshotOf(r.Git(), plumbing.NewHash(hash))
				if err != nil {
					b.Fatal(err)
				}
				if res := snap.Apps(); len(res.Apps) != n || len(res.Invalid) != 0 {
					b.Fatalf("%d apps, %d invalid: %v", len(res.Apps), len(res.Invalid), res.Invalid)
				}
			}
		})
	}
}
