package engine_test

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestColdCompareSendsNoDryRunWhenInSync: a new engine (nothing cached)
// compares an app kdrift synced with no dry-run at all, every object
// decided locally; a `kubectl scale` then costs that one object a
// dry-run, which finds the drift.
func TestColdCompareSendsNoDryRunWhenInSync(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "tiers")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":      appYAML("tiers", "deploy/tiers", ns, false, false, ""),
		"deploy/tiers/web.yaml":  deploymentYAML("web", 2),
		"deploy/tiers/rest.yaml": multiObject,
	})
	if _, err := newEngine(t, repo, nil).Sync(ctx, "tiers", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}

	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "tiers")
	if a.Sync != status.SyncSynced || len(a.Resources) != 5 {
		t.Fatalf("cold compare after sync: want Synced with 5 objects:\n%s", describe(a))
	}
	for _, r := range a.Resources {
		if r.Decided != status.DecidedLocal {
			t.Errorf("%s decided by %q, want %q", r.Ref, r.Decided, status.DecidedLocal)
		}
	}
	if st := e.Stats(); st.DryRuns != 0 || st.LocalCompares != 5 {
		t.Fatalf("cold compare of an app in sync: %d dry-runs and %d local decisions, want 0 and 5", st.DryRuns, st.LocalCompares)
	}

	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 7}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(ctx, "web", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	before := e.Stats()
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "tiers")
	r, _ := resource(a, "Deployment", "web")
	if _, ok := field(r, "/spec/replicas"); !ok || r.Status != status.ResourceOutOfSync || r.Decided != status.DecidedDryRun {
		t.Fatalf("after kubectl scale: want web OutOfSync on /spec/replicas, decided by the dry-run:\n%s", describe(a))
	}
	if got := e.Stats().DryRuns - before.DryRuns; got != 1 {
		t.Fatalf("a pass after one kubectl scale sent %d dry-runs, want 1", got)
	}
}

// TestLegacyObjectsWithoutAppLabelComparedLocally: an object a kdrift from
// before the App label applied lacks that label; the comparison ignores
// it, so tier 1 still decides the object locally instead of paying a
// dry-run until its next apply.
func TestLegacyObjectsWithoutAppLabelComparedLocally(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "tiers-legacy")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":      appYAML("legacy", "deploy/legacy", ns, false, false, ""),
		"deploy/legacy/web.yaml": deploymentYAML("web", 2),
	})
	if _, err := newEngine(t, repo, nil).Sync(ctx, "legacy", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	// What an older kdrift left: its Apply entry without the label.
	patch := []byte(`[{"op":"remove","path":"/metadata/labels/kdrift.dev~1app"}]`)
	d, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Patch(ctx, "web", types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: live.FieldManager})
	if err != nil {
		t.Fatal(err)
	}
	if _, has := d.Labels[apply.LabelApp]; has {
		t.Fatalf("the label is still there: %v", d.Labels)
	}

	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "legacy")
	r, _ := resource(a, "Deployment", "web")
	if a.Sync != status.SyncSynced || r.Decided != status.DecidedLocal {
		t.Fatalf("a legacy object in sync: want Synced, decided locally; got %s by %q:\n%s", a.Sync, r.Decided, describe(a))
	}
	if st := e.Stats(); st.DryRuns != 0 {
		t.Fatalf("%d dry-runs for a legacy object in sync, want 0", st.DryRuns)
	}
}
