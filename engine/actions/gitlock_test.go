package actions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kdrift.dev/kdrift/internal/gitfs"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestFreezeWhileGitHoldsTheBranchLock: while git holds
// refs/heads/main.lock, a freeze fails naming that lock and leaves the
// branch, the working files and the index as they were; once git lets go
// the same freeze commits.
func TestFreezeWhileGitHoldsTheBranchLock(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	ctx := context.Background()
	before := gitRun(t, dir, "rev-parse", "main")
	original := readFile(t, dir, ".kdrift/apps.yaml")
	lock := gittest.HoldLock(t, filepath.Join(dir, ".git/refs/heads/main"))
	req := FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-7 hold"}
	_, err := r.Freeze(ctx, req)
	var le *gitfs.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("freeze while main.lock is held: %v; want a *gitfs.LockedError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, lock) || !strings.Contains(msg, "another git process") || !strings.Contains(msg, "nothing was committed") {
		t.Fatalf("error %q; want it to name %s, say another git process is updating it, and that nothing was committed", msg, lock)
	}
	if got := gitRun(t, dir, "rev-parse", "main"); got != before {
		t.Fatalf("main moved to %s while git held its lock", got)
	}
	if got := gitRun(t, remote, "rev-parse", "main"); got != before {
		t.Fatalf("remote main moved to %s", got)
	}
	if got := readFile(t, dir, ".kdrift/apps.yaml"); got != original {
		t.Fatalf("the working file kept the refused freeze:\n%s", got)
	}
	if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after the refused freeze: %q", st)
	}
	for _, left := range []string{journalName, "index.lock"} {
		if _, err := os.Stat(filepath.Join(dir, ".git", left)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf(".git/%s left behind: %v", left, err)
		}
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("git's lock was touched: %v", err)
	}

	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	res, err := r.Freeze(ctx, req)
	if err != nil {
		t.Fatalf("freeze after git let go: %v", err)
	}
	if !res.Pushed || gitRun(t, dir, "rev-parse", "main") != res.Commit || gitRun(t, remote, "rev-parse", "main") != res.Commit {
		t.Fatalf("freeze after git let go: %+v", res)
	}
	if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after the freeze: %q", st)
	}
	fsckClean(t, dir, remote)
}

// TestGitMovesTheBranchWhileKdriftCommits: git moves the branch after
// kdrift read it and wrote the working files, just before kdrift moves
// the ref: kdrift reports the branch moved, puts its files back, and git's
// commit stays on the branch.
func TestGitMovesTheBranchWhileKdriftCommits(t *testing.T) {
	isolate(t)
	dir := cloneOf(t, newRemote(t))
	gitRun(t, dir, "remote", "remove", "origin")
	r := openRepo(t, dir, newClock())
	original := readFile(t, dir, ".kdrift/apps.yaml")
	var theirs string
	r.crashPoint = func(step string) {
		if step != "index" {
			return
		}
		head := gitRun(t, dir, "rev-parse", "main")
		theirs = gitRun(t, dir, "commit-tree", "-p", head, "-m", "person's commit", head+"^{tree}")
		gitRun(t, dir, "update-ref", "-m", "person", "refs/heads/main", theirs, head)
	}
	_, err := r.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-8"})
	if err == nil || !strings.Contains(err.Error(), "moved while kdrift was committing") || !strings.Contains(err.Error(), "nothing was committed") {
		t.Fatalf("freeze racing git: %v; want the branch reported moved and nothing committed", err)
	}
	if got := gitRun(t, dir, "rev-parse", "main"); got != theirs {
		t.Fatalf("main is %s, want git's commit %s", got, theirs)
	}
	if got := readFile(t, dir, ".kdrift/apps.yaml"); got != original {
		t.Fatalf("the working file kept the refused freeze:\n%s", got)
	}
	if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after the refused freeze: %q", st)
	}
	fsckClean(t, dir)
}

// TestActionsRacingGitCommitLoseNothing: a person runs `git commit` over
// and over in the same clone while kdrift freezes and unfreezes: every
// commit either side reported made is on the branch at the end (a lost
// race is an error, never a silently dropped commit), and the repository
// is whole.
func TestActionsRacingGitCommitLoseNothing(t *testing.T) {
	isolate(t)
	dir := cloneOf(t, newRemote(t))
	gitRun(t, dir, "remote", "remove", "origin")
	r := openRepo(t, dir, newClock())
	ctx := context.Background()

	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var theirs []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			msg := fmt.Sprintf("person %d", i)
			// Losing a lock to kdrift is git's own failure to report, as
			// with any two git commands; only a success must stay.
			if _, err := gitTry(dir, "commit", "-q", "--allow-empty", "-m", msg); err == nil {
				mu.Lock()
				theirs = append(theirs, msg)
				mu.Unlock()
			}
		}
	}()
	gitCommits := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(theirs)
	}
	var ours []string
	var failures []error
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	// Past the planned rounds it goes on (up to a bound) until both sides
	// have committed at least once: a slow machine can make kdrift lose
	// every race of a few rounds.
	const maxRounds = 60
	sel := Selection{Apps: []string{"render-prod"}}
	frozen := false
	for i := 0; i < maxRounds && (i < rounds || len(ours) == 0 || gitCommits() == 0); i++ {
		var res Result
		var err error
		if !frozen {
			res, err = r.Freeze(ctx, FreezeRequest{Selection: sel, Reason: fmt.Sprintf("INC-%d", i)})
		} else {
			res, err = r.Unfreeze(ctx, UnfreezeRequest{Selection: sel, Reason: fmt.Sprintf("INC-%d done", i)})
		}
		if err != nil {
			failures = append(failures, err)
			continue
		}
		frozen = !frozen
		ours = append(ours, res.Commit)
	}
	close(done)
	wg.Wait()
	for _, err := range failures {
		t.Logf("kdrift action refused: %v", err)
	}
	t.Logf("kdrift committed %d of %d actions; git committed %d times", len(ours), len(ours)+len(failures), len(theirs))
	if len(ours) == 0 || len(theirs) == 0 {
		t.Fatalf("kdrift committed %d times and git %d times: the test raced nothing", len(ours), len(theirs))
	}
	for _, c := range ours {
		if _, err := gitTry(dir, "merge-base", "--is-ancestor", c, "main"); err != nil {
			t.Errorf("kdrift reported commit %s but it is not on main", c[:12])
		}
	}
	subjects := "\n" + gitRun(t, dir, "log", "--format=%s", "main") + "\n"
	for _, msg := range theirs {
		if !strings.Contains(subjects, "\n"+msg+"\n") {
			t.Errorf("git's commit %q is not on main", msg)
		}
	}
	fsckClean(t, dir)
	// Give a still running git a moment, then nothing may be left locked.
	time.Sleep(50 * time.Millisecond)
	for _, left := range []string{"index.lock", "refs/heads/main.lock", "HEAD.lock"} {
		if _, err := os.Stat(filepath.Join(dir, ".git", left)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf(".git/%s left behind: %v", left, err)
		}
	}
}
