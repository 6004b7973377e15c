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

const multiObject = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  LOG_LEVEL: info
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port: {number: 80}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 1
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: registry.example/db:16
        env:
        - name: MODE
          value: primary
`

// TestSyncedMultiObjectApp: right after a sync, a real-world app compares
// Synced with zero drifted fields, and a second pass sends no dry-run.
func TestSyncedMultiObjectApp(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "multi")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":      appYAML("multi", "deploy/multi", ns, false, false, ""),
		"deploy/multi/web.yaml":  deploymentYAML("web", 2),
		"deploy/multi/api.yaml":  deploymentYAML("api", 3),
		"deploy/multi/rest.yaml": multiObject,
	})
	e := newEngine(t, repo, nil)
	res, err := e.Sync(ctx, "multi", engine.SyncOptions{})
	if err != nil {
		t.Fatalf("sync: %v\n%s", err, describe(res.Status))
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "multi")
	if a.Sync != status.SyncSynced || a.DriftedObjects() != 0 || len(a.Resources) != 6 {
		t.Fatalf("after sync want Synced with 6 objects and 0 drift:\n%s", describe(a))
	}
	for _, r := range a.Resources {
		if len(r.Fields) != 0 {
			t.Fatalf("%s has fields after sync:\n%s", r.Ref, describe(a))
		}
	}
	before := e.Stats().DryRuns
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.Stats().DryRuns - before; got != 0 {
		t.Fatalf("a pass with nothing changed sent %d dry-runs, want 0", got)
	}
}

// TestScaleDetectedHealedFrozen: a `kubectl scale` is drift owned by a
// person through the scale subresource; self-heal puts it back; a frozen
// app detects the same drift and leaves it.
func TestScaleDetectedHealedFrozen(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "scale")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":      appYAML("render", "deploy/render", ns, true, false, ""),
		"deploy/render/dep.yaml": deploymentYAML("render", 6),
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "render", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	deps := enginetest.Clientset(t).AppsV1().Deployments(ns)
	scale := func(n int32) {
		t.Helper()
		s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "render", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
		if _, err := deps.UpdateScale(ctx, "render", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
			t.Fatal(err)
		}
	}
	replicas := func() int32 {
		t.Helper()
		d, err := deps.Get(ctx, "render", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}

	// Frozen first: detect, never heal.
	repo.Commit("freeze", map[string]string{".kdrift/apps.yaml": appYAML("render", "deploy/render", ns, true, false, `  freeze:
    reason: INC-1234 render workers 6->12
    by: Lao Li <lao.li@example.com>
    at: "2026-01-01T00:00:00Z"
`)})
	scale(12)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "render")
	r, _ := resource(a, "Deployment", "render")
	f, ok := field(r, "/spec/replicas")
	if a.Sync != status.SyncOutOfSync || a.SelfHeal != status.SelfHealFrozen || !ok {
		t.Fatalf("frozen app must still detect the scale:\n%s", describe(a))
	}
	if f.Class != status.OwnerPerson || len(f.Owners) != 1 || f.Owners[0].Manager != "kubectl" || f.Owners[0].Operation != "Update" || f.Owners[0].Subresource != "scale" {
		t.Fatalf("owner of /spec/replicas = %+v class %s, want kubectl Update/scale person", f.Owners, f.Class)
	}
	if replicas() != 12 || a.OutOfSyncSince == nil {
		t.Fatalf("frozen app healed (replicas %d) or has no OutOfSyncSince", replicas())
	}
	det, err := e.Detail(ctx, "render", r.Ref)
	if err != nil {
		t.Fatal(err)
	}
	owned := false
	for _, l := range det.Live {
		if l.Path == "/spec/replicas" && len(l.Owners) == 1 && l.Owners[0].Manager == "kubectl" {
			owned = true
		}
	}
	if !owned || len(det.Desired) == 0 || det.Resource.Ref != r.Ref {
		t.Fatalf("Detail: want desired lines and a live /spec/replicas line owned by kubectl: %+v", det)
	}

	// Unfrozen: self-heal puts 6 back.
	repo.Commit("unfreeze", map[string]string{".kdrift/apps.yaml": appYAML("render", "deploy/render", ns, true, false, "")})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := replicas(); got != 6 {
		t.Fatalf("replicas after self-heal = %d, want 6:\n%s", got, describe(appStatus(t, e, "render")))
	}
	if a := appStatus(t, e, "render"); a.Sync != status.SyncSynced || a.OutOfSyncSince != nil {
		t.Fatalf("after heal:\n%s", describe(a))
	}
}

// TestIgnoreReleasesOwnership is fact 4 through the engine: Git says 12
// replicas, kdrift owns them alone; an ignore rule on /spec/replicas
// arrives and Git drops the field. The Deployment keeps 12 replicas and
// kdrift no longer owns the field.
func TestIgnoreReleasesOwnership(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "ignore")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":      appYAML("render-ignore", "deploy/render", ns, true, false, ""),
		"deploy/render/dep.yaml": deploymentYAML("render", 12),
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "render-ignore", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	repo.Commit("ignore replicas", map[string]string{".kdrift/apps.yaml": appYAML("render-ignore", "deploy/render", ns, true, false, `  ignoreDifferences:
  - group: apps
    kind: Deployment
    jsonPointers: [/spec/replicas]
  - managedFieldsManagers: [cloud-controller]
`)})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(ctx, "render", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 12 {
		t.Fatalf("replicas = %d, want 12 (fact 4: never default to 1)", *d.Spec.Replicas)
	}
	for _, mf := range d.ManagedFields {
		if mf.Manager == "kdrift" && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), "f:replicas") {
			t.Fatalf("kdrift still owns spec.replicas: %s", mf.FieldsV1.GetRawString())
		}
	}
	// A person scales: ignored, not drift.
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "render", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 20}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(ctx, "render", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if a := appStatus(t, e, "render-ignore"); a.Sync != status.SyncSynced {
		t.Fatalf("an ignored field must not be drift:\n%s", describe(a))
	}
}
