package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestHangingGitRemoteIsReportedUnreachable: the remote starts accepting
// connections and never answering; a pass still finishes (after the Git
// timeout), compares the last fetched revision, and reports Git as
// unreachable, with the timeout in the app's status.
func TestHangingGitRemoteIsReportedUnreachable(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "git-hangs")
	origin := gittest.Init(t)
	origin.Commit("apps", map[string]string{
		".kdrift/app.yaml":   appYAML("hang", "deploy/app", ns, false, false, ""),
		"deploy/app/cm.yaml": cmYAML("hang"),
	})
	e, err := engine.New(engine.Options{Repo: origin.URL(), Branch: "main", CacheDir: t.TempDir(), Kubeconfig: enginetest.Kubeconfig(), GitTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	cfg, err := engine.RepoOf(e).Git().Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Remotes[source.RemoteName].URLs = []string{gittest.BlackHole(t)}
	if err := engine.RepoOf(e).Git().SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	events, cancel := e.Subscribe()
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Reconcile(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a pass against a hanging remote did not finish: the fetch has no timeout")
	}
	a := appStatus(t, e, "hang")
	if !strings.Contains(a.Error, "timed out after 1s") {
		t.Fatalf("the app must say Git timed out:\n%s", describe(a))
	}
	if r, ok := resource(a, "ConfigMap", "hang"); !ok || r.Status != status.ResourceMissing {
		t.Fatalf("the last fetched revision must still be compared:\n%s", describe(a))
	}
	down := false
	for len(events) > 0 {
		if r, ok := (<-events).(status.Reachability); ok && r.Target == status.TargetGit && !r.Up {
			down = true
		}
	}
	if !down {
		t.Fatal("no Reachability event says Git is unreachable")
	}
}
