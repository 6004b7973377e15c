package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

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
	if b, err := json.Marshal(obj.Object["status"].(map[string]any)[publish.StatusMarkField]); err != nil || json.Unmarshal(b, &raw) != nil || raw.Revision != first {
		t.Fatalf("status.%s: %v", publish.StatusMarkField, obj.Object["status"])
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
	patch := []byte(`{"status":{"` + publish.StatusMarkField + `":{"revision":"HEAD~3"}}}`)
	if _, err := enginetest.Dynamic(t).Resource(publish.GVR).Namespace(home).Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
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

// TestViewerCannotRewriteStatus: with the status subresource, a
// ServiceAccount holding the viewers' rights (patch on appstatuses, for
// the fetch annotation; not on appstatuses/status) cannot change the
// published status nor the applied mark, while the publisher's writes
// land; checked with a real token against the real apiserver's RBAC.
func TestViewerCannotRewriteStatus(t *testing.T) {
	ctx := context.Background()
	home := namespace(t, "viewer-status")
	cs, dyn := enginetest.Clientset(t), enginetest.Dynamic(t)
	if err := publish.Ensure(ctx, cs, dyn, home); err != nil {
		t.Fatal(err)
	}
	const id = "https://git.example/shop#main"
	rev := strings.Repeat("ab", 20)
	if _, err := publish.NewPublisher(dyn, home, id).Publish(ctx, status.AppStatus{Name: "web", Sync: status.SyncSynced, Revision: rev}); err != nil {
		t.Fatal(err)
	}
	marks := publish.NewMarks(dyn, home, id)
	if err := marks.SetMark(ctx, "web", status.Mark{Revision: rev}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(home).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "kdrift-viewer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{publish.Group}, Resources: []string{"appstatuses"}, Verbs: []string{"get", "list", "watch", "patch"}},
	}}
	if _, err := cs.RbacV1().Roles(home).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kdrift-viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "kdrift-viewer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "viewer", Namespace: home}}}
	if _, err := cs.RbacV1().RoleBindings(home).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", enginetest.TokenKubeconfig(t, home, "viewer"))
	if err != nil {
		t.Fatal(err)
	}
	vdyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	name := publish.ObjectName(id, "web")
	forged := []byte(`{"status":{"sync":"Synced","appliedMark":{"revision":"` + strings.Repeat("cd", 20) + `"}}}`)
	vc := vdyn.Resource(publish.GVR).Namespace(home)
	if _, err := vc.Patch(ctx, name, types.MergePatchType, forged, metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Fatalf("viewer patching the status subresource: %v, want forbidden", err)
	}
	// Through the object the status is ignored; the fetch annotation is
	// what a viewer may write.
	withAnn := []byte(`{"metadata":{"annotations":{"` + publish.AnnotationFetch + `":"abc"}},"status":{"sync":"OutOfSync","appliedMark":{"revision":"` + strings.Repeat("cd", 20) + `"}}}`)
	if _, err := vc.Patch(ctx, name, types.MergePatchType, withAnn, metav1.PatchOptions{}); err != nil {
		t.Fatalf("viewer writing the fetch annotation: %v", err)
	}
	obj, err := dyn.Resource(publish.GVR).Namespace(home).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.Object["status"].(map[string]any)["sync"]; got != string(status.SyncSynced) {
		t.Fatalf("status.sync %v: a viewer rewrote the status", got)
	}
	if m, err := marks.Mark(ctx, "web"); err != nil || m.Revision != rev {
		t.Fatalf("mark %+v %v: a viewer moved it", m, err)
	}
	if obj.GetAnnotations()[publish.AnnotationFetch] != "abc" {
		t.Fatalf("fetch annotation not written: %v", obj.GetAnnotations())
	}
}
