package engine_test

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestJsonnetAppSyncedThenScaled: a Jsonnet app shaped like Argo CD's
// jsonnet-guestbook (params, a top-level argument, an extVar and a
// library folder) renders a Service and a Deployment, compares Synced
// after a sync and OutOfSync after a scale on the real apiserver.
func TestJsonnetAppSyncedThenScaled(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "jsonnet")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml": appYAML("guestbook", "jsonnet-guestbook", ns, false, false, `  jsonnet:
    extVars: [{name: env, value: prod}]
    tlas: [{name: replicas, value: "2", code: true}]
    libs: [lib]
`),
		"jsonnet-guestbook/params.libsonnet": `{ containerPort: 80, image: "registry.example/guestbook:0.2", name: "guestbook-ui", replicas: 1, servicePort: 80, type: "ClusterIP" }`,
		"jsonnet-guestbook/guestbook-ui.jsonnet": `local params = import 'params.libsonnet';
local labels = import 'labels.libsonnet';
function(replicas=params.replicas) [
  { apiVersion: "v1", kind: "Service", metadata: { name: params.name, labels: labels { env: std.extVar("env") } },
    spec: { ports: [{ port: params.servicePort, targetPort: params.containerPort }], selector: { app: params.name }, type: params.type } },
  { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: params.name, labels: labels },
    spec: { replicas: replicas, revisionHistoryLimit: 3, selector: { matchLabels: { app: params.name } },
      template: { metadata: { labels: { app: params.name } },
        spec: { containers: [{ image: params.image, name: params.name, ports: [{ containerPort: params.containerPort }] }] } } } },
]
`,
		"lib/labels.libsonnet": `{ team: "web" }`,
		".kdrift/empty.yaml":   appYAML("empty", "empty", ns, false, false, ""),
		"empty/README.md":      "# nothing deployed from here yet\n",
		".kdrift/txt.yaml":     appYAML("txt", "txt", ns, false, false, ""),
		"txt/deployment.txt":   deploymentYAML("txt", 1),
	})
	e := newEngine(t, repo, nil)
	res, err := e.Sync(ctx, "guestbook", engine.SyncOptions{})
	if err != nil {
		t.Fatalf("sync: %v\n%s", err, describe(res.Status))
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "guestbook")
	if a.Sync != status.SyncSynced || len(a.Resources) != 2 || a.NoObjects {
		t.Fatalf("after sync want Synced with the Service and the Deployment:\n%s", describe(a))
	}
	if _, ok := resource(a, "Deployment", "guestbook-ui"); !ok {
		t.Fatalf("no Deployment guestbook-ui:\n%s", describe(a))
	}
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "guestbook-ui", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(ctx, "guestbook-ui", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "guestbook")
	r, _ := resource(a, "Deployment", "guestbook-ui")
	if _, ok := field(r, "/spec/replicas"); a.Sync != status.SyncOutOfSync || !ok {
		t.Fatalf("after the scale want OutOfSync on /spec/replicas:\n%s", describe(a))
	}

	// A folder holding only a README is empty on purpose: Synced, 0
	// objects, and it says so. A folder of .txt manifests is an Error
	// naming them.
	if a := appStatus(t, e, "empty"); a.Sync != status.SyncSynced || !a.NoObjects || a.Objects() != 0 {
		t.Fatalf("empty app:\n%s", describe(a))
	}
	a = appStatus(t, e, "txt")
	if a.Sync != status.SyncError || !strings.Contains(a.Error, "txt/deployment.txt") || !strings.Contains(a.Error, "reads only .yaml, .yml, .json and .jsonnet") {
		t.Fatalf("txt app:\n%s", describe(a))
	}
}
