package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestFailingAppsDoNotStopOthers: an invalid kustomization, an App whose
// cluster does not answer and an invalid App each get a clear status while
// a healthy app next to them compares and syncs.
func TestFailingAppsDoNotStopOthers(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "failures")
	repo := gittest.Init(t)
	repo.Commit("apps", map[string]string{
		".kdrift/good.yaml":   appYAML("good", "deploy/good", ns, true, false, ""),
		".kdrift/broken.yaml": appYAML("broken", "deploy/broken", ns, true, false, ""),
		".kdrift/dead.yaml": strings.Replace(appYAML("dead", "deploy/good", ns, true, false, ""),
			"  destination:\n", "  destination:\n    context: dead\n", 1),
		".kdrift/invalid.yaml":             appYAML("invalid", "deploy/missing-folder", ns, true, false, ""),
		"deploy/good/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  a: \"1\"\n",
		"deploy/broken/kustomization.yaml": "resources:\n- does-not-exist.yaml\n",
	})
	e := newEngine(t, repo, func(o *engine.Options) { o.Kubeconfig = kubeconfigWithDeadContext(t) })
	events, stop := e.SubscribeAll()
	defer stop()
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	// The UI's "cluster unreachable since" banner comes from this event:
	// exactly one, for the dead context only.
	// Delivery to a subscriber may lag the pass: wait for the first one,
	// then take whatever else is queued.
	var reach []status.Reachability
	wait := time.After(10 * time.Second)
	for done := false; !done; {
		var ev status.Event
		if len(reach) == 0 {
			select {
			case ev = <-events:
			case <-wait:
				done = true
			}
		} else {
			select {
			case ev = <-events:
			case <-time.After(200 * time.Millisecond):
				done = true
			}
		}
		if r, ok := ev.(status.Reachability); ok {
			reach = append(reach, r)
		}
	}
	if len(reach) != 1 || reach[0].Target != status.TargetCluster || reach[0].Up || reach[0].Context != "dead" || reach[0].Message == "" {
		t.Fatalf("want one Reachability{cluster dead, down, with the error}, got %+v", reach)
	}
	good := appStatus(t, e, "good")
	if good.Sync != status.SyncSynced {
		t.Fatalf("the healthy app must sync despite the others:\n%s", describe(good))
	}
	if _, err := enginetest.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "good", metav1.GetOptions{}); err != nil {
		t.Fatalf("good app not applied: %v", err)
	}
	broken := appStatus(t, e, "broken")
	if broken.Sync != status.SyncError || !strings.Contains(broken.Error, "does-not-exist.yaml") {
		t.Fatalf("broken kustomization: want Error naming the missing file:\n%s", describe(broken))
	}
	dead := appStatus(t, e, "dead")
	if dead.Sync != status.SyncUnknown || !strings.Contains(dead.Error, "dead") {
		t.Fatalf("unreachable cluster: want Unknown naming the context:\n%s", describe(dead))
	}
	invalid := appStatus(t, e, "invalid")
	if invalid.Sync != status.SyncError || !strings.Contains(invalid.Error, "spec.path") {
		t.Fatalf("invalid App: want Error naming spec.path:\n%s", describe(invalid))
	}
}

// TestUnreachableGitRemote: once the remote is gone, the engine keeps
// comparing the last fetched revision and says the remote failed.
func TestUnreachableGitRemote(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "remote")
	origin := gittest.Init(t)
	origin.Commit("apps", map[string]string{
		".kdrift/app.yaml":   appYAML("remote", "deploy/app", ns, false, false, ""),
		"deploy/app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: remote\ndata:\n  a: \"1\"\n",
	})
	cache := t.TempDir()
	open := func() *engine.Engine {
		e, err := engine.New(engine.Options{Repo: origin.URL(), Branch: "main", CacheDir: cache, Kubeconfig: enginetest.Kubeconfig()})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if err := open().Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	origin.Git("remote", "-v") // still there; now make it unreachable
	if err := renameAway(origin.Dir); err != nil {
		t.Fatal(err)
	}
	e := open()
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "remote")
	if a.Sync != status.SyncOutOfSync || !strings.Contains(a.Error, "remote") {
		t.Fatalf("want the last fetched revision compared (the ConfigMap is Missing) and the remote's failure named:\n%s", describe(a))
	}
	if r, ok := resource(a, "ConfigMap", "remote"); !ok || r.Status != status.ResourceMissing {
		t.Fatalf("want the ConfigMap Missing:\n%s", describe(a))
	}
}

// TestUnknownAppNamesTheKnownOnes: asking for an app no App file declares
// lists the declared ones, or says how to declare one when there are none.
func TestUnknownAppNamesTheKnownOnes(t *testing.T) {
	ctx := context.Background()
	empty := gittest.Init(t)
	empty.Commit("no apps yet", map[string]string{"README.md": "nothing\n"})
	err := newEngine(t, empty, nil).Reconcile(ctx, "web")
	if err == nil || !strings.Contains(err.Error(), `no App file in .kdrift/`) || !strings.Contains(err.Error(), ".kdrift/web.yaml") {
		t.Fatalf("want a hint to add .kdrift/web.yaml, got %v", err)
	}
	repo := gittest.Init(t)
	repo.Commit("apps", map[string]string{
		".kdrift/b.yaml": appYAML("b", "deploy", "default", false, false, ""),
		".kdrift/a.yaml": appYAML("a", "deploy", "default", false, false, ""),
		"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	})
	_, err = newEngine(t, repo, nil).Sync(ctx, "web", engine.SyncOptions{DryRun: true})
	if err == nil || !strings.HasSuffix(err.Error(), "known apps: a, b") {
		t.Fatalf("want the known apps listed, got %v", err)
	}
}
