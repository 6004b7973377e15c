package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

const replicasFreeze = `  freezes:
  - resource:
      group: apps
      kind: Deployment
      name: render
    fields: [/spec/replicas]
    reason: INC-1234 render workers hand-scaled
    by: Lao Li <lao.li@example.com>
    at: "2026-01-01T00:00:00Z"
`

// TestFieldFreezeHoldsScaleWhileTheRestHeals: with /spec/replicas of one
// Deployment frozen, self-heal leaves a `kubectl scale` of it standing
// (and never lets the field fall back to its default while kdrift let go
// of it), while a hand edit of the same Deployment's image and of a
// ConfigMap of the same app are healed. The frozen drift stays visible,
// marked with the freeze; a sync lists it as left frozen, and only a
// forced sync puts it back.
func TestFieldFreezeHoldsScaleWhileTheRestHeals(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "field-freeze")
	repo := gittest.Init(t)
	files := map[string]string{
		".kdrift/apps.yaml":      appYAML("render", "deploy/render", ns, true, true, ""),
		"deploy/render/dep.yaml": deploymentYAML("render", 6),
		"deploy/render/cm.yaml":  cmYAML("settings"),
	}
	repo.Commit("app", files)
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "render", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := enginetest.Clientset(t)
	deps := cs.AppsV1().Deployments(ns)
	get := func() (int32, string, []metav1.ManagedFieldsEntry) {
		t.Helper()
		d, err := deps.Get(ctx, "render", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image, d.ManagedFields
	}
	setImage := func(image string) {
		t.Helper()
		patch := `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"` + image + `"}]}}}}`
		if _, err := deps.Patch(ctx, "render", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
			t.Fatal(err)
		}
	}

	// Frozen while kdrift alone owns the field: the next heal of the
	// object hands it over instead of dropping it (fact 4).
	repo.Commit("freeze replicas", map[string]string{".kdrift/apps.yaml": appYAML("render", "deploy/render", ns, true, true, replicasFreeze)})
	setImage("registry.example/render:hand")
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	n, image, mf := get()
	if n != 6 || image != "registry.example/render:1.0" {
		t.Fatalf("after the heal: replicas %d image %s, want 6 and the image from Git:\n%s", n, image, describe(appStatus(t, e, "render")))
	}
	for _, m := range mf {
		if m.Manager == "kdrift" && m.FieldsV1 != nil && strings.Contains(m.FieldsV1.GetRawString(), "f:replicas") {
			t.Fatalf("kdrift still owns the frozen spec.replicas: %s", m.FieldsV1.GetRawString())
		}
	}

	// A person scales and edits the image and the ConfigMap.
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "render", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 12}}
	if _, err := deps.UpdateScale(ctx, "render", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	setImage("registry.example/render:hand2")
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.MergePatchType, []byte(`{"data":{"a":"by-hand"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	n, image, _ = get()
	if n != 12 || image != "registry.example/render:1.0" {
		t.Fatalf("replicas %d image %s: want the scale held (12) and the image healed:\n%s", n, image, describe(appStatus(t, e, "render")))
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["a"] == "by-hand" {
		t.Fatal("the ConfigMap's hand edit was not healed")
	}
	a := appStatus(t, e, "render")
	r, _ := resource(a, "Deployment", "render")
	f, ok := field(r, "/spec/replicas")
	if a.Sync != status.SyncOutOfSync || !ok || f.Frozen == nil || f.Frozen.By != "Lao Li <lao.li@example.com>" || !strings.Contains(f.Frozen.Reason, "INC-1234") || !f.IsDrift() {
		t.Fatalf("the frozen drift must stay visible and marked:\n%s", describe(a))
	}
	if len(f.Owners) != 1 || f.Owners[0].Manager != "kubectl" {
		t.Fatalf("owner of the frozen field = %+v, want kubectl", f.Owners)
	}
	if r.FrozenDrift() != 1 || r.Drifted() != 1 {
		t.Fatalf("frozen drift %d of %d, want 1 of 1:\n%s", r.FrozenDrift(), r.Drifted(), describe(a))
	}
	if len(a.Fights) != 0 {
		t.Fatalf("a frozen field is no fight: %+v", a.Fights)
	}

	// A sync applies the rest and lists what it left frozen.
	res, err := e.Sync(ctx, "render", engine.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.LeftFrozen) != 1 || res.LeftFrozen[0].Ref.Name != "render" || len(res.LeftFrozen[0].Fields) != 1 || res.LeftFrozen[0].Fields[0] != "/spec/replicas" {
		t.Fatalf("LeftFrozen = %+v", res.LeftFrozen)
	}
	if n, _, _ := get(); n != 12 {
		t.Fatalf("a sync without --force overwrote the frozen field: %d", n)
	}
	// Forced, it puts Git back.
	res, err = e.Sync(ctx, "render", engine.SyncOptions{OverwriteFrozen: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := get(); n != 6 || len(res.LeftFrozen) != 0 {
		t.Fatalf("forced sync: replicas %d, left frozen %+v", n, res.LeftFrozen)
	}
}

// TestResourceFreezeHoldsHealAndPrune: a whole frozen resource is neither
// healed nor pruned, and says why.
func TestResourceFreezeHoldsHealAndPrune(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "resource-freeze")
	repo := gittest.Init(t)
	freeze := `  freezes:
  - resource:
      kind: ConfigMap
      name: held
    reason: INC-9 keep the hand fix
    by: Lao Li <lao.li@example.com>
    at: "2026-01-01T00:00:00Z"
`
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":    appYAML("held", "deploy/held", ns, true, true, ""),
		"deploy/held/cm.yaml":  cmYAML("held"),
		"deploy/held/cm2.yaml": cmYAML("other"),
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "held", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	repo.Commit("freeze", map[string]string{".kdrift/apps.yaml": appYAML("held", "deploy/held", ns, true, true, freeze)})
	cms := enginetest.Clientset(t).CoreV1().ConfigMaps(ns)
	if _, err := cms.Patch(ctx, "held", types.MergePatchType, []byte(`{"data":{"a":"by-hand"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["a"] != "by-hand" {
		t.Fatal("a frozen resource was healed")
	}
	r, _ := resource(appStatus(t, e, "held"), "ConfigMap", "held")
	if r.Frozen == nil || r.FrozenDrift() == 0 {
		t.Fatalf("the frozen resource is not marked:\n%s", describe(appStatus(t, e, "held")))
	}
	// Git drops it: prune holds it back while frozen.
	repo.Git("rm", "-q", "deploy/held/cm.yaml")
	repo.Commit("drop held", nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); err != nil {
		t.Fatalf("a frozen resource was pruned: %v", err)
	}
	r, _ = resource(appStatus(t, e, "held"), "ConfigMap", "held")
	if r.Status != status.ResourceExtraneous || !strings.Contains(r.Message, "not pruned: frozen") || !strings.Contains(r.Message, "INC-9") {
		t.Fatalf("the held prune does not say why:\n%s", describe(appStatus(t, e, "held")))
	}
}

// TestFreezeExpiringAnnounced: a field freeze that ends within fifteen
// minutes is announced as FreezeExpiring, naming the object, the freeze
// and what resuming puts back; passes that change nothing do not repeat
// it.
func TestFreezeExpiringAnnounced(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "freeze-expiring")
	now := time.Now().UTC().Truncate(time.Second)
	freeze := `  freezes:
  - resource: {group: apps, kind: Deployment, name: render}
    fields: [/spec/replicas]
    reason: INC-77 hand-scaled
    by: Lao Li <lao.li@example.com>
    at: "` + now.Add(-time.Hour).Format(time.RFC3339) + `"
    until: "` + now.Add(10*time.Minute).Format(time.RFC3339) + `"
`
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":      appYAML("expiring", "deploy/render", ns, true, false, freeze),
		"deploy/render/dep.yaml": deploymentYAML("render", 6),
	})
	e := newEngine(t, repo, nil)
	events, stop := e.SubscribeAll()
	defer stop()
	if _, err := e.Sync(ctx, "expiring", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "render", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 12}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(ctx, "render", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	var got []status.FreezeExpiring
	for ev := range events {
		if fe, ok := ev.(status.FreezeExpiring); ok {
			got = append(got, fe)
		}
	}
	if len(got) == 0 {
		t.Fatal("no FreezeExpiring event")
	}
	seen := map[string]bool{}
	for _, g := range got {
		k := strings.Join(g.Changes, ";")
		if seen[k] {
			t.Fatalf("the same announcement came twice: %+v", got)
		}
		seen[k] = true
	}
	fe := got[len(got)-1]
	if fe.Resource == nil || fe.Resource.Name != "render" || fe.Freeze.Reason != "INC-77 hand-scaled" || len(fe.Changes) != 1 || fe.Changes[0] != "Deployment/"+ns+"/render /spec/replicas: 12 → 6" {
		t.Fatalf("FreezeExpiring = %+v", fe)
	}
}
