package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
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

// countingRenderer is a Renderer that counts the renders discovery asks
// for.
type countingRenderer struct {
	app.Renderer
	renders int
}

func (c *countingRenderer) RenderApp(ctx context.Context, tree render.Tree, dir string, h *render.Helm) ([]*unstructured.Unstructured, error) {
	c.renders++
	return c.Renderer.RenderApp(ctx, tree, dir, h)
}

// TestDiscoverCacheQuietRenders: after a commit that changes only what
// a non-generating kustomize app reads, discovery with the cache renders
// nothing (from the kept list, and from the kept renders when the list
// is gone) and finds exactly what discovery without a cache finds; a
// change that could make a render yield a declaration (a marker, an
// escape, a kustomization) renders that app again.
func TestDiscoverCacheQuietRenders(t *testing.T) {
	t.Parallel()
	const repoURL = "https://github.com/example/gitops"
	application := func(name, apiVersion, path string) string {
		return "apiVersion: " + apiVersion + "\nkind: Application\nmetadata:\n  name: " + name + "\n  namespace: argocd\nspec:\n  source:\n    repoURL: " + repoURL + "\n    path: " + path + "\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: x\n"
	}
	files := map[string]string{
		"bootstrap/root.yaml":          application("root", "argoproj.io/v1alpha1", "apps-root"),
		"apps-root/kustomization.yaml": "resources: [a.yaml]\n",
		"apps-root/a.yaml":             application("a", "argoproj.io/v1alpha1", "guestbook"),
		"guestbook/cm.yaml":            cm,
	}
	for i := 0; i < 4; i++ {
		dir := fmt.Sprintf("plain/app-%02d", i)
		files[dir+"/kustomization.yaml"] = "resources: [cm.yaml]\n"
		files[dir+"/cm.yaml"] = cm
		files[fmt.Sprintf(".kdrift/app-%02d.yaml", i)] = "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: " + fmt.Sprintf("app-%02d", i) + "\nspec:\n  path: " + dir + "\n  destination:\n    namespace: x\n"
	}
	repo := gittest.Init(t)
	hash := repo.Commit("base", files)
	r, err := source.Open(context.Background(), source.Options{Location: repo.Dir})
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	discover := func(hash string, cached bool) (string, int) {
		t.Helper()
		if err := r.Fetch(context.Background()); err != nil {
			t.Fatal(err)
		}
		snap, err := r.Snapshot(hash)
		if err != nil {
			t.Fatal(err)
		}
		rr := &countingRenderer{Renderer: render.NewRenderer()}
		opts := app.DiscoverOptions{SameRepo: func(u string) bool { return u == repoURL }, Renderer: rr}
		if cached {
			opts.Children = app.NewChildCache(cacheDir, repo.Dir, repoURL)
		}
		res := app.Discover(snap, opts)
		if cached {
			opts.Children.Save()
		}
		return discoveryOf(t, res), rr.renders
	}
	dropLists := func() {
		t.Helper()
		lists, err := filepath.Glob(filepath.Join(cacheDir, "*.apps.json"))
		if err != nil || len(lists) != 1 {
			t.Fatalf("app list files: %v, %v", lists, err)
		}
		if err := os.Remove(lists[0]); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := discover(hash, false)
	if got, n := discover(hash, true); got != want || n != 5 {
		t.Fatalf("first discovery: %d renders, want 5 (4 apps, the root)\n%s\nwant\n%s", n, got, want)
	}
	for _, step := range []struct {
		name   string
		change map[string]string
		// renders is how many renders a discovery from the kept list
		// makes.
		renders int
		// declares names an app the change makes one of the apps generate.
		declares string
	}{
		{name: "a ConfigMap of one app", change: map[string]string{"plain/app-01/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {k: v2}\n"}},
		{name: "a file added to one app, another's changed", change: map[string]string{"plain/app-02/unused.yaml": "k: v\n", "plain/app-03/cm.yaml": cm + "data: {k: v3}\n"}, renders: 1},
		{name: "a marker in one app's data", change: map[string]string{"plain/app-01/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {k: argoproj.io}\n"}, renders: 1},
		{name: "an Application spelled with an escape", change: map[string]string{"plain/app-03/cm.yaml": application("escaped", `"argoproj\x2eio/v1alpha1"`, "guestbook")}, renders: 1, declares: "escaped"},
		{name: "a kustomization", change: map[string]string{"plain/app-00/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: p-\n"}, renders: 1},
	} {
		hash = repo.Commit(step.name, step.change)
		want, _ := discover(hash, false)
		if step.declares != "" && !strings.Contains(want, `"name":"`+step.declares+`"`) {
			t.Fatalf("%s: discovery without a cache does not find %s:\n%s", step.name, step.declares, want)
		}
		// From the kept list, and from the kept renders alone: the
		// cache is one step behind in both.
		if got, n := discover(hash, true); got != want || n != step.renders {
			t.Fatalf("%s: from the kept list: %d renders, want %d\n%s\nwant\n%s", step.name, n, step.renders, got, want)
		}
		if got, n := discover(hash, true); got != want || n != 0 {
			t.Fatalf("%s: again: %d renders, want 0\n%s\nwant\n%s", step.name, n, got, want)
		}
		dropLists()
		if got, n := discover(hash, true); got != want || n != 0 {
			t.Fatalf("%s: from the kept renders, list gone: %d renders, want 0\n%s\nwant\n%s", step.name, n, got, want)
		}
	}
}

// TestDiscoverCacheFollowsLinks: an App file that is a symbolic link is
// read again whenever the list is checked, even after the list was kept
// for a later commit: a change to the file it points at, with nothing
// changed on the link's own path, is seen.
func TestDiscoverCacheFollowsLinks(t *testing.T) {
	t.Parallel()
	appDoc := func(ns string) string {
		return "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: linked\nspec:\n  path: plain/app\n  destination:\n    namespace: " + ns + "\n"
	}
	repo := gittest.Init(t)
	repo.Write(map[string]string{"defs/linked.yaml": appDoc("one"), "plain/app/kustomization.yaml": "resources: [cm.yaml]\n", "plain/app/cm.yaml": cm, "other/cm.yaml": cm})
	if err := os.MkdirAll(filepath.Join(repo.Dir, ".kdrift"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../defs/linked.yaml", filepath.Join(repo.Dir, ".kdrift", "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	for i, change := range []map[string]string{
		nil,
		{"other/cm.yaml": cm + "data: {k: v2}\n"}, // the list is kept for this commit too
		{"defs/linked.yaml": appDoc("two")},       // only the link's target changes
		{"other/cm.yaml": cm + "data: {k: v3}\n"},
		{"defs/linked.yaml": appDoc("three")},
	} {
		hash := repo.Commit(fmt.Sprintf("change %d", i), change)
		want := discoverAt(t, repo, hash, "", nil)
		if !strings.Contains(want, "linked") {
			t.Fatalf("commit %d: the linked App is not found:\n%s", i, want)
		}
		for range 2 {
			if got := discoverAt(t, repo, hash, cache, nil); got != want {
				t.Fatalf("commit %d: discovery from the cache:\n%s\nwant (no cache):\n%s", i, got, want)
			}
		}
	}
}
