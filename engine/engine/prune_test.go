package engine_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// gone reports whether a ConfigMap is deleted or being deleted (foreground
// deletion waits for a garbage collector this control plane does not run).
func gone(t *testing.T, ns, name string) bool {
	c, err := enginetest.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.DeletionTimestamp != nil
}

// TestPrune: a tracked object that left Git is Extraneous; it is deleted
// only when prune is on (or sync --prune) and the app is not frozen, and
// an untracked object is never touched.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "prune")
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  a: \"1\"\n"
	}
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml":     appYAML("prune", "deploy/app", ns, true, false, ""),
		"deploy/app/keep.yaml": cm("keep"),
		"deploy/app/old.yaml":  cm("old"),
	})
	// A look-alike nobody tracks.
	if _, err := enginetest.Clientset(t).CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hand-made"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "prune", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	repo.Git("rm", "-q", "deploy/app/old.yaml")
	repo.Git("commit", "-qm", "drop old")

	// Prune off: reported, kept.
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "prune")
	if r, ok := resource(a, "ConfigMap", "old"); !ok || r.Status != status.ResourceExtraneous {
		t.Fatalf("want old Extraneous:\n%s", describe(a))
	}
	if _, ok := resource(a, "ConfigMap", "hand-made"); ok {
		t.Fatalf("an untracked object is none of kdrift's business:\n%s", describe(a))
	}
	if gone(t, ns, "old") {
		t.Fatal("pruned with prune off")
	}

	// Prune on but frozen: kept.
	repo.Commit("prune on, frozen", map[string]string{".kdrift/app.yaml": appYAML("prune", "deploy/app", ns, true, true, `  freeze:
    reason: INC-9
    by: Lao Li <lao.li@example.com>
    at: "2026-01-01T00:00:00Z"
`)})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if gone(t, ns, "old") {
		t.Fatal("pruned while frozen")
	}
	if _, err := e.Sync(ctx, "prune", engine.SyncOptions{Prune: true}); err == nil {
		t.Fatal("sync of a frozen app must be refused without AllowFrozen")
	}

	// Dry run: planned, kept.
	res, err := e.Sync(ctx, "prune", engine.SyncOptions{Prune: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 0 || gone(t, ns, "old") {
		// Frozen: even the plan prunes nothing.
		t.Fatalf("dry-run on a frozen app: %+v", res.Objects)
	}

	// Prune on, not frozen: deleted; the look-alike stays.
	repo.Commit("unfreeze", map[string]string{".kdrift/app.yaml": appYAML("prune", "deploy/app", ns, true, true, "")})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if !gone(t, ns, "old") {
		t.Fatalf("not pruned:\n%s", describe(appStatus(t, e, "prune")))
	}
	if gone(t, ns, "hand-made") || gone(t, ns, "keep") {
		t.Fatal("prune touched an object it must not")
	}
}

// TestRequiresReplace: a changed immutable field (a Deployment's selector)
// is reported as RequiresReplace and never forced.
func TestRequiresReplace(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "immutable")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml":    appYAML("immutable", "deploy/app", ns, true, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 1),
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "immutable", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := deploymentYAML("web", 1)
	changed = strings.ReplaceAll(changed, "{app: web}", "{app: web2}")
	repo.Commit("new selector", map[string]string{"deploy/app/dep.yaml": changed})
	res, err := e.Sync(ctx, "immutable", engine.SyncOptions{})
	a := res.Status
	r, ok := resource(a, "Deployment", "web")
	if !ok || r.Status != status.ResourceRequiresReplace || r.Message == "" {
		t.Fatalf("want RequiresReplace with the apiserver's message (sync err %v):\n%s", err, describe(a))
	}
	d, gerr := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if d.Spec.Selector.MatchLabels["app"] != "web" {
		t.Fatal("the selector changed: kdrift must never replace silently")
	}
}

// TestPruneAKindThatLeftGitInAnotherProcess: the only Service of an app
// leaves Git; a kdrift that never applied it (a CLI sync, the engine after
// a restart) still finds and prunes it, and leaves another app's alone.
func TestPruneAKindThatLeftGitInAnotherProcess(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "prune-kind")
	svc := func(name string) string {
		return "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + name + "\nspec:\n  ports:\n  - port: 80\n"
	}
	repo := gittest.Init(t)
	repo.Commit("apps", map[string]string{
		".kdrift/web.yaml":     appYAML("web", "deploy/web", ns, false, false, ""),
		".kdrift/other.yaml":   appYAML("other", "deploy/other", ns, false, false, ""),
		"deploy/web/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
		"deploy/web/svc.yaml":  svc("web"),
		"deploy/other/svc.yml": svc("other"),
	})
	first := newEngine(t, repo, nil)
	for _, a := range []string{"web", "other"} {
		if _, err := first.Sync(ctx, a, engine.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	repo.Git("rm", "-q", "deploy/web/svc.yaml")
	repo.Git("commit", "-qm", "web: no Service any more")

	second := newEngine(t, repo, nil)
	plan, err := second.Sync(ctx, "web", engine.SyncOptions{Prune: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(describe(appStatus(t, second, "web")), "Service") {
		t.Fatalf("the dry-run plan does not show the Service that left Git: %+v", plan.Objects)
	}
	if _, err := second.Sync(ctx, "web", engine.SyncOptions{Prune: true}); err != nil {
		t.Fatal(err)
	}
	services := enginetest.Clientset(t).CoreV1().Services(ns)
	eventually(t, "Service web pruned", func() bool {
		s, err := services.Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && s.DeletionTimestamp != nil
	})
	if s, err := services.Get(ctx, "other", metav1.GetOptions{}); err != nil || s.DeletionTimestamp != nil {
		t.Fatalf("another app's Service was touched: %v", err)
	}
}
