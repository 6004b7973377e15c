package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/fluxtest"
	"kdrift.dev/kdrift/internal/gittest"
)

// discoveryOf describes a discovery result for comparison: every App as
// JSON (spec and origin) and every invalid declaration with its error.
func discoveryOf(t *testing.T, res app.LoadResult) string {
	t.Helper()
	out := ""
	for _, a := range res.Apps {
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintf("app %s origin %+v\n", b, a.Origin)
	}
	for _, inv := range res.Invalid {
		out += fmt.Sprintf("invalid %s %s: %v\n", inv.Name, inv.File, inv.Err)
	}
	return out
}

// TestDiscoverCacheSameResult: discovery that takes generated apps and
// marker-free folders from the cache (another Repo, as another process
// would, reading the same cache folder) finds exactly what discovery
// without a cache finds, before and after commits that change a
// generating app and another app.
func TestDiscoverCacheSameResult(t *testing.T) {
	t.Parallel()
	child := func(name, path string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\nspec:\n  source:\n    repoURL: https://github.com/example/gitops\n    path: " + path + "\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: x\n"
	}
	kdriftApp := func(name, path string) string {
		return "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: " + name + "\nspec:\n  path: " + path + "\n  destination:\n    namespace: x\n"
	}
	files := map[string]string{
		"bootstrap/root.yaml":          child("root", "apps-root"),
		"apps-root/kustomization.yaml": "namePrefix: prod-\nnamespace: argocd\nresources: [a.yaml]\n",
		"apps-root/a.yaml":             child("a", "guestbook"),
		"guestbook/cm.yaml":            cm,
	}
	for i := 0; i < 20; i++ {
		dir := fmt.Sprintf("plain/app-%02d", i)
		files[dir+"/kustomization.yaml"] = "resources: [cm.yaml]\n"
		files[dir+"/cm.yaml"] = cm
		files[fmt.Sprintf(".kdrift/app-%02d.yaml", i)] = kdriftApp(fmt.Sprintf("app-%02d", i), dir)
	}
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://github.com/example/gitops.git")
	cache := t.TempDir()
	discover := func(hash, cacheDir string) string {
		t.Helper()
		return discoverAt(t, repo, hash, cacheDir, nil)
	}
	commits := []map[string]string{
		files,
		// Another app changes.
		{"plain/app-03/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n"},
		// The generating app generates one more app.
		{"apps-root/kustomization.yaml": "namePrefix: prod-\nnamespace: argocd\nresources: [a.yaml, b.yaml]\n", "apps-root/b.yaml": child("b", "plain/app-01")},
		// A declaration appears in a folder that had none.
		{"plain/app-05/flux.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: c\nspec:\n  source:\n    repoURL: https://github.com/example/gitops\n    path: plain/app-05\n  destination:\n    namespace: x\n"},
	}
	cached := func() int {
		entries, err := os.ReadDir(cache)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	for i, change := range commits {
		hash := repo.Commit(fmt.Sprintf("change %d", i), change)
		want := discover(hash, "")
		if first := discover(hash, cache); first != want {
			t.Fatalf("commit %d: discovery filling the cache:\n%s\nwant (no cache):\n%s", i, first, want)
		}
		if cached() != 2 {
			t.Fatalf("commit %d: the cache folder holds %d files, want 2 (the discovery cache and its app lists)", i, cached())
		}
		if again := discover(hash, cache); again != want {
			t.Fatalf("commit %d: discovery from the cache:\n%s\nwant (no cache):\n%s", i, again, want)
		}
	}
}

// TestDiscoverCacheSameResultFluxLayout: in Flux's reference layout the
// HelmReleases are literal documents of a base that a Kustomization's
// render puts out again; discovery from the cache keeps or drops them
// exactly as discovery without it does.
func TestDiscoverCacheSameResultFluxLayout(t *testing.T) {
	t.Parallel()
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://github.com/example/fleet.git")
	hash := repo.Commit("layout", fluxtest.ReferenceLayout("https://github.com/example/fleet", "podinfo"))
	sameWithCache(t, repo, hash, &app.FluxCluster{Path: "clusters/production", From: "test"})
}

// TestDiscoverCacheSameResultLiteralAppSet: an ApplicationSet that a
// parent's kustomize render puts out unchanged is found the same way with
// the cache as without it.
func TestDiscoverCacheSameResultLiteralAppSet(t *testing.T) {
	t.Parallel()
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://github.com/example/gitops.git")
	hash := repo.Commit("appset", map[string]string{
		"bootstrap/root.yaml":          "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: root\n  namespace: argocd\nspec:\n  source:\n    repoURL: https://github.com/example/gitops\n    path: apps-root\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: argocd\n",
		"apps-root/kustomization.yaml": "resources: [set.yaml]\n",
		"apps-root/set.yaml":           "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: guestbooks\n  namespace: argocd\nspec:\n  generators:\n  - list:\n      elements:\n      - env: dev\n  template:\n    metadata:\n      name: 'guestbook-{{env}}'\n    spec:\n      source:\n        repoURL: https://github.com/example/gitops\n        path: guestbook\n      destination:\n        server: https://kubernetes.default.svc\n        namespace: 'guestbook-{{env}}'\n",
		"guestbook/cm.yaml":            cm,
	})
	sameWithCache(t, repo, hash, nil)
}

// sameWithCache checks that discovery of repo at hash with a cache folder
// (filled, then read back) finds exactly what discovery without it finds.
func sameWithCache(t *testing.T, repo *gittest.Repo, hash string, flux *app.FluxCluster) {
	t.Helper()
	cache := t.TempDir()
	discover := func(cacheDir string) string {
		t.Helper()
		return discoverAt(t, repo, hash, cacheDir, flux)
	}
	want := discover("")
	if first := discover(cache); first != want {
		t.Fatalf("discovery filling the cache:\n%s\nwant (no cache):\n%s", first, want)
	}
	if again := discover(cache); again != want {
		t.Fatalf("discovery from the cache:\n%s\nwant (no cache):\n%s", again, want)
	}
}

// discoverAt is discoveryOf repo's apps at hash, with the discovery cache
// in cacheDir ("" for none) and flux's cluster folder (nil for none).
func discoverAt(t *testing.T, repo *gittest.Repo, hash, cacheDir string, flux *app.FluxCluster) string {
	t.Helper()
	r, err := source.Open(context.Background(), source.Options{Location: repo.Dir, DiscoverCacheDir: cacheDir, Flux: flux})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Snapshot(hash)
	if err != nil {
		t.Fatal(err)
	}
	return discoveryOf(t, snap.Apps())
}
