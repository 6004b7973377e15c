package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

// withWatchdog fails the test with a reason instead of letting a hang
// run into go test's own timeout.
func withWatchdog(t *testing.T, what string, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not finish within %s: a Git operation has no timeout", what, limit)
	}
}

// TestFreezeAgainstAHangingRemoteKeepsTheCommitLocal: the remote accepts
// the connection and never answers; freeze returns after the Git timeout
// with the commit local, says so, and the next push sends it.
func TestFreezeAgainstAHangingRemoteKeepsTheCommitLocal(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	gitRun(t, dir, "remote", "set-url", "origin", gittest.BlackHole(t))
	r, err := Open(context.Background(), RepoOptions{Repo: dir, Author: testAuthor, Now: newClock().Now, GitTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	withWatchdog(t, "freeze against a hanging remote", time.Minute, func() {
		res, err = r.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-7 remote hangs"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pushed || !strings.Contains(res.PushError, "timed out after 1s") || !strings.Contains(res.Summary(), "committed locally as") {
		t.Fatalf("result %+v: %s", res, res.Summary())
	}
	if gitRun(t, dir, "rev-parse", "HEAD") != res.Commit {
		t.Fatal("the commit is not kept on the local branch")
	}
	if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("status %q", st)
	}
	gitRun(t, dir, "remote", "set-url", "origin", remote)
	if pr, err := r.Push(context.Background()); err != nil || !pr.Pushed {
		t.Fatalf("push once the remote answers: %+v %v", pr, err)
	}
	fsckClean(t, remote, dir)
}

// TestGitTimeoutFromTheEnvironment: KDRIFT_GIT_TIMEOUT sets the timeout; a
// malformed value is refused naming the variable.
func TestGitTimeoutFromTheEnvironment(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == source.EnvGitTimeout {
				return v
			}
			return ""
		}
	}
	if d, err := source.GitTimeout(0, env("")); err != nil || d != source.DefaultGitTimeout {
		t.Fatalf("default: %s %v", d, err)
	}
	if d, err := source.GitTimeout(0, env("2m")); err != nil || d != 2*time.Minute {
		t.Fatalf("2m: %s %v", d, err)
	}
	if d, err := source.GitTimeout(5*time.Second, env("2m")); err != nil || d != 5*time.Second {
		t.Fatalf("an explicit timeout wins: %s %v", d, err)
	}
	for _, bad := range []string{"soon", "-1s", "0"} {
		if _, err := source.GitTimeout(0, env(bad)); err == nil || !strings.Contains(err.Error(), source.EnvGitTimeout) {
			t.Fatalf("%q: err = %v, want one naming %s", bad, err, source.EnvGitTimeout)
		}
	}
}

// TestFailedRetryRestoresTheBranch: B's push loses a race to A, who froze
// the same app; B's re-run is refused on the new head, and B's branch,
// index and files are back where they were before B's action.
func TestFailedRetryRestoresTheBranch(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	a := openRepo(t, cloneOf(t, remote), newClock())
	bDir := cloneOf(t, remote)
	b := openRepo(t, bDir, newClock())
	before := gitRun(t, bDir, "rev-parse", "HEAD")
	raced := false
	b.beforePush = func() {
		if !raced {
			raced = true
			freezeOne(t, a, "render-prod", "INC-8 from A")
		}
	}
	res, err := b.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-8 from B"})
	if err == nil || !strings.Contains(err.Error(), "already frozen by") || !strings.Contains(err.Error(), "back at "+before[:12]) {
		t.Fatalf("freeze after a lost race on the same app: %+v %v", res, err)
	}
	if res.Commit != "" {
		t.Fatalf("a refused action reports commit %s", res.Commit)
	}
	if got := gitRun(t, bDir, "rev-parse", "HEAD"); got != before {
		t.Fatalf("branch at %s, want it restored to %s", got, before)
	}
	if st := gitRun(t, bDir, "status", "--porcelain"); st != "" {
		t.Fatalf("status %q", st)
	}
	// Nothing blocks the next action.
	next := freezeOne(t, b, "api-prod", "INC-9 next")
	if !next.Pushed {
		t.Fatalf("the next action: %+v", next)
	}
	fsckClean(t, remote, bDir)
}

// TestUnfreezeOfAChangedFreezeIsRefused: the person saw one freeze; the
// head (after a fetch) has another. Unfreeze and extend carrying the seen
// freeze are refused and show the new one; without one, unfreeze works.
func TestUnfreezeOfAChangedFreezeIsRefused(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	clock := newClock()
	a := openRepo(t, cloneOf(t, remote), clock)
	bDir := cloneOf(t, remote)
	b := openRepo(t, bDir, clock)
	freezeOne(t, a, "render-prod", "INC-10 first freeze")
	seen := &app.Freeze{Reason: "INC-10 first freeze", By: testAuthor, At: clock.t}

	// A lifts it and freezes again for another incident.
	clock.t = clock.t.Add(time.Minute)
	if _, err := a.Unfreeze(context.Background(), UnfreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-10 over"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-11 second freeze", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	before := gitRun(t, remote, "rev-parse", "main")

	_, err := b.Unfreeze(context.Background(), UnfreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-10 done", Seen: map[string]*app.Freeze{"render-prod": seen}})
	var changed *FreezeChangedError
	if !errors.As(err, &changed) || changed.Now == nil || changed.Now.Reason != "INC-11 second freeze" {
		t.Fatalf("unfreeze of a freeze that changed: err = %v, want a *FreezeChangedError with the new freeze", err)
	}
	if !strings.Contains(err.Error(), "INC-11 second freeze") || !strings.Contains(err.Error(), "INC-10 first freeze") {
		t.Fatalf("the refusal must show the freeze seen and the new one: %v", err)
	}
	_, err = b.Extend(context.Background(), ExtendRequest{Apps: []string{"render-prod"}, By: time.Hour, Reason: "longer", Seen: map[string]*app.Freeze{"render-prod": seen}})
	if !errors.As(err, &changed) {
		t.Fatalf("extend of a freeze that changed: err = %v", err)
	}
	if got := gitRun(t, remote, "rev-parse", "main"); got != before {
		t.Fatal("a refused action reached the remote")
	}
	if st := gitRun(t, bDir, "status", "--porcelain"); st != "" {
		t.Fatalf("status %q", st)
	}

	// Seeing the current freeze (or naming none, as the CLI does) works.
	now := &app.Freeze{Reason: "INC-11 second freeze", By: testAuthor, At: clock.t}
	if _, err := b.Extend(context.Background(), ExtendRequest{Apps: []string{"render-prod"}, By: time.Hour, Reason: "longer", Seen: map[string]*app.Freeze{"render-prod": now}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Unfreeze(context.Background(), UnfreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-11 done"}); err != nil {
		t.Fatal(err)
	}
	fsckClean(t, remote, bDir)
}

// TestFourClonesFreezeFourAppsAtOnce: four clones of one bare remote
// freeze four different apps at the same moment; every freeze lands and
// every repository passes git fsck --strict.
func TestFourClonesFreezeFourAppsAtOnce(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	seed := cloneOf(t, remote)
	writeFile(t, seed, ".kdrift/ops.yaml", "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: ops-prod\nspec:\n  path: deploy/api\n")
	gitRun(t, seed, "add", "-A")
	gitRun(t, seed, "commit", "-qm", "ops app")
	gitRun(t, seed, "push", "-q", "origin", "main")
	apps := []string{"render-prod", "api-prod", "web-staging", "ops-prod"}
	dirs := make([]string, len(apps))
	repos := make([]*Repo, len(apps))
	for i := range apps {
		dirs[i] = cloneOf(t, remote)
		r, err := Open(context.Background(), RepoOptions{Repo: dirs[i], Author: testAuthor, Now: newClock().Now, MaxPushTries: 8})
		if err != nil {
			t.Fatal(err)
		}
		repos[i] = r
	}
	results := make([]Result, len(apps))
	errs := make([]error, len(apps))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, name := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = repos[i].Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{name}}, Reason: "INC-12 hold " + name})
		}()
	}
	close(start)
	wg.Wait()
	for i := range apps {
		if errs[i] != nil || !results[i].Pushed {
			t.Fatalf("freeze of %s: %+v %v", apps[i], results[i], errs[i])
		}
	}
	log := gitRun(t, remote, "log", "--format=%s", "main")
	for _, name := range apps {
		if !strings.Contains(log, fmt.Sprintf("freeze(%s): INC-12 hold %s", name, name)) {
			t.Fatalf("the freeze of %s is lost; remote log:\n%s", name, log)
		}
	}
	if n := gitRun(t, remote, "rev-list", "--count", "main"); n != "6" {
		t.Fatalf("remote has %s commits, want 6 (2 + one per freeze)", n)
	}
	fsckClean(t, append([]string{remote}, dirs...)...)
}
