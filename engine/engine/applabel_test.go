package engine_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestAppLabelNarrowsOneShotLists: kdrift labels what it applies with
// its App (apply.LabelApp), and a one-shot command lists an App's
// tracked objects by that label; objects applied before kdrift wrote the
// label (or whose label a person removed) are still the App's: not
// drift for lacking it, found and pruned when they leave Git, while
// another App's labelled objects stay out of its prune.
func TestAppLabelNarrowsOneShotLists(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "applabel")
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  a: \"1\"\n"
	}
	repo := gittest.Init(t)
	repo.Commit("apps", map[string]string{
		".kdrift/web.yaml":       appYAML("web", "deploy/web", ns, false, true, ""),
		".kdrift/other.yaml":     appYAML("other", "deploy/other", ns, false, true, ""),
		"deploy/web/keep.yaml":   cm("keep"),
		"deploy/web/old.yaml":    cm("old"),
		"deploy/web/new.yaml":    cm("new"),
		"deploy/other/mine.yaml": cm("mine"),
	})
	setup := newEngine(t, repo, nil)
	for _, n := range []string{"web", "other"} {
		if res, err := setup.Sync(ctx, n, engine.SyncOptions{}); err != nil {
			t.Fatalf("sync %s: %v\n%s", n, err, describe(res.Status))
		}
	}
	cms := enginetest.Clientset(t).CoreV1().ConfigMaps(ns)
	for name, want := range map[string]string{"keep": "web", "mine": "other"} {
		c, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Labels[apply.LabelApp]; got != want {
			t.Fatalf("ConfigMap %s: label %s = %q, want %q", name, apply.LabelApp, got, want)
		}
	}
	// keep and old as an older kdrift left them: no App label.
	unlabel := []byte(`[{"op":"remove","path":"/metadata/labels/kdrift.dev~1app"}]`)
	for _, name := range []string{"keep", "old"} {
		if _, err := cms.Patch(ctx, name, types.JSONPatchType, unlabel, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	oneShot := func() *engine.Engine {
		return newEngine(t, repo, func(o *engine.Options) { o.Apps = []string{"web"} })
	}
	e := oneShot()
	if err := e.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if a := appStatus(t, e, "web"); a.Sync != status.SyncSynced {
		t.Fatalf("a missing App label is not drift:\n%s", describe(a))
	}

	repo.Git("rm", "-q", "deploy/web/old.yaml", "deploy/web/new.yaml")
	repo.Git("commit", "-qm", "drop old and new")
	e = oneShot()
	if err := e.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "web")
	for _, name := range []string{"old", "new"} {
		if r, ok := resource(a, "ConfigMap", name); !ok || r.Status != status.ResourceExtraneous {
			t.Fatalf("want %s Extraneous, labelled or not:\n%s", name, describe(a))
		}
	}
	if _, ok := resource(a, "ConfigMap", "mine"); ok {
		t.Fatalf("another App's object is not web's:\n%s", describe(a))
	}
	if res, err := oneShot().Sync(ctx, "web", engine.SyncOptions{Prune: true, ConfirmPrune: true}); err != nil {
		t.Fatalf("sync: %v\n%s", err, describe(res.Status))
	}
	for _, name := range []string{"old", "new"} {
		if !gone(t, ns, name) {
			t.Fatalf("%s not pruned", name)
		}
	}
	for _, name := range []string{"keep", "mine"} {
		if gone(t, ns, name) {
			t.Fatalf("%s pruned", name)
		}
	}
}
