package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// chartFiles reads the render package's test chart NAME into repository
// files under prefix.
func chartFiles(t *testing.T, name, prefix string) map[string]string {
	return gittest.Files(t, filepath.Join("..", "render", "testdata", "charts", name), prefix)
}

// TestHelmChartSyncs: an App whose path is a chart (templates, helpers,
// values files, a vendored dependency) renders with its spec.helm, syncs
// to Synced, and its hooks are neither applied nor listed.
func TestHelmChartSyncs(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "helm-web")
	repo := gittest.Init(t)
	files := chartFiles(t, "web", "deploy/web")
	files[".kdrift/app.yaml"] = appYAML("shop", "deploy/web", ns, true, false, `  helm:
    valueFiles: [values-prod.yaml]
    parameters:
    - {name: image.tag, value: "1.28"}
`)
	repo.Commit("chart", files)
	e := newEngine(t, repo, nil)
	res, err := e.Sync(ctx, "shop", engine.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != "" {
		t.Fatal(res.Err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "shop")
	if a.Sync != status.SyncSynced {
		t.Fatalf("the chart app is not Synced:\n%s", describe(a))
	}
	var kinds []string
	for _, r := range a.Resources {
		kinds = append(kinds, r.Ref.Kind+"/"+r.Ref.Name)
	}
	got := strings.Join(kinds, " ")
	for _, want := range []string{"Deployment/shop-web", "Service/shop-web", "ConfigMap/shop-web", "ConfigMap/shop-cache"} {
		if !strings.Contains(got, want) {
			t.Errorf("resources %s lack %s", got, want)
		}
	}
	if strings.Contains(got, "migrate") || strings.Contains(got, "Pod/") {
		t.Errorf("hooks listed: %s", got)
	}
	cs := enginetest.Clientset(t)
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 6 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
		t.Errorf("replicas %d image %s: want values-prod.yaml's 6 and the parameter's tag", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}
	if _, err := cs.BatchV1().Jobs(ns).Get(ctx, "shop-web-migrate", metav1.GetOptions{}); err == nil {
		t.Error("the pre-install hook Job was applied; kdrift runs no hooks")
	}
}

// TestSyncWavesAndHooks: a sync applies in sync-wave order (then by kind)
// and lists no hook of Argo CD or Helm.
func TestSyncWavesAndHooks(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "waves")
	cm := func(name, ann string) string {
		return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  annotations: {" + ann + "}\ndata: {k: v}\n"
	}
	manifest := cm("late", `argocd.argoproj.io/sync-wave: "5"`) +
		cm("early", `argocd.argoproj.io/sync-wave: "-1"`) +
		cm("middle", ``) +
		"---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: db-migrate\n  annotations: {argocd.argoproj.io/hook: PreSync}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: busybox}]\n" +
		cm("sync-hook", `argocd.argoproj.io/hook: Sync, argocd.argoproj.io/sync-wave: "-5"`) +
		cm("helm-hook", `helm.sh/hook: post-install`)
	repo := gittest.Init(t)
	repo.Commit("waves", map[string]string{
		".kdrift/app.yaml":      appYAML("waves", "deploy/waves", ns, false, true, ""),
		"deploy/waves/all.yaml": manifest,
	})
	e := newEngine(t, repo, nil)
	res, err := e.Sync(ctx, "waves", engine.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, o := range res.Objects {
		order = append(order, o.Ref.Name)
	}
	if got := strings.Join(order, " "); got != "early middle late" {
		t.Errorf("applied %q, want the waves' order early middle late and no hook", got)
	}
	a := appStatus(t, e, "waves")
	for _, r := range a.Resources {
		if strings.Contains(r.Ref.Name, "hook") || r.Ref.Name == "db-migrate" {
			t.Errorf("hook %s listed", r.Ref)
		}
	}
	if a.Sync != status.SyncSynced {
		t.Errorf("not Synced:\n%s", describe(a))
	}
}

// TestHelmCapabilitiesFromCluster: a chart renders with the destination
// cluster's version and the API versions it serves, as Argo CD renders it:
// the chart's ServiceMonitor is there because its CRD is served, and its
// Ingress names the apiserver's version.
func TestHelmCapabilitiesFromCluster(t *testing.T) {
	ctx := context.Background()
	enginetest.InstallCRDs(t, "servicemonitors.monitoring.coreos.com.yaml")
	ns := namespace(t, "helm-caps")
	repo := gittest.Init(t)
	files := chartFiles(t, "caps", "deploy/caps")
	files[".kdrift/app.yaml"] = appYAML("shop", "deploy/caps", ns, true, false, "")
	repo.Commit("chart", files)
	e := newEngine(t, repo, nil)
	res, err := e.Sync(ctx, "shop", engine.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != "" {
		t.Fatal(res.Err)
	}
	a := appStatus(t, e, "shop")
	if _, ok := resource(a, "ServiceMonitor", "shop"); !ok {
		t.Errorf("the chart's ServiceMonitor was not rendered though its CRD is served:\n%s", describe(a))
	}
	v, err := enginetest.Clientset(t).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	ing, err := enginetest.Clientset(t).NetworkingV1().Ingresses(ns).Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ing.Annotations["kube-version"]; got != v.GitVersion {
		t.Errorf(".Capabilities.KubeVersion.Version = %q, want the apiserver's %q", got, v.GitVersion)
	}
}
