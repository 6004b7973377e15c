package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

// TestNeverOlderAcrossRestarts: the newest revision applied to an App is
// kept on its AppStatus (a real CRD on the real apiserver), so a
// restarted engine whose upstream was force-pushed to an older commit
// neither heals nor prunes, a plain sync is refused with an OlderError,
// and only a sync with AllowOlder and a reason applies it; the reason is
// recorded, and a later restart heals from the accepted revision. An
// engine without the persisted mark (the old behaviour) would apply the
// older commit at once.
func TestNeverOlderAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "never-older")
	home := namespace(t, "never-older-home")
	if err := publish.Ensure(ctx, enginetest.Clientset(t), enginetest.Dynamic(t), home); err != nil {
		t.Fatal(err)
	}
	u := newUpstream(t, map[string]string{
		".kdrift/apps.yaml":   appYAML("older", "deploy/app", ns, true, true, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 2),
	})
	first := u.mine.Git("rev-parse", "HEAD")
	second := u.theirs.Commit("three replicas", map[string]string{"deploy/app/dep.yaml": deploymentYAML("web", 3)})
	u.theirs.Git("push", "-q", "origin", "main")

	withMarks := func(e *engine.Engine) *engine.Engine {
		e.SetMarks(publish.NewMarks(enginetest.Dynamic(t), home, e.RepoIdentity()))
		return e
	}
	e1 := withMarks(newEngine(t, u.mine, nil))
	if err := e1.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := replicasOf(t, ns, "web"); got != 3 {
		t.Fatalf("replicas %d, want 3 from %s: %s", got, second, describe(appStatus(t, e1, "older")))
	}
	marks := publish.NewMarks(enginetest.Dynamic(t), home, e1.RepoIdentity())
	if m, err := marks.Mark(ctx, "older"); err != nil || m.Revision != second {
		t.Fatalf("persisted mark %+v %v, want %s", m, err, second)
	}

	// The upstream is rewound to the first commit; the controller restarts.
	u.theirs.Git("reset", "-q", "--hard", first)
	u.theirs.Git("push", "-q", "--force", "origin", "main")
	scaleAs(t, ns, "web", "kubectl", 7)
	e2 := withMarks(newEngine(t, u.mine, nil))
	if err := e2.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e2, "older")
	if got := replicasOf(t, ns, "web"); got != 7 || a.Revision != first || !strings.Contains(a.Error, "moved back") || !strings.Contains(a.Error, "--allow-older") {
		t.Fatalf("replicas %d revision %s error %q: a restarted engine must refuse the older upstream and say what to do", got, a.Revision, a.Error)
	}
	_, err := e2.Sync(ctx, "older", engine.SyncOptions{})
	var oe *engine.OlderError
	if !errors.As(err, &oe) || oe.Applied != second || oe.Revision != first {
		t.Fatalf("sync of the older revision: %v, want an OlderError naming %s", err, second)
	}
	if got := replicasOf(t, ns, "web"); got != 7 {
		t.Fatalf("replicas %d: a refused sync applied", got)
	}
	if _, err := e2.Sync(ctx, "older", engine.SyncOptions{AllowOlder: true}); err == nil || !strings.Contains(err.Error(), "needs a reason") {
		t.Fatalf("AllowOlder without a reason: %v, want refused", err)
	}
	if res, err := e2.Sync(ctx, "older", engine.SyncOptions{DryRun: true}); err != nil || len(res.Objects) != 1 {
		t.Fatalf("dry run: %+v %v, want the plan", res.Objects, err)
	}

	// Without the persisted mark (the old, in-memory mark) a restarted
	// engine applies the older commit at once: what the mark prevents.
	probe := newEngine(t, u.mine, func(o *engine.Options) { o.ReadOnly = true })
	if res, err := probe.Sync(ctx, "older", engine.SyncOptions{DryRun: true}); err != nil || len(res.Objects) != 1 {
		t.Fatalf("an engine without marks would apply %+v (%v)", res.Objects, err)
	}

	if _, err := e2.Sync(ctx, "older", engine.SyncOptions{AllowOlder: true, OlderReason: "INC-9 roll back to two replicas", OlderBy: "Lao Li"}); err != nil {
		t.Fatal(err)
	}
	if got := replicasOf(t, ns, "web"); got != 2 {
		t.Fatalf("replicas %d after sync --allow-older, want 2", got)
	}
	m, err := marks.Mark(ctx, "older")
	if err != nil || m.Revision != first || m.Older == nil || m.Older.From != second || m.Older.Reason != "INC-9 roll back to two replicas" || m.Older.By != "Lao Li" {
		t.Fatalf("mark after --allow-older: %+v %v", m, err)
	}
	obj, err := enginetest.Dynamic(t).Resource(publish.GVR).Namespace(home).Get(ctx, publish.ObjectName(e2.RepoIdentity(), "older"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var raw status.Mark
	if err := json.Unmarshal([]byte(obj.GetAnnotations()[publish.AnnotationApplied]), &raw); err != nil || raw.Revision != first {
		t.Fatalf("annotation %s: %q", publish.AnnotationApplied, obj.GetAnnotations()[publish.AnnotationApplied])
	}

	// Restarted again: it heals from the accepted revision.
	scaleAs(t, ns, "web", "kubectl", 5)
	e3 := withMarks(newEngine(t, u.mine, nil))
	if err := e3.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got, a := replicasOf(t, ns, "web"), appStatus(t, e3, "older"); got != 2 || a.Error != "" {
		t.Fatalf("replicas %d error %q: after the person's decision self-heal goes on", got, a.Error)
	}

	// A mark that cannot be read (here: not a mark) stops applying: kdrift
	// cannot tell whether the revision is older.
	patch := []byte(`{"metadata":{"annotations":{"` + publish.AnnotationApplied + `":"HEAD~3"}}}`)
	if _, err := enginetest.Dynamic(t).Resource(publish.GVR).Namespace(home).Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	scaleAs(t, ns, "web", "kubectl", 4)
	bad := withMarks(newEngine(t, u.mine, nil))
	if _, err := bad.Sync(ctx, "older", engine.SyncOptions{}); err == nil || !strings.Contains(err.Error(), "cannot read the revision") || !strings.Contains(err.Error(), "not a revision mark") {
		t.Fatalf("sync with an unreadable mark: %v, want refused", err)
	}
	if got := replicasOf(t, ns, "web"); got != 4 {
		t.Fatalf("replicas %d: applied although the mark could not be read", got)
	}
}
