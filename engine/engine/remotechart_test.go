package engine_test

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/charttest"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/fluxtest"
	"kdrift.dev/kdrift/internal/gittest"
)

var (
	helmRepositoriesGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmrepositories"}
	helmChartsGVR       = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
	ociRepositoriesGVR  = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
)

// createFluxStatus writes a live Flux object with the status its
// controller would have written (through the status subresource).
func createFluxStatus(t *testing.T, gvr schema.GroupVersionResource, obj map[string]any) {
	t.Helper()
	st := obj["status"]
	delete(obj, "status")
	createFlux(t, gvr, obj)
	if st == nil {
		return
	}
	u := &unstructured.Unstructured{Object: obj}
	c := enginetest.Dynamic(t).Resource(gvr).Namespace(u.GetNamespace())
	got, err := c.Get(context.Background(), u.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Object["status"] = st
	if _, err := c.UpdateStatus(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status of %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// setFluxStatus replaces the status of a live Flux object.
func setFluxStatus(t *testing.T, gvr schema.GroupVersionResource, ns, name string, st map[string]any) {
	t.Helper()
	c := enginetest.Dynamic(t).Resource(gvr).Namespace(ns)
	got, err := c.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Object["status"] = st
	if _, err := c.UpdateStatus(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// installFluxCRDs installs the CRDs of Flux's Kustomizations, HelmReleases
// and sources (none of their objects).
func installFluxCRDs(t *testing.T) {
	t.Helper()
	enginetest.InstallCRDs(t, "gitrepositories.source.toolkit.fluxcd.io.yaml", "kustomizations.kustomize.toolkit.fluxcd.io.yaml",
		"helmreleases.helm.toolkit.fluxcd.io.yaml", "helmrepositories.source.toolkit.fluxcd.io.yaml",
		"helmcharts.source.toolkit.fluxcd.io.yaml", "ocirepositories.source.toolkit.fluxcd.io.yaml")
}

// bootstrapFlux installs Flux's CRDs and the live objects `flux
// bootstrap` leaves for clusters/production of repository url: the
// flux-system GitRepository and Kustomization.
func bootstrapFlux(t *testing.T, url string) {
	t.Helper()
	installFluxCRDs(t)
	keepNamespace(t, "flux-system")
	createFlux(t, schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}, map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
		"spec":     map[string]any{"url": url, "interval": "1m0s", "ref": map[string]any{"branch": "main"}},
	})
	createFlux(t, schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}, map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
		"spec": map[string]any{"path": "./clusters/production", "prune": true, "interval": "10m0s",
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}},
	})
}

// countingListener is a loopback address that only counts the
// connections made to it: a host kdrift must never contact.
func countingListener(t *testing.T) (addr string, conns *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int64{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().String(), conns
}

// remoteAsHelmApplies is the Deployment of fluxtest.RemoteChart name for
// production, as helm-controller leaves it.
func remoteAsHelmApplies(name, image, ns string) (manifest string, labels, annotations map[string]string) {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
spec:
  replicas: 3
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
      - name: ` + name + `
        image: ` + image + `
`, map[string]string{"app": name, "env": "production", "app.kubernetes.io/managed-by": "Helm",
			"helm.toolkit.fluxcd.io/name": name, "helm.toolkit.fluxcd.io/namespace": ns},
		map[string]string{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": ns}
}

// TestFluxRemoteChartsOnACluster: Flux's reference layout with
// HelmReleases whose charts are remote (one from a Helm repository at a
// version range, one from an OCI registry at a semver range), against a
// real Helm repository and a real OCI registry on loopback. The live
// sources name where the charts are and which versions they resolved:
// kdrift fetches exactly those, renders them with the environment's
// values, compares the Deployments field by field (a kubectl scale is
// drift owned by kubectl) and says which chart it rendered and what Flux
// released. The committed sources name a host that only counts
// connections: it is never contacted, nor is the host of a source only
// Git declares. A digest the registry does not serve is an error, never
// a render.
func TestFluxRemoteChartsOnACluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "flux-remote")
	decoy, decoyConns := countingListener(t)

	helmRepo := charttest.HelmRepo(t,
		charttest.Chart{Name: "cache", Version: "1.2.0", Files: fluxtest.RemoteChart("cache", "1.2.0", "redis:7.2")},
		charttest.Chart{Name: "cache", Version: "1.3.0", Files: fluxtest.RemoteChart("cache", "1.3.0", "redis:7.4")})
	reg := charttest.Registry(t)
	webDigest := reg.PushChart(t, "charts/web", charttest.Chart{Name: "web", Version: "6.7.1", Files: fluxtest.RemoteChart("web", "6.7.1", "nginx:1.27")})

	const url = "https://git.example.com/team/fleet.git"
	files := fluxtest.ReferenceLayout(url, ns)
	fluxtest.RemoteReleases(files, ns, "http://"+decoy+"/charts", "oci://"+decoy+"/charts/web")
	// A release whose HelmRepository only Git declares.
	files["apps/base/cache/rogue.yaml"] = strings.ReplaceAll(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: rogue, namespace: flux-system}
spec: {url: http://DECOY/charts}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: rogue, namespace: NS}
spec:
  chart:
    spec: {chart: cache, version: 1.2.0, sourceRef: {kind: HelmRepository, name: rogue, namespace: flux-system}}
`, "DECOY", decoy)
	files["apps/base/cache/rogue.yaml"] = strings.ReplaceAll(files["apps/base/cache/rogue.yaml"], "namespace: NS", "namespace: "+ns)
	files["apps/base/cache/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [repository.yaml, release.yaml, rogue.yaml]\n"
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("Flux reference layout with remote charts", files)

	bootstrapFlux(t, url)
	// The live sources: the real servers, as the cluster's Flux has them.
	createFlux(t, helmRepositoriesGVR, map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
		"metadata": map[string]any{"name": "cache", "namespace": "flux-system"},
		"spec":     map[string]any{"url": helmRepo.URL, "interval": "1h"},
	})
	createFluxStatus(t, helmChartsGVR, map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
		"metadata": map[string]any{"name": ns + "-cache", "namespace": "flux-system"},
		"spec": map[string]any{"chart": "cache", "version": "1.x", "interval": "10m",
			"sourceRef": map[string]any{"kind": "HelmRepository", "name": "cache"}},
		"status": map[string]any{"artifact": map[string]any{"revision": "1.2.0", "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
			"path": "helmchart/flux-system/" + ns + "-cache/cache-1.2.0.tgz", "url": "http://source-controller.flux-system.svc.cluster.local./helmchart/flux-system/cache-1.2.0.tgz", "lastUpdateTime": "2026-12-06T00:00:00Z"}},
	})
	ociURL := "oci://" + reg.Host + "/charts/web"
	createFluxStatus(t, ociRepositoriesGVR, map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
		"metadata": map[string]any{"name": "web", "namespace": "flux-system"},
		"spec":     map[string]any{"url": ociURL, "interval": "1h", "ref": map[string]any{"semver": ">=6.0.0"}},
		"status": map[string]any{"artifact": map[string]any{"revision": "6.7.1@" + webDigest, "digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
			"path": "ocirepository/flux-system/web/x.tar.gz", "url": "http://source-controller.flux-system.svc.cluster.local./x.tar.gz", "lastUpdateTime": "2026-12-06T00:00:00Z"}},
	})
	createFluxStatus(t, schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}, map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "cache", "namespace": ns},
		"spec": map[string]any{"interval": "10m", "chart": map[string]any{"spec": map[string]any{"chart": "cache", "version": "1.x",
			"sourceRef": map[string]any{"kind": "HelmRepository", "name": "cache", "namespace": "flux-system"}}}},
		"status": map[string]any{"history": []any{map[string]any{"chartName": "cache", "chartVersion": "1.2.0", "name": "cache", "namespace": ns, "version": int64(1), "status": "deployed", "digest": "sha256:2222", "firstDeployed": "2026-12-06T00:00:00Z", "lastDeployed": "2026-12-06T00:00:00Z", "configDigest": "sha256:3333"}}},
	})
	for _, d := range []struct{ name, image string }{{"cache", "redis:7.2"}, {"web", "nginx:1.27"}} {
		m, l, a := remoteAsHelmApplies(d.name, d.image, ns)
		applyAs(t, ns, "helm-controller", m, l, a)
	}
	m, l, a := podinfoAsHelmApplies(ns)
	applyAs(t, ns, "helm-controller", m, l, a)

	e := newEngine(t, repo, func(o *engine.Options) { o.ChartCacheDir = t.TempDir() })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := appNames(e); got != "apps cache flux-system infra-configs podinfo rogue web" {
		t.Fatalf("apps of clusters/production: %s", got)
	}
	cache := appStatus(t, e, "cache")
	if cache.Sync != status.SyncSynced || len(cache.Resources) != 1 {
		t.Fatalf("the cache chart's Deployment must compare Synced:\n%s", describe(cache))
	}
	if !strings.Contains(cache.Chart, "chart cache 1.2.0 (sha256:") || !strings.Contains(cache.Chart, "HelmRepository flux-system/cache") ||
		!strings.Contains(cache.Chart, "version resolved by HelmChart flux-system/"+ns+"-cache") {
		t.Fatalf("which chart was rendered: %q", cache.Chart)
	}
	if cache.OwnerApplied != "Flux applied chart cache 1.2.0, the version kdrift renders" {
		t.Fatalf("owner applied: %q", cache.OwnerApplied)
	}
	web := appStatus(t, e, "web")
	if web.Sync != status.SyncSynced || len(web.Resources) != 1 || !strings.Contains(web.Chart, "chart web 6.7.1") || !strings.Contains(web.Chart, "OCIRepository flux-system/web") {
		t.Fatalf("the OCI chart's Deployment must compare Synced:\n%s\nchart %q", describe(web), web.Chart)
	}
	rogue := appStatus(t, e, "rogue")
	if rogue.Sync != status.SyncError || !strings.Contains(rogue.Error, "HelmRepository flux-system/rogue is not in the cluster") {
		t.Fatalf("a source only Git declares must not be fetched from:\n%s", describe(rogue))
	}
	if n := decoyConns.Load(); n != 0 {
		t.Fatalf("the host only committed files name was contacted %d times", n)
	}

	// A kubectl scale is drift owned by kubectl.
	force := true
	scale := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"cache","namespace":"` + ns + `"},"spec":{"replicas":5}}`)
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Patch(ctx, "cache", types.ApplyPatchType, scale, metav1.PatchOptions{FieldManager: "kubectl", Force: &force}); err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	cache = appStatus(t, e, "cache")
	r, _ := resource(cache, "Deployment", "cache")
	f, ok := field(r, "/spec/replicas")
	if cache.Sync != status.SyncOutOfSync || !ok || f.Class != status.OwnerPerson || len(f.Owners) == 0 || f.Owners[0].Manager != "kubectl" {
		t.Fatalf("the scale must be drift owned by kubectl:\n%s", describe(cache))
	}

	// The cluster resolves 1.3.0: kdrift renders that version (its image
	// differs from what Helm released), and says Flux has not released it.
	setFluxStatus(t, helmChartsGVR, "flux-system", ns+"-cache", map[string]any{"artifact": map[string]any{"revision": "1.3.0", "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
		"path": "x", "url": "http://x", "lastUpdateTime": "2026-12-06T00:00:00Z"}})
	// A digest the registry does not serve.
	setFluxStatus(t, ociRepositoriesGVR, "flux-system", "web", map[string]any{"artifact": map[string]any{"revision": "6.7.1@sha256:" + strings.Repeat("ab", 32), "digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"path": "x", "url": "http://x", "lastUpdateTime": "2026-12-06T00:00:00Z"}})
	e = newEngine(t, repo, func(o *engine.Options) { o.ChartCacheDir = t.TempDir() })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	cache = appStatus(t, e, "cache")
	if !strings.Contains(cache.Chart, "chart cache 1.3.0") || !strings.Contains(cache.OwnerApplied, "Flux applied chart cache 1.2.0; kdrift renders chart cache 1.3.0") {
		t.Fatalf("chart %q, owner applied %q", cache.Chart, cache.OwnerApplied)
	}
	r, _ = resource(cache, "Deployment", "cache")
	image := false
	for _, f := range r.Fields {
		image = image || (strings.HasSuffix(f.Path, "/image") && fmt.Sprint(f.Desired) == "redis:7.4")
	}
	if cache.Sync != status.SyncOutOfSync || !image {
		t.Fatalf("1.3.0's image must be drift:\n%s", describe(cache))
	}
	web = appStatus(t, e, "web")
	if web.Sync != status.SyncError || !strings.Contains(web.Error, "sha256:abab") {
		t.Fatalf("a digest the registry does not serve must be an error:\n%s", describe(web))
	}

	// A cluster that does not answer: the remote charts' apps are
	// Unknown, like every app of that cluster, and say why.
	dead := kubeconfigWithDeadContext(t)
	cfg, err := clientcmd.LoadFromFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CurrentContext = "dead"
	if err := clientcmd.WriteToFile(*cfg, dead); err != nil {
		t.Fatal(err)
	}
	e = newEngine(t, repo, func(o *engine.Options) { o.Kubeconfig, o.ClusterPath = dead, "clusters/production" })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	cache = appStatus(t, e, "cache")
	if cache.Sync != status.SyncUnknown || !strings.Contains(cache.Error, "cannot be reached") {
		t.Fatalf("an unreachable cluster's remote chart must be Unknown:\n%s", describe(cache))
	}
	if n := decoyConns.Load(); n != 0 {
		t.Fatalf("the host only committed files name was contacted %d times", n)
	}
}

// TestFluxCommittedChartSourceOnACluster: a cluster with Flux's CRDs but
// none of the sources its HelmReleases name (Flux not installed there
// yet). The HelmRepository and OCIRepository Git declares point at real
// servers on loopback; without --chart-repo kdrift contacts neither and
// says which flag would allow each, with --chart-repo naming them it
// renders the pinned versions and the Deployments compare Synced, and a
// range nothing resolved is an Error that says what to pin.
func TestFluxCommittedChartSourceOnACluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "flux-committed")
	helmRepo := charttest.HelmRepo(t, charttest.Chart{Name: "cache", Version: "1.2.0", Files: fluxtest.RemoteChart("cache", "1.2.0", "redis:7.2")})
	reg := charttest.Registry(t)
	reg.PushChart(t, "charts/web", charttest.Chart{Name: "web", Version: "6.7.1", Files: fluxtest.RemoteChart("web", "6.7.1", "nginx:1.27")})
	ociURL := "oci://" + reg.Host + "/charts/web"
	pushes := reg.Connections()

	const url = "https://git.example.com/team/fleet-committed.git"
	files := fluxtest.ReferenceLayout(url, ns)
	fluxtest.RemoteReleases(files, ns, helmRepo.URL, ociURL)
	// The sources in the test's namespace (no other test's live source
	// has their names), the versions pinned.
	pin := strings.NewReplacer("namespace: flux-system", "namespace: "+ns, "version: 1.x", "version: 1.2.0", `ref: {semver: ">=6.0.0"}`, "ref: {tag: 6.7.1}")
	for _, f := range []string{"apps/base/cache/repository.yaml", "apps/base/cache/release.yaml", "apps/base/web/repository.yaml", "apps/base/web/release.yaml"} {
		files[f] = pin.Replace(files[f])
	}
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("remote charts whose sources only Git declares", files)

	installFluxCRDs(t)
	for _, d := range []struct{ name, image string }{{"cache", "redis:7.2"}, {"web", "nginx:1.27"}} {
		m, l, a := remoteAsHelmApplies(d.name, d.image, ns)
		applyAs(t, ns, "helm-controller", m, l, a)
	}
	production := func(o *engine.Options) { o.ChartCacheDir, o.ClusterPath = t.TempDir(), "clusters/production" }

	e := newEngine(t, repo, production)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for name, loc := range map[string]string{"cache": helmRepo.URL, "web": ociURL} {
		a := appStatus(t, e, name)
		if a.Sync != status.SyncError || !strings.Contains(a.Error, "is not in the cluster") || !strings.Contains(a.Error, "only Git declares it") ||
			!strings.Contains(a.Error, "pass --chart-repo "+loc) {
			t.Fatalf("%s: a source only Git declares needs --chart-repo:\n%s", name, describe(a))
		}
	}
	if n, m := helmRepo.Connections(), reg.Connections()-pushes; n != 0 || m != 0 {
		t.Fatalf("without --chart-repo the committed hosts were contacted: %d connections to the Helm repository, %d to the registry", n, m)
	}

	e = newEngine(t, repo, func(o *engine.Options) { production(o); o.ChartRepos = []string{helmRepo.URL, ociURL} })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cache", "web"} {
		a := appStatus(t, e, name)
		if a.Sync != status.SyncSynced || len(a.Resources) != 1 || !strings.Contains(a.Chart, "as Git declares it") || !strings.Contains(a.Chart, "allowed by --chart-repo") {
			t.Fatalf("%s: with --chart-repo the chart must render and compare Synced:\n%s\nchart %q", name, describe(a), a.Chart)
		}
	}
	if helmRepo.Connections() == 0 || reg.Connections() == pushes {
		t.Fatal("with --chart-repo the charts must come from the servers")
	}

	// A range nothing in the cluster resolves.
	files["apps/base/cache/release.yaml"] = strings.ReplaceAll(files["apps/base/cache/release.yaml"], "version: 1.2.0", "version: 1.x")
	files["apps/base/web/repository.yaml"] = strings.ReplaceAll(files["apps/base/web/repository.yaml"], "ref: {tag: 6.7.1}", `ref: {semver: ">=6.0.0"}`)
	repo.Commit("ranges", files)
	e = newEngine(t, repo, func(o *engine.Options) { production(o); o.ChartRepos = []string{helmRepo.URL, ociURL} })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if a := appStatus(t, e, "cache"); a.Sync != status.SyncError || !strings.Contains(a.Error, "pin chart.spec.version") {
		t.Fatalf("a range only Git declares must be an Error naming what to pin:\n%s", describe(a))
	}
	if a := appStatus(t, e, "web"); a.Sync != status.SyncError || !strings.Contains(a.Error, "pin spec.ref.tag") {
		t.Fatalf("a semver range only Git declares must be an Error naming what to pin:\n%s", describe(a))
	}
}

// TestArgoChartSourceOnACluster: an Argo CD Application whose source is a
// chart of a Helm repository (paired with values kept in Git through a
// ref source) is rendered from that repository when a live Argo CD
// repository Secret names it, at the version targetRevision pins, and
// compared; without the Secret, kdrift fetches nothing and says what
// would allow it.
func TestArgoChartSourceOnACluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "argo-chart")
	helmRepo := charttest.HelmRepo(t, charttest.Chart{Name: "cache", Version: "1.2.0", Files: fluxtest.RemoteChart("cache", "1.2.0", "redis:7.2")})
	const url = "https://git.example.com/team/gitops.git"
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("an Argo CD chart app", map[string]string{
		"envs/prod/cache.yaml": "replicaCount: 2\nenvironment: prod\n",
		"argocd/cache.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: cache, namespace: argocd}
spec:
  project: default
  sources:
  - repoURL: ` + helmRepo.URL + `
    chart: cache
    targetRevision: 1.2.0
    helm: {valueFiles: [$values/envs/prod/cache.yaml]}
  - repoURL: ` + url + `
    ref: values
  destination: {server: https://kubernetes.default.svc, namespace: ` + ns + `}
`,
	})
	applyAs(t, ns, "argocd-controller", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: cache
spec:
  replicas: 2
  selector:
    matchLabels: {app: cache}
  template:
    metadata:
      labels: {app: cache}
    spec:
      containers:
      - name: cache
        image: redis:7.2
`, map[string]string{"app": "cache", "env": "prod"}, map[string]string{"argocd.argoproj.io/tracking-id": "cache:apps/Deployment:" + ns + "/cache"})

	// No repository Secret: nothing is fetched.
	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	c := appStatus(t, e, "cache")
	if c.Sync != status.SyncError || !strings.Contains(c.Error, "--chart-repo") || helmRepo.Connections() != 0 {
		t.Fatalf("a repository only Git names must not be contacted (%d connections):\n%s", helmRepo.Connections(), describe(c))
	}

	// The cluster's Argo CD has the repository.
	cs := enginetest.Clientset(t)
	keepNamespace(t, "argocd")
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-cache", Namespace: "argocd", Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"type": "helm", "name": "cache", "url": helmRepo.URL}}
	if _, err := cs.CoreV1().Secrets("argocd").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Secrets("argocd").Delete(context.Background(), "repo-cache", metav1.DeleteOptions{})
	})
	e = newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	c = appStatus(t, e, "cache")
	if c.Sync != status.SyncSynced || len(c.Resources) != 1 || !strings.Contains(c.Chart, "chart cache 1.2.0") {
		t.Fatalf("the chart with Git's values must compare Synced:\n%s\nchart %q", describe(c), c.Chart)
	}
}

// TestArgoMultiSourceRemoteChartOnACluster: the usual Argo CD pairing of
// a chart from a Helm repository (a version range) with values kept in
// Git ($values of a ref source of this repository), on a cluster whose
// Argo CD synced version 6.5.4 of that source (status.sync.revisions at
// the chart's index) and whose repository Secret names the Helm
// repository on loopback. kdrift renders 6.5.4 (not the newer 6.5.5 the
// range also takes) with the Git values under valuesObject and the
// release name, compares the Deployment field by field, and a scale is
// drift owned by kubectl. A second app whose chart repository only Git
// (and a Git repository Secret) names is an Error and that host is never
// contacted.
func TestArgoMultiSourceRemoteChartOnACluster(t *testing.T) {
	ctx := context.Background()
	enginetest.InstallCRDs(t, "applications.argoproj.io.yaml")
	ns := namespace(t, "argo-multi-chart")
	argoNS := namespace(t, "argo-multi-chart-argocd")
	decoy, decoyConns := countingListener(t)
	helmRepo := charttest.HelmRepo(t,
		charttest.Chart{Name: "web", Version: "6.5.4", Files: fluxtest.RemoteChart("web", "6.5.4", "nginx:1.27")},
		charttest.Chart{Name: "web", Version: "6.5.5", Files: fluxtest.RemoteChart("web", "6.5.5", "nginx:1.28")})
	const url = "https://git.example.com/team/multi.git"
	const sha = "0123456789abcdef0123456789abcdef01234567"
	application := func(name, release, chartRepo string) string {
		return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ` + name + `, namespace: ` + argoNS + `}
spec:
  project: default
  sources:
  - repoURL: ` + url + `
    targetRevision: main
    ref: values
  - repoURL: ` + chartRepo + `
    chart: web
    targetRevision: 6.5.*
    helm:
      releaseName: ` + release + `
      valueFiles: [$values/envs/prod/web.yaml]
      valuesObject: {environment: production}
  destination: {server: https://kubernetes.default.svc, namespace: ` + ns + `}
`
	}
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("multi-source Applications with remote charts", map[string]string{
		"envs/prod/web.yaml": "replicaCount: 3\nenvironment: prod\n",
		"argocd/shop.yaml":   application("shop", "web", helmRepo.URL),
		"argocd/rogue.yaml":  application("rogue", "rogue", "http://"+decoy+"/charts"),
	})
	// Argo CD's view: the Applications as synced, and the repository.
	apps := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	for _, name := range []string{"shop", "rogue"} {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(application(name, name, helmRepo.URL)), &obj); err != nil {
			t.Fatal(err)
		}
		obj["status"] = map[string]any{"sync": map[string]any{"status": "Synced", "revisions": []any{sha, "6.5.4"}}}
		createFlux(t, apps, obj)
	}
	// A Git repository's Secret names where Argo CD reads Git, never
	// where a chart may be fetched from.
	for name, data := range map[string]map[string]string{
		"repo-web":   {"type": "helm", "name": "web", "url": helmRepo.URL},
		"repo-rogue": {"type": "git", "url": "http://" + decoy + "/charts"},
	} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: argoNS, Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}}, StringData: data}
		if _, err := enginetest.Clientset(t).CoreV1().Secrets(argoNS).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	m, _, _ := remoteAsHelmApplies("web", "nginx:1.27", ns)
	l, a := argoManaged("shop", ns, "web")
	l["app"], l["env"] = "web", "production"
	applyAs(t, ns, "argocd-controller", m, l, a)

	e := newEngine(t, repo, func(o *engine.Options) { o.ChartCacheDir = t.TempDir() })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := appNames(e); got != "rogue shop" {
		t.Fatalf("apps %s: Git's declarations, not the live copies", got)
	}
	shop := appStatus(t, e, "shop")
	if shop.Sync != status.SyncSynced || len(shop.Resources) != 1 {
		t.Fatalf("the chart with Git's values must compare Synced:\n%s", describe(shop))
	}
	if !strings.Contains(shop.Chart, "chart web 6.5.4 (sha256:") || !strings.Contains(shop.Chart, "status.sync.revisions[1]") {
		t.Fatalf("which chart was rendered: %q", shop.Chart)
	}
	if shop.OwnerApplied != "Argo CD applied 6.5.4, the version kdrift renders" {
		t.Fatalf("owner applied: %q", shop.OwnerApplied)
	}
	if rogue := appStatus(t, e, "rogue"); rogue.Sync != status.SyncError || !strings.Contains(rogue.Error, "--chart-repo") || !strings.Contains(rogue.Error, "(spec.sources[1])") {
		t.Fatalf("a chart repository only Git names must be an Error naming the flag:\n%s", describe(rogue))
	}

	// A kubectl scale is drift owned by kubectl, against Git's replicas 3.
	scaleAs(t, ns, "web", "kubectl", 5)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	shop = appStatus(t, e, "shop")
	r, _ := resource(shop, "Deployment", "web")
	f, ok := field(r, "/spec/replicas")
	if shop.Sync != status.SyncOutOfSync || !ok || fmt.Sprint(f.Desired) != "3" || fmt.Sprint(f.Live) != "5" || f.Class != status.OwnerPerson || len(f.Owners) == 0 || f.Owners[0].Manager != "kubectl" {
		t.Fatalf("the scale must be drift owned by kubectl against replicas 3:\n%s", describe(shop))
	}
	for _, f := range r.Fields {
		if !f.Extra && f.Path != "/spec/replicas" {
			t.Fatalf("only the scaled field differs from Git's render:\n%s", describe(shop))
		}
	}
	if n := decoyConns.Load(); n != 0 {
		t.Fatalf("the host only a committed file names was contacted %d times", n)
	}
}

// TestFluxArtifactGeneratorOnACluster: Flux 2.7's layout, the apps
// Kustomization reading an ExternalArtifact an ArtifactGenerator makes of
// the repository: kdrift rebuilds it, finds the HelmRelease it applies and
// compares the Deployment that release renders.
func TestFluxArtifactGeneratorOnACluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "flux-artifact")
	const url = "https://git.example.com/team/fleet.git"
	files := fluxtest.ReferenceLayout(url, ns)
	fluxtest.WithArtifactGenerator(files)
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("Flux 2.7 layout", files)
	m, l, a := podinfoAsHelmApplies(ns)
	applyAs(t, ns, "helm-controller", m, l, a)
	e := newEngine(t, repo, func(o *engine.Options) { o.ClusterPath = "clusters/production" })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := appNames(e); got != "apps flux-system infra-configs podinfo" {
		t.Fatalf("apps: %s", got)
	}
	if apps := appStatus(t, e, "apps"); apps.Path != "@artifacts/flux-system/apps/production" {
		t.Fatalf("apps reads the artifact: %q", apps.Path)
	}
	pi := appStatus(t, e, "podinfo")
	if pi.Sync != status.SyncSynced {
		t.Fatalf("podinfo:\n%s", describe(pi))
	}
}

// TestFluxValuesFromOnACluster: a HelmRelease's valuesFrom is read from
// the cluster as helm-controller reads it (a ConfigMap's values merged, a
// Secret key set at a targetPath), and what came from the Secret is
// masked wherever kdrift shows it and never written to the render cache
// on disk. A missing ConfigMap is an error naming it, as it fails the
// release.
func TestFluxValuesFromOnACluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "flux-valuesfrom")
	const url = "https://git.example.com/team/fleet.git"
	const token = "s3cr3t-t0ken"
	files := map[string]string{
		"clusters/prod/sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: ` + url + `}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`,
		"apps/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [release.yaml]\n",
		"apps/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: ` + ns + `}
spec:
  chart:
    spec: {chart: ./charts/web, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}
  valuesFrom:
  - {kind: ConfigMap, name: web-values}
  - {kind: Secret, name: web-secret, valuesKey: token, targetPath: environment}
  - {kind: ConfigMap, name: web-extra, optional: true}
`,
	}
	for k, v := range fluxtest.RemoteChart("web", "1.0.0", "nginx:1.27") {
		files["charts/web/"+k] = v
	}
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("a release with valuesFrom", files)
	applyAs(t, ns, "helm-controller", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`, map[string]string{"app": "web", "env": "other"}, nil)

	// valuesFrom is read only for a HelmRelease that exists live, and
	// only what the live object names (valuesfrom_live_test.go).
	installFluxCRDs(t)
	createFlux(t, schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}, map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"interval": "10m", "chart": map[string]any{"spec": map[string]any{"chart": "./charts/web",
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"}}},
			"valuesFrom": []any{map[string]any{"kind": "ConfigMap", "name": "web-values"},
				map[string]any{"kind": "Secret", "name": "web-secret", "valuesKey": "token", "targetPath": "environment"},
				map[string]any{"kind": "ConfigMap", "name": "web-extra", "optional": true}}},
	})
	cacheDir := t.TempDir()
	e := newEngine(t, repo, func(o *engine.Options) { o.RenderCacheDir = cacheDir })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	web := appStatus(t, e, "web")
	if web.Sync != status.SyncError || !strings.Contains(web.Error, "spec.valuesFrom[0]: ConfigMap "+ns+"/web-values is not in the cluster") {
		t.Fatalf("a missing ConfigMap must be named:\n%s", describe(web))
	}

	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-values"}, Data: map[string]string{"values.yaml": "replicaCount: 2\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-secret"}, StringData: map[string]string{"token": token}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e = newEngine(t, repo, func(o *engine.Options) { o.RenderCacheDir = cacheDir })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	web = appStatus(t, e, "web")
	r, _ := resource(web, "Deployment", "web")
	env, ok := field(r, "/metadata/labels/env")
	if web.Sync == status.SyncError || !ok || !env.Masked || fmt.Sprint(env.Desired) != diff.MaskedValue {
		t.Fatalf("the label the Secret sets must show as changed, masked:\n%s\n%+v", describe(web), env)
	}
	if _, ok := field(r, "/spec/replicas"); ok {
		t.Fatalf("replicas come from the ConfigMap and match:\n%s", describe(web))
	}
	d, err := e.Detail(ctx, "web", r.Ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range d.Desired {
		if strings.Contains(l.Text, token) {
			t.Fatalf("the diff view shows the Secret's value: %q", l.Text)
		}
	}
	if strings.Contains(fmt.Sprintf("%+v", web), token) {
		t.Fatal("the app status holds the Secret's value")
	}
	err = filepath.WalkDir(cacheDir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), token) {
			t.Errorf("%s holds the Secret's value", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
