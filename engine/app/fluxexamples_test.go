package app_test

import (
	"context"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/fluxtest"
	"kdrift.dev/kdrift/internal/gittest"
)

// exampleRepo commits the public example name to a new repository on
// branch main whose origin is url.
func exampleRepo(t *testing.T, name, url string) (*gittest.Repo, string) {
	t.Helper()
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	return repo, repo.Commit("example", fluxtest.Public(t, name))
}

// TestFluxCacheSameAnswer: on flux2-multi-tenancy, discovery with the
// cluster folder spelled clusters/production or ./clusters/production/,
// each on an empty cache and on the cache the other one left, gives one
// answer, in both orders; and that answer is the cluster's: no
// declaration counted twice, the staging folder left out, the tenant
// Kustomization (which reads branch dev-team) and the patch files that
// set its path not taken for this cluster's folders.
func TestFluxCacheSameAnswer(t *testing.T) {
	t.Parallel()
	repo, hash := exampleRepo(t, fluxtest.MultiTenancy, fluxtest.MultiTenancyURL)
	spellings := []string{"clusters/production", "./clusters/production/"}
	at := func(spelling, cache string) string {
		return discoverAt(t, repo, hash, cache, &app.FluxCluster{Path: spelling, From: "--cluster-path"})
	}
	want := at(spellings[0], t.TempDir())
	t.Logf("answer:\n%s", want)
	for _, order := range [][]string{spellings, {spellings[1], spellings[0]}} {
		cache := t.TempDir()
		for i, s := range append(order, order...) {
			if got := at(s, cache); got != want {
				t.Fatalf("%s (run %d of order %v) gives another answer:\n%s\nthan cold %s:\n%s", s, i, order, got, spellings[0], want)
			}
		}
	}
	// Without a cluster folder the hint names the cluster folders, not
	// the folders of the tenant's patches.
	none := discoverAt(t, repo, hash, t.TempDir(), nil)
	if !strings.Contains(none, "pass --cluster-path with the folder of the cluster to compare: clusters/production, clusters/staging\n") || strings.Contains(none, "dev-team is declared") {
		t.Errorf("without a cluster folder:\n%s", none)
	}
	for _, bad := range []string{"declared", "spec.sourceRef.kind: is \"\"", "tenants/base/dev-team, tenants/production"} {
		if strings.Contains(want, bad) {
			t.Errorf("answer holds %q:\n%s", bad, want)
		}
	}
	for _, good := range []string{
		`"name":"kyverno"`, `"name":"kyverno-policies"`, `"name":"tenants"`,
		"follows branch dev-team of this repository; kdrift reads branch main",
		"OCIRepository flux-system/kyverno-controller holds this Kustomization's manifests as an OCI artifact",
		"flux diff kustomization kyverno-controller -n flux-system",
	} {
		if !strings.Contains(want, good) {
			t.Errorf("answer lacks %q:\n%s", good, want)
		}
	}
}

// TestFluxPatchFileNotDeclaration: a partial Kustomization that a
// kustomization file names as a patch (patches[].path,
// patchesStrategicMerge) is no declaration; the same document that no
// kustomization file names still is one.
func TestFluxPatchFileNotDeclaration(t *testing.T) {
	t.Parallel()
	ks := func(name, path string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: " + name + ", namespace: flux-system}\nspec:\n  interval: 5m\n  prune: true\n  path: " + path + "\n  sourceRef: {kind: GitRepository, name: flux-system}\n"
	}
	partial := func(name string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: " + name + ", namespace: flux-system}\nspec:\n  path: ./apps/prod\n"
	}
	files := map[string]string{
		"clusters/prod/flux-system/gotk-sync.yaml":     fluxtest.BootstrapSync("https://github.com/example/gitops", "clusters/prod"),
		"clusters/prod/flux-system/kustomization.yaml": "resources: [gotk-sync.yaml]\n",
		"base/apps.yaml":             ks("apps", "./apps/base"),
		"base/kustomization.yaml":    "resources: [apps.yaml]\n",
		"overlay/kustomization.yaml": "resources: [../base]\npatches:\n- path: apps-patch.yaml\npatchesStrategicMerge:\n- sub/more.yaml\n",
		"overlay/apps-patch.yaml":    partial("apps"),
		"overlay/sub/more.yaml":      partial("apps"),
		"apps/base/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n",
		"apps/prod/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n",
	}
	res := discoverWith(t, files, source.Options{})
	for _, in := range res.Invalid {
		if strings.Contains(in.Err.Error(), "apps") {
			t.Errorf("a patch file was read as a declaration: %s: %v", in.Name, in.Err)
		}
	}
	if _, ok := res.Find("apps"); !ok {
		t.Fatalf("apps is not an app: %v %v", names(res.Apps), res.Invalid)
	}
	files["other/apps.yaml"] = partial("apps-other")
	res = discoverWith(t, files, source.Options{})
	found := false
	for _, in := range res.Invalid {
		found = found || strings.Contains(in.Err.Error(), "spec.sourceRef.kind")
	}
	if !found {
		t.Fatalf("a partial Kustomization no kustomization file patches with must stay an Error: %v %v", names(res.Apps), res.Invalid)
	}
}

// TestFluxPathWithoutKustomization: flux2-monitoring-example's
// monitoring/controllers has no kustomization.yaml and two subfolders
// that have one. As kustomize-controller generates it, each subfolder is
// one resource: the app renders (its kustomizeconfig.yaml is not read as
// a manifest) and the HelmReleases of both subfolders are apps.
func TestFluxPathWithoutKustomization(t *testing.T) {
	t.Parallel()
	repo, hash := exampleRepo(t, fluxtest.MonitoringExample, fluxtest.MonitoringURL)
	r, err := source.Open(context.Background(), source.Options{Location: repo.Dir, Flux: &app.FluxCluster{Path: "clusters/test", From: "--cluster-path"}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Snapshot(hash)
	if err != nil {
		t.Fatal(err)
	}
	res := snap.Apps()
	for _, want := range []string{"monitoring-controllers", "kube-prometheus-stack", "loki", "promtail"} {
		if _, ok := res.Find(want); !ok {
			t.Errorf("%s is not an app: %v %v", want, names(res.Apps), res.Invalid)
		}
	}
	mc, _ := res.Find("monitoring-controllers")
	objs, err := render.NewRenderer().RenderApp(context.Background(), snap, mc.Spec.Path, mc.RenderHelm())
	if err != nil {
		t.Fatalf("monitoring-controllers does not render: %v", err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	if kinds["HelmRelease"] != 3 || kinds["HelmRepository"] != 1 || kinds["OCIRepository"] != 1 || kinds["ConfigMap"] != 1 || kinds["Namespace"] != 1 {
		t.Fatalf("monitoring-controllers renders %v", kinds)
	}
}

// TestFluxLayoutsCacheSameAnswer: on every Flux layout kdrift is tested
// with, discovery without a cluster folder and with each cluster folder
// gives on a warm cache what it gives on an empty one, whichever of the
// two ran first.
func TestFluxLayoutsCacheSameAnswer(t *testing.T) {
	t.Parallel()
	layouts := []struct {
		files    map[string]string
		url      string
		clusters []string
	}{
		{fluxtest.Public(t, fluxtest.MultiTenancy), fluxtest.MultiTenancyURL, []string{"clusters/production", "clusters/staging"}},
		{fluxtest.Public(t, fluxtest.MonitoringExample), fluxtest.MonitoringURL, []string{"clusters/test"}},
		{fluxtest.Public(t, fluxtest.KustomizeHelm), fluxtest.KustomizeHelmURL, []string{"clusters/production", "clusters/staging"}},
		{fluxtest.ReferenceLayout("https://github.com/example/gitops", "podinfo"), "https://github.com/example/gitops", fluxtest.Clusters},
	}
	for _, l := range layouts {
		repo := gittest.Init(t)
		repo.Git("remote", "add", "origin", l.url)
		hash := repo.Commit("layout", l.files)
		choices := []*app.FluxCluster{nil}
		for _, c := range l.clusters {
			choices = append(choices, &app.FluxCluster{Path: c, From: "--cluster-path"})
		}
		cold := make([]string, len(choices))
		for i, fc := range choices {
			cold[i] = discoverAt(t, repo, hash, t.TempDir(), fc)
		}
		for _, reverse := range []bool{false, true} {
			cache := t.TempDir()
			for n := range 2 * len(choices) {
				i := n % len(choices)
				if reverse {
					i = len(choices) - 1 - i
				}
				if got := discoverAt(t, repo, hash, cache, choices[i]); got != cold[i] {
					t.Fatalf("%s, cluster %+v, run %d on a shared cache:\n%s\ncold:\n%s", l.url, choices[i], n, got, cold[i])
				}
			}
		}
	}
}
