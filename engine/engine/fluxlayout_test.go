package engine_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/fluxtest"
	"kdrift.dev/kdrift/internal/gittest"
)

// podinfoAsHelmApplies is the Deployment the chart of fluxtest's layout
// renders for production, as helm-controller leaves it: Helm's release
// metadata and Flux's labels on top.
func podinfoAsHelmApplies(ns string) (manifest string, labels, annotations map[string]string) {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  replicas: 3
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      containers:
      - name: podinfo
        image: ghcr.io/stefanprodan/podinfo:6.7.1
`, map[string]string{"app": "podinfo", "env": "production", "app.kubernetes.io/managed-by": "Helm",
			"helm.toolkit.fluxcd.io/name": "podinfo", "helm.toolkit.fluxcd.io/namespace": ns},
		map[string]string{"meta.helm.sh/release-name": "podinfo", "meta.helm.sh/release-namespace": ns, "post-rendered": "true"}
}

// createFlux writes a live Flux object as its controller would (read
// only for kdrift), removed when the test ends.
func createFlux(t *testing.T, gvr schema.GroupVersionResource, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	c := enginetest.Dynamic(t).Resource(gvr).Namespace(u.GetNamespace())
	if _, err := c.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("delete %s: %v", u.GetName(), err)
		}
	})
}

// TestFluxReferenceLayoutOnACluster: a repository in Flux's reference
// layout (two cluster folders declaring the same Kustomizations, a
// HelmRelease of an in-repository chart patched per environment). With
// --cluster-path, and then with no flag on a cluster whose live
// flux-system Kustomization applies clusters/production, kdrift lists
// that cluster's Kustomizations and HelmRelease, compares the Deployment
// the HelmRelease renders (production values), and a scale by another
// manager is drift owned by it.
func TestFluxReferenceLayoutOnACluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "flux-layout")
	const url = "https://git.example.com/team/fleet.git"
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("Flux reference layout", fluxtest.ReferenceLayout(url, ns))
	manifest, labels, annotations := podinfoAsHelmApplies(ns)
	applyAs(t, ns, "helm-controller", manifest, labels, annotations)

	wantApps := func(e *engine.Engine) {
		t.Helper()
		if got := appNames(e); got != "apps flux-system infra-configs podinfo" {
			t.Fatalf("apps of clusters/production: %s\n%+v", got, e.Apps())
		}
		pi := appStatus(t, e, "podinfo")
		if pi.Sync != status.SyncSynced || pi.Owner != "Flux HelmRelease "+ns+"/podinfo" || pi.Path != "charts/podinfo" {
			t.Fatalf("the Deployment the HelmRelease renders must compare Synced:\n%s owner=%q path=%q", describe(pi), pi.Owner, pi.Path)
		}
		if _, ok := resource(pi, "Deployment", "podinfo"); !ok || len(pi.Resources) != 1 {
			t.Fatalf("the HelmRelease app must compare the chart's objects only:\n%s", describe(pi))
		}
	}

	// Git alone: the cluster folder named by --cluster-path.
	e := newEngine(t, repo, func(o *engine.Options) { o.ClusterPath = "clusters/production" })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	wantApps(e)
	if got := e.FluxCluster(); !strings.HasPrefix(got, "Flux cluster folder clusters/production (from --cluster-path)") {
		t.Fatalf("header: %q", got)
	}

	// No flag: the live flux-system Kustomization names the folder.
	enginetest.InstallCRDs(t, "gitrepositories.source.toolkit.fluxcd.io.yaml", "kustomizations.kustomize.toolkit.fluxcd.io.yaml", "helmreleases.helm.toolkit.fluxcd.io.yaml")
	keepNamespace(t, "flux-system")
	createFlux(t, schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}, map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
		"spec":     map[string]any{"url": "ssh://git@git.example.com/team/fleet", "interval": "1m0s", "ref": map[string]any{"branch": "main"}},
	})
	createFlux(t, schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}, map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
		"spec": map[string]any{"path": "./clusters/production", "prune": true, "interval": "10m0s",
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}},
	})
	e = newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	wantApps(e)
	if got := e.FluxCluster(); !strings.HasPrefix(got, `Flux cluster folder clusters/production (from the live Kustomization flux-system/flux-system on context`) {
		t.Fatalf("header: %q", got)
	}

	// A scale written with another field manager is drift owned by it,
	// and kdrift leaves it: Flux heals this release, not kdrift.
	force := true
	scale := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"podinfo","namespace":"` + ns + `"},"spec":{"replicas":5}}`)
	deps := enginetest.Clientset(t).AppsV1().Deployments(ns)
	if _, err := deps.Patch(ctx, "podinfo", types.ApplyPatchType, scale, metav1.PatchOptions{FieldManager: "kubectl", Force: &force}); err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	pi := appStatus(t, e, "podinfo")
	r, _ := resource(pi, "Deployment", "podinfo")
	f, ok := field(r, "/spec/replicas")
	if pi.Sync != status.SyncOutOfSync || !ok || f.Class != status.OwnerPerson || len(f.Owners) == 0 || f.Owners[0].Manager != "kubectl" {
		t.Fatalf("the scale must be drift owned by kubectl:\n%s", describe(pi))
	}
	if d, err := deps.Get(ctx, "podinfo", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 5 {
		t.Fatalf("kdrift healed a release Flux owns: %v %v", d.Spec.Replicas, err)
	}
}

// TestFluxLiveKustomizationsOnACluster: a Kustomization made with `flux
// create kustomization` is in no file; the cluster's live Kustomization,
// which reads this repository through the bootstrap GitRepository, lists
// it with its path from the live spec, and the app is compared; so is a
// HelmRelease made with `flux create helmrelease` from a chart folder of
// this repository. A live Kustomization of another repository is not
// listed.
func TestFluxLiveKustomizationsOnACluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "flux-live")
	const url = "https://git.example.com/team/flux-live.git"
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("bootstrap only; the web Kustomization is made with flux create", map[string]string{
		"clusters/production/flux-system/gotk-sync.yaml": fluxtest.BootstrapSync(url, "clusters/production"),
		"apps/web/deploy.yaml":                           deploymentYAML("web", 2),
		"charts/hello/Chart.yaml":                        "apiVersion: v2\nname: hello\nversion: 1.0.0\n",
		"charts/hello/templates/hello.yaml":              deploymentYAML("hello", 1),
	})
	enginetest.InstallCRDs(t, "gitrepositories.source.toolkit.fluxcd.io.yaml", "kustomizations.kustomize.toolkit.fluxcd.io.yaml", "helmreleases.helm.toolkit.fluxcd.io.yaml")
	keepNamespace(t, "flux-system")
	gitRepos := schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	kustomizations := schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	for name, u := range map[string]string{"flux-system": url, "flux-live-other": "https://git.example.com/team/other.git"} {
		createFlux(t, gitRepos, map[string]any{
			"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
			"metadata": map[string]any{"name": name, "namespace": "flux-system"},
			"spec":     map[string]any{"url": u, "interval": "1m0s", "ref": map[string]any{"branch": "main"}},
		})
	}
	for _, k := range []struct{ name, path, source string }{
		{"flux-system", "./clusters/production", "flux-system"},
		{"flux-live-web", "./apps/web", "flux-system"},
		{"flux-live-other", "./apps/web", "flux-live-other"},
	} {
		createFlux(t, kustomizations, map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": k.name, "namespace": "flux-system"},
			"spec": map[string]any{"path": k.path, "prune": true, "interval": "10m0s", "targetNamespace": ns,
				"sourceRef": map[string]any{"kind": "GitRepository", "name": k.source}},
		})
	}
	applyAs(t, ns, "kustomize-controller", deploymentYAML("web", 2),
		map[string]string{"kustomize.toolkit.fluxcd.io/name": "flux-live-web", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil)
	// A HelmRelease made with `flux create helmrelease`, its chart a folder
	// of this repository.
	createFlux(t, schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}, map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "flux-live-hello", "namespace": ns},
		"spec": map[string]any{"interval": "10m", "releaseName": "hello", "chart": map[string]any{"spec": map[string]any{"chart": "./charts/hello",
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"}}}},
	})
	applyAs(t, ns, "helm-controller", deploymentYAML("hello", 1),
		map[string]string{"app.kubernetes.io/managed-by": "Helm", "helm.toolkit.fluxcd.io/name": "flux-live-hello", "helm.toolkit.fluxcd.io/namespace": ns},
		map[string]string{"meta.helm.sh/release-name": "hello", "meta.helm.sh/release-namespace": ns})

	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := appNames(e); got != "flux-live-hello flux-live-web flux-system" {
		t.Fatalf("apps %s; want Git's bootstrap and the live Kustomization and HelmRelease of this repository", got)
	}
	if h := appStatus(t, e, "flux-live-hello"); h.Sync != status.SyncSynced || len(h.Resources) != 1 || !strings.Contains(h.OwnerFile, "live in the cluster") || h.Path != "charts/hello" {
		t.Fatalf("the live HelmRelease's chart must be compared:\n%s file=%q path=%q", describe(h), h.OwnerFile, h.Path)
	}
	s := appStatus(t, e, "flux-live-web")
	if s.Sync != status.SyncSynced || s.Owner != "Flux Kustomization flux-system/flux-live-web" || !strings.Contains(s.OwnerFile, "live in the cluster") || s.Path != "apps/web" {
		t.Fatalf("the live Kustomization must be compared:\n%s owner=%q file=%q path=%q", describe(s), s.Owner, s.OwnerFile, s.Path)
	}
	if src := e.AppSource(); !strings.Contains(src, "1 live Flux Kustomization and 1 live Flux HelmRelease on context") {
		t.Fatalf("the header must say where the list came from: %q", src)
	}
}
