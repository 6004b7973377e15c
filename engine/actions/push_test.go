package actions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"kdrift.dev/kdrift/engine/source"
)

func freezeOne(t *testing.T, r *Repo, app, reason string) Result {
	t.Helper()
	res, err := r.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{app}}, Reason: reason})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func remoteFrozen(t *testing.T, remote string) string {
	t.Helper()
	var out []string
	for _, f := range []string{".kdrift/apps.yaml", ".kdrift/web.yaml"} {
		out = append(out, gitRun(t, remote, "show", "main:"+f))
	}
	return strings.Join(out, "\n")
}

// TestLostPushRaceIsReapplied stages a race: between B's fetch and B's push,
// A freezes another app and pushes. B's push is rejected, B re-applies its
// freeze on A's commit, and both land.
func TestLostPushRaceIsReapplied(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	a := openRepo(t, cloneOf(t, remote), newClock())
	bDir := cloneOf(t, remote)
	b := openRepo(t, bDir, newClock())
	raced := false
	b.beforePush = func() {
		if !raced {
			raced = true
			freezeOne(t, a, "api-prod", "INC-1 api from A")
		}
	}
	res := freezeOne(t, b, "render-prod", "INC-2 render from B")
	if !res.Pushed || res.Retries != 1 {
		t.Fatalf("result %+v", res)
	}
	log := gitRun(t, remote, "log", "--format=%s", "main")
	if !strings.HasPrefix(log, "freeze(render-prod): INC-2 render from B\nfreeze(api-prod): INC-1 api from A\n") {
		t.Fatalf("remote log:\n%s", log)
	}
	if gitRun(t, remote, "rev-list", "--count", "main") != "3" {
		t.Fatal("the lost attempt leaked into the remote history")
	}
	// B's checkout holds both freezes, cleanly.
	f := readFile(t, bDir, ".kdrift/apps.yaml")
	if !strings.Contains(f, "INC-1 api from A") || !strings.Contains(f, "INC-2 render from B") {
		t.Fatalf("B's file:\n%s", f)
	}
	if st := gitRun(t, bDir, "status", "--porcelain"); st != "" {
		t.Fatalf("B status %q", st)
	}
	fsckClean(t, remote, bDir)
}

// TestConcurrentFreezesFromTwoClonesBothLand runs two freezes at once.
func TestConcurrentFreezesFromTwoClonesBothLand(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	a := openRepo(t, cloneOf(t, remote), newClock())
	b := openRepo(t, cloneOf(t, remote), newClock())
	var wg sync.WaitGroup
	results := make([]Result, 2)
	errs := make([]error, 2)
	for i, job := range []struct {
		r   *Repo
		app string
	}{{a, "api-prod"}, {b, "render-prod"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = job.r.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{job.app}}, Reason: "race " + job.app})
		}()
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil || !results[i].Pushed {
			t.Fatalf("freeze %d: %+v %v", i, results[i], errs[i])
		}
	}
	all := remoteFrozen(t, remote)
	if !strings.Contains(all, "race api-prod") || !strings.Contains(all, "race render-prod") {
		t.Fatalf("remote files:\n%s", all)
	}
	fsckClean(t, remote)
}

// TestFreezeWhileRemoteDownIsPushedLater keeps the commit when the remote
// is unreachable, says so, and pushes it with Push (after another person
// pushed in the meantime, so it is re-applied on top).
func TestFreezeWhileRemoteDownIsPushedLater(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	gitRun(t, dir, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "missing.git"))
	res := freezeOne(t, r, "render-prod", "INC-3 remote is down")
	if res.Pushed || res.PushError == "" || !strings.Contains(res.Summary(), "committed locally as") || !strings.Contains(res.Summary(), "kdrift push") {
		t.Fatalf("result %+v: %s", res, res.Summary())
	}
	if gitRun(t, dir, "rev-parse", "HEAD") != res.Commit {
		t.Fatal("commit not kept locally")
	}
	// Meanwhile someone else freezes another app.
	other := openRepo(t, cloneOf(t, remote), newClock())
	freezeOne(t, other, "web-staging", "INC-4 staging")

	// Still down: Push says so and keeps everything.
	if pr, err := r.Push(context.Background()); err != nil || pr.Pushed || pr.PushError == "" {
		t.Fatalf("push while down: %+v %v", pr, err)
	}
	gitRun(t, dir, "remote", "set-url", "origin", remote)
	pr, err := r.Push(context.Background())
	if err != nil || !pr.Pushed {
		t.Fatalf("push: %+v %v", pr, err)
	}
	log := gitRun(t, remote, "log", "--format=%s|%an", "main")
	if !strings.HasPrefix(log, "freeze(render-prod): INC-3 remote is down|Lao Li\nfreeze(web-staging): INC-4 staging|Lao Li\n") {
		t.Fatalf("remote log:\n%s", log)
	}
	if gitRun(t, dir, "rev-parse", "HEAD") != gitRun(t, remote, "rev-parse", "main") {
		t.Fatal("local branch not at the pushed head")
	}
	if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("status %q", st)
	}
	fsckClean(t, remote, dir)
}

// TestNextActionPushesPendingCommits: a later action pushes what an earlier
// one left local.
func TestNextActionPushesPendingCommits(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	gitRun(t, dir, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "missing.git"))
	first := freezeOne(t, r, "render-prod", "INC-5 first")
	gitRun(t, dir, "remote", "set-url", "origin", remote)
	second := freezeOne(t, r, "api-prod", "INC-5 second")
	if !second.Pushed {
		t.Fatalf("%+v", second)
	}
	if gitRun(t, remote, "rev-parse", "main~1") != first.Commit {
		t.Fatal("pending commit not pushed by the next action")
	}
}

// TestDivergedWithForeignCommitsStaysLocal: kdrift never rebases a
// person's own commits; it commits locally and says why it did not push.
func TestDivergedWithForeignCommitsStaysLocal(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	writeFile(t, dir, "notes.txt", "mine\n")
	commitAll(t, dir, "my own commit")
	other := cloneOf(t, remote)
	writeFile(t, other, "theirs.txt", "theirs\n")
	commitAll(t, other, "their commit")
	gitRun(t, other, "push", "-q")
	r := openRepo(t, dir, newClock())
	res := freezeOne(t, r, "render-prod", "INC-6")
	if res.Pushed || !strings.Contains(res.PushError, "diverged") || !strings.Contains(res.PushError, "my own commit") {
		t.Fatalf("%+v", res)
	}
	if !strings.Contains(gitRun(t, dir, "log", "-1", "--format=%s"), "freeze(render-prod)") {
		t.Fatal("freeze not committed locally")
	}
}

// TestURLRepoUsesCacheClone works on a file:// URL through a cache clone.
func TestURLRepoUsesCacheClone(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	cache := t.TempDir()
	ctx := context.Background()
	open := func() *Repo {
		r, err := Open(ctx, RepoOptions{Repo: "file://" + remote, Author: testAuthor, Now: newClock().Now, CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := open()
	if r.Branch() != "main" {
		t.Fatalf("branch %q", r.Branch())
	}
	res := freezeOne(t, r, "render-prod", "INC-8 via URL")
	if !res.Pushed || gitRun(t, remote, "rev-parse", "main") != res.Commit {
		t.Fatalf("%+v", res)
	}
	// Another person pushes; the cache catches up on the next action.
	other := openRepo(t, cloneOf(t, remote), newClock())
	freezeOne(t, other, "api-prod", "INC-8 other")
	res = freezeOne(t, open(), "web-staging", "INC-8 again")
	if !res.Pushed || gitRun(t, remote, "rev-list", "--count", "main") != "4" {
		t.Fatalf("%+v", res)
	}
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache %v %v", entries, err)
	}
	fsckClean(t, remote, filepath.Join(cache, entries[0].Name()))
}

// TestOwnUnpushedCommitsAreNotPublished: kdrift commits on top of a
// person's unpushed commit but leaves publishing it to them.
func TestOwnUnpushedCommitsAreNotPublished(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	writeFile(t, dir, "wip.txt", "work in progress\n")
	commitAll(t, dir, "wip: not ready")
	before := gitRun(t, remote, "rev-parse", "main")
	r := openRepo(t, dir, newClock())
	res := freezeOne(t, r, "render-prod", "INC-12")
	if res.Pushed || !strings.Contains(res.PushError, "unpushed commits of your own") || !strings.Contains(res.PushError, "wip: not ready") {
		t.Fatalf("%+v", res)
	}
	if gitRun(t, remote, "rev-parse", "main") != before {
		t.Fatal("the person's commit was published")
	}
	gitRun(t, dir, "push", "-q", "origin", "HEAD~1:main")
	if pr, err := r.Push(context.Background()); err != nil || !pr.Pushed {
		t.Fatalf("push: %+v %v", pr, err)
	}
	if gitRun(t, remote, "rev-parse", "main") != res.Commit {
		t.Fatal("freeze not pushed after the person pushed their own")
	}
}

// TestURLFreezeWhileRemoteDownCountsForTheEngine: for a URL repository the
// engine reads the clone the actions commit into: a freeze that could not
// be pushed (the remote is down, mid-incident) is the local branch ahead
// of the upstream, whose freezes already stop self-heal while the engine
// still compares the upstream as last fetched; once pushed, the engine
// reads the same commit from the remote.
func TestURLFreezeWhileRemoteDownCountsForTheEngine(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	url := "file://" + remote
	cache := t.TempDir()
	ctx := context.Background()
	src, err := source.Open(ctx, source.Options{Location: url, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, RepoOptions{Repo: url, Author: testAuthor, Now: newClock().Now, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	away := remote + ".away"
	if err := os.Rename(remote, away); err != nil {
		t.Fatal(err)
	}
	res := freezeOne(t, r, "render-prod", "INC-13 remote down")
	if res.Pushed {
		t.Fatalf("pushed to a missing remote: %+v", res)
	}
	if err := src.Fetch(ctx); err == nil {
		t.Fatal("fetch from a missing remote succeeded")
	}
	head, err := src.Head(ctx)
	if err != nil || head.Hash == res.Commit {
		t.Fatalf("engine compares %s (%v), want the upstream as last fetched, not the unpushed %s", head.Hash, err, res.Commit)
	}
	ahead, ok, err := src.Ahead(ctx)
	if err != nil || !ok || ahead.Hash != res.Commit {
		t.Fatalf("local branch ahead: %s %v %v, want the unpushed freeze %s", ahead.Hash, ok, err, res.Commit)
	}
	snap, err := src.Snapshot(ahead.Hash)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := snap.Apps().Find("render-prod")
	if !ok || a.Spec.Freeze == nil || a.Spec.Freeze.Reason != "INC-13 remote down" {
		t.Fatalf("engine's App render-prod: %+v", a.Spec.Freeze)
	}

	if err := os.Rename(away, remote); err != nil {
		t.Fatal(err)
	}
	if pr, err := r.Push(ctx); err != nil || !pr.Pushed {
		t.Fatalf("push: %+v %v", pr, err)
	}
	// Someone else pushes on top; the engine follows the remote again.
	other := openRepo(t, cloneOf(t, remote), newClock())
	theirs := freezeOne(t, other, "api-prod", "INC-13 api too")
	if err := src.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if head, err := src.Head(ctx); err != nil || head.Hash != theirs.Commit {
		t.Fatalf("engine reads %s (%v), want the remote's %s", head.Hash, err, theirs.Commit)
	}
}
