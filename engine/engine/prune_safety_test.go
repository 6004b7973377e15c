package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

func cmYAML(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  a: \"1\"\n"
}

// trackedApp reads a ConfigMap's app annotation; "" when it is gone or
// being deleted.
func trackedApp(t *testing.T, ns, name string) string {
	t.Helper()
	c, err := enginetest.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if c.DeletionTimestamp != nil {
		return ""
	}
	return c.Annotations[apply.AnnotationApp]
}

// TestPruneSwapBetweenApps: two apps swap an object each in one commit;
// with prune and self-heal on, neither object is ever deleted, and each is
// adopted by the app that renders it now.
func TestPruneSwapBetweenApps(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "prune-swap")
	repo := gittest.Init(t)
	repo.Commit("apps", map[string]string{
		".kdrift/a.yaml":   appYAML("a", "deploy/a", ns, true, true, ""),
		".kdrift/b.yaml":   appYAML("b", "deploy/b", ns, true, true, ""),
		"deploy/a/x.yaml":  cmYAML("obj-x"),
		"deploy/a/a1.yaml": cmYAML("a1"),
		"deploy/b/y.yaml":  cmYAML("obj-y"),
		"deploy/b/b1.yaml": cmYAML("b1"),
	})
	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if trackedApp(t, ns, "obj-x") != "a" || trackedApp(t, ns, "obj-y") != "b" {
		t.Fatalf("setup: x must be a's, y b's:\n%s\n%s", describe(appStatus(t, e, "a")), describe(appStatus(t, e, "b")))
	}
	repo.Git("mv", "deploy/a/x.yaml", "deploy/b/x.yaml")
	repo.Git("mv", "deploy/b/y.yaml", "deploy/a/y.yaml")
	repo.Git("commit", "-qm", "swap x and y")
	// Each app on its own first, while the other has not adopted yet: the
	// object that left one app is still tracked as that app's.
	for _, n := range []string{"a", "b"} {
		res, err := e.Sync(ctx, n, engine.SyncOptions{Prune: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Objects {
			if o.Action == engine.ActionPrune {
				t.Fatalf("sync of %s pruned %s, which another app renders now", n, o.Ref)
			}
		}
		if trackedApp(t, ns, "obj-x") == "" || trackedApp(t, ns, "obj-y") == "" {
			t.Fatalf("a moved object was pruned:\n%s\n%s", describe(appStatus(t, e, "a")), describe(appStatus(t, e, "b")))
		}
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := trackedApp(t, ns, "obj-x"); got != "b" {
		t.Fatalf("x is tracked as %q's, want adopted by b", got)
	}
	if got := trackedApp(t, ns, "obj-y"); got != "a" {
		t.Fatalf("y is tracked as %q's, want adopted by a", got)
	}
	for _, n := range []string{"a", "b"} {
		if a := appStatus(t, e, n); a.Sync != status.SyncSynced {
			t.Fatalf("after the swap:\n%s", describe(a))
		}
	}
}

// TestPruneTwoRepositoriesSameAppName: an app named web in two
// repositories, same namespace: neither prunes the other's objects, and an
// object tracked before repositories were recorded is shown, not pruned.
func TestPruneTwoRepositoriesSameAppName(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "prune-repos")
	one, two := gittest.Init(t), gittest.Init(t)
	one.Commit("web", map[string]string{
		".kdrift/web.yaml":    appYAML("web", "deploy/web", ns, true, true, ""),
		"deploy/web/a.yaml":   cmYAML("one-a"),
		"deploy/web/b.yaml":   cmYAML("one-b"),
		"deploy/web/c.yaml":   cmYAML("one-c"),
		"deploy/web/old.yaml": cmYAML("one-old"),
	})
	two.Commit("web", map[string]string{
		".kdrift/web.yaml":  appYAML("web", "deploy/web", ns, true, true, ""),
		"deploy/web/a.yaml": cmYAML("two-a"),
	})
	e1, e2 := newEngine(t, one, nil), newEngine(t, two, nil)
	if e1.RepoIdentity() == e2.RepoIdentity() || e1.RepoIdentity() == "" {
		t.Fatalf("two repositories share identity %q", e1.RepoIdentity())
	}
	for _, e := range []*engine.Engine{e1, e2, e1} {
		if _, err := e.Sync(ctx, "web", engine.SyncOptions{Prune: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"one-a", "one-b", "one-old", "two-a"} {
		if trackedApp(t, ns, n) != "web" {
			t.Fatalf("%s was pruned by the other repository's app", n)
		}
	}
	if _, ok := resource(appStatus(t, e1, "web"), "ConfigMap", "two-a"); ok {
		t.Fatalf("another repository's object is none of this app's business:\n%s", describe(appStatus(t, e1, "web")))
	}
	// The second repository starts rendering one of the first's objects:
	// never applied over, and the sync says so.
	two.Commit("take one-a", map[string]string{"deploy/web/b.yaml": cmYAML("one-a")})
	if _, err := e2.Sync(ctx, "web", engine.SyncOptions{}); err == nil || !strings.Contains(describe(appStatus(t, e2, "web")), "is tracked by repository "+e1.RepoIdentity()) {
		t.Fatalf("sync over another repository's object: err = %v\n%s", err, describe(appStatus(t, e2, "web")))
	}
	if c, err := enginetest.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "one-a", metav1.GetOptions{}); err != nil || c.Annotations[apply.AnnotationRepo] != e1.RepoIdentity() {
		t.Fatalf("another repository applied over one-a: %v %v", err, c.Annotations)
	}
	two.Git("rm", "-q", "deploy/web/b.yaml")
	two.Git("commit", "-qm", "give one-a back")

	// An object tracked by an older kdrift: no repository annotation.
	legacy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns,
		Labels:      map[string]string{apply.LabelManagedBy: apply.LabelManagedByValue},
		Annotations: map[string]string{apply.AnnotationApp: "web"}}}
	if _, err := enginetest.Clientset(t).CoreV1().ConfigMaps(ns).Create(ctx, legacy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one.Git("rm", "-q", "deploy/web/old.yaml")
	one.Git("commit", "-qm", "drop old")
	if _, err := e1.Sync(ctx, "web", engine.SyncOptions{Prune: true}); err != nil {
		t.Fatal(err)
	}
	if !gone(t, ns, "one-old") {
		t.Fatalf("one-old not pruned:\n%s", describe(appStatus(t, e1, "web")))
	}
	a := appStatus(t, e1, "web")
	r, ok := resource(a, "ConfigMap", "legacy")
	if !ok || r.Status != status.ResourceExtraneous || !strings.Contains(r.Message, apply.AnnotationRepo) {
		t.Fatalf("the unannotated object must be Extraneous and say why it is kept:\n%s", describe(a))
	}
	if gone(t, ns, "legacy") || gone(t, ns, "two-a") {
		t.Fatal("prune deleted an object it cannot tell is this repository's")
	}
}

// TestPruneEmptiedOverlay: a commit that empties an app's folder does not
// delete everything in the background; the refusal is reported; a
// confirmed sync deletes.
func TestPruneEmptiedOverlay(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "prune-empty")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml":              appYAML("empty", "deploy/app", ns, true, true, ""),
		"deploy/app/kustomization.yaml": "resources: [a.yaml, b.yaml, c.yaml]\n",
		"deploy/app/a.yaml":             cmYAML("a"),
		"deploy/app/b.yaml":             cmYAML("b"),
		"deploy/app/c.yaml":             cmYAML("c"),
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "empty", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	events, cancel := e.Subscribe()
	defer cancel()
	repo.Commit("oops: empty the overlay", map[string]string{"deploy/app/kustomization.yaml": "resources: []\n"})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if gone(t, ns, n) {
			t.Fatalf("the background prune deleted %s", n)
		}
	}
	a := appStatus(t, e, "empty")
	if r, ok := resource(a, "ConfigMap", "a"); !ok || r.Status != status.ResourceExtraneous || !strings.Contains(r.Message, "needs confirming") {
		t.Fatalf("the refusal must show on the objects:\n%s", describe(a))
	}
	reported := false
	for len(events) > 0 {
		if ev, ok := (<-events).(status.ErrorEvent); ok && strings.Contains(ev.Message, "prune refused") && strings.Contains(ev.Message, "3 of the 3") {
			reported = true
		}
	}
	if !reported {
		t.Fatal("no Error event reports the refused prune")
	}

	_, err := e.Sync(ctx, "empty", engine.SyncOptions{Prune: true})
	var refused *engine.PruneRefusedError
	if !errors.As(err, &refused) || refused.Count != 3 || !strings.Contains(err.Error(), "--confirm-prune") {
		t.Fatalf("sync --prune without confirming: err = %v, want a *PruneRefusedError for 3 objects", err)
	}
	if gone(t, ns, "a") {
		t.Fatal("an unconfirmed sync deleted")
	}
	plan, err := e.Sync(ctx, "empty", engine.SyncOptions{Prune: true, DryRun: true})
	if err != nil || plan.PruneRefused == nil {
		t.Fatalf("the dry-run plan must carry the refusal for the UI's second question: %v %+v", err, plan.PruneRefused)
	}
	if _, err := e.Sync(ctx, "empty", engine.SyncOptions{Prune: true, ConfirmPrune: true}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if !gone(t, ns, n) {
			t.Fatalf("a confirmed prune left %s", n)
		}
	}
}

// TestPruneNamespaceAndClaimNeedOptIn: a Namespace and a
// PersistentVolumeClaim that left Git are pruned only when the App opts in.
func TestPruneNamespaceAndClaimNeedOptIn(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "prune-optin")
	nsDoc := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prune-optin-child\n"
	pvc := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests: {storage: 1Gi}\n"
	files := map[string]string{
		".kdrift/app.yaml":    appYAML("optin", "deploy/app", ns, false, true, ""),
		"deploy/app/ns.yaml":  nsDoc,
		"deploy/app/pvc.yaml": pvc,
	}
	for _, n := range []string{"k1", "k2", "k3"} {
		files["deploy/app/"+n+".yaml"] = cmYAML(n)
	}
	repo := gittest.Init(t)
	repo.Commit("app", files)
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "optin", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := enginetest.Clientset(t)
	alive := func() (nsAlive, pvcAlive bool) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, "prune-optin-child", metav1.GetOptions{})
		nsAlive = err == nil && n.DeletionTimestamp == nil
		p, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		pvcAlive = err == nil && p.DeletionTimestamp == nil
		return
	}
	repo.Git("rm", "-q", "deploy/app/ns.yaml", "deploy/app/pvc.yaml")
	repo.Git("commit", "-qm", "drop the namespace and the claim")
	if _, err := e.Sync(ctx, "optin", engine.SyncOptions{Prune: true}); err != nil {
		t.Fatal(err)
	}
	if n, p := alive(); !n || !p {
		t.Fatalf("pruned without opt-in: namespace alive %v, claim alive %v", n, p)
	}
	a := appStatus(t, e, "optin")
	if r, _ := resource(a, "Namespace", "prune-optin-child"); !strings.Contains(r.Message, "pruneNamespaces") {
		t.Fatalf("the Namespace must say which field lets it be pruned:\n%s", describe(a))
	}
	if r, _ := resource(a, "PersistentVolumeClaim", "data"); !strings.Contains(r.Message, "prunePersistentVolumeClaims") {
		t.Fatalf("the claim must say which field lets it be pruned:\n%s", describe(a))
	}
	repo.Commit("opt in", map[string]string{".kdrift/app.yaml": appYAML("optin", "deploy/app", ns, false, true, "    pruneNamespaces: true\n    prunePersistentVolumeClaims: true\n")})
	if _, err := e.Sync(ctx, "optin", engine.SyncOptions{Prune: true}); err != nil {
		t.Fatal(err)
	}
	if n, p := alive(); n || p {
		t.Fatalf("opted in but not pruned: namespace alive %v, claim alive %v", n, p)
	}
}
