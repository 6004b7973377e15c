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
