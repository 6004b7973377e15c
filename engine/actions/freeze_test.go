package actions

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFreezeCommitsPushesAndRoundTrips(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	clock := newClock()
	r := openRepo(t, dir, clock)
	ctx := context.Background()
	original := readFile(t, dir, ".kdrift/apps.yaml")

	reason := "INC-1234 render workers 6->12 to stop session timeouts\n\nScaled by hand at 14:55; keep it until the fix ships."
	res, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: reason, For: 4 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pushed || res.PushError != "" || res.Upstream != "origin/main" {
		t.Fatalf("result %+v", res)
	}
	if got := gitRun(t, remote, "rev-parse", "main"); got != res.Commit {
		t.Fatalf("remote main is %s, want %s", got, res.Commit)
	}
	log := gitRun(t, remote, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s|%(trailers:key=Kdrift-Action,valueonly,separator=%x2C)|%(trailers:key=Kdrift-App,valueonly,separator=%x2C)|%(trailers:key=Kdrift-Until,valueonly)")
	want := testAuthor + "|" + testAuthor + "|freeze(render-prod): INC-1234 render workers 6->12 to stop session time…|freeze|render-prod|2026-12-02T19:00:00Z"
	if log != want {
		t.Fatalf("git log:\n%s\nwant\n%s", log, want)
	}
	if body := gitRun(t, remote, "log", "-1", "--format=%b"); !strings.Contains(body, "Scaled by hand at 14:55") {
		t.Fatalf("body lost the full reason:\n%s", body)
	}
	// The diff adds the freeze block and nothing else.
	diff := gitRun(t, remote, "diff", "--numstat", "main~1", "main")
	if diff != "5\t0\t.kdrift/apps.yaml" {
		t.Fatalf("diff --numstat: %q", diff)
	}
	// The person's checkout follows: file, index and HEAD, with no dirt.
	if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after freeze: %q", st)
	}
	frozen := readFile(t, dir, ".kdrift/apps.yaml")
	if !strings.Contains(frozen, "    by: \"Lao Li <lao.li@example.com>\"\n    at: \"2026-12-02T15:00:00Z\"\n    until: \"2026-12-02T19:00:00Z\"\n") {
		t.Fatalf("frozen file:\n%s", frozen)
	}

	// Freezing it again is refused, naming who froze it and why.
	_, err = r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "again"})
	if err == nil || !strings.Contains(err.Error(), "already frozen by Lao Li <lao.li@example.com>") || !strings.Contains(err.Error(), "INC-1234") {
		t.Fatalf("second freeze: %v", err)
	}

	// Extend moves only the until line.
	clock.t = clock.t.Add(time.Hour)
	if _, err := r.Extend(ctx, ExtendRequest{Apps: []string{"render-prod"}, By: 2 * time.Hour, Reason: "fix slipped"}); err != nil {
		t.Fatal(err)
	}
	if d := gitRun(t, remote, "diff", "-U0", "main~1", "main", "--", ".kdrift/apps.yaml"); !strings.Contains(d, "-    until: \"2026-12-02T19:00:00Z\"\n+    until: \"2026-12-02T21:00:00Z\"") || strings.Count(d, "\n+") != 2 {
		t.Fatalf("extend diff:\n%s", d)
	}

	// Unfreeze gives the original bytes back.
	if _, err := r.Unfreeze(ctx, UnfreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-1234 fixed"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ".kdrift/apps.yaml"); got != original {
		t.Fatalf("round trip changed the file:\n%s", got)
	}
	if got := gitRun(t, remote, "show", "main:.kdrift/apps.yaml"); got != strings.TrimSpace(original) {
		t.Fatalf("remote file after round trip:\n%s", got)
	}
	if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after unfreeze: %q", st)
	}
	fsckClean(t, dir, remote)
}

func TestFreezeFleetBySelectorInOneCommit(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	before := gitRun(t, remote, "rev-parse", "main")
	res, err := r.Freeze(context.Background(), FreezeRequest{Selection: Selection{All: true, Selector: "env=prod"}, Reason: "prod change freeze for the sale"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Apps, ",") != "api-prod,render-prod" {
		t.Fatalf("apps %v", res.Apps)
	}
	if got := gitRun(t, remote, "rev-parse", "main~1"); got != before {
		t.Fatal("fleet freeze is not exactly one commit")
	}
	if s := gitRun(t, remote, "log", "-1", "--format=%s"); s != "freeze(api-prod,render-prod): prod change freeze for the sale" {
		t.Fatalf("subject %q", s)
	}
	if apps := gitRun(t, remote, "log", "-1", "--format=%(trailers:key=Kdrift-App,valueonly,separator=%x2C)"); apps != "api-prod,render-prod" {
		t.Fatalf("trailers %q", apps)
	}
	if strings.Contains(gitRun(t, remote, "show", "main:.kdrift/web.yaml"), "freeze") {
		t.Fatal("staging app was frozen")
	}
}

func TestFreezeRefusals(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	ctx := context.Background()
	head := gitRun(t, dir, "rev-parse", "HEAD")
	sel := Selection{Apps: []string{"render-prod"}}

	r := openRepo(t, dir, newClock())
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: sel, Reason: "  \n "}); err == nil || !strings.Contains(err.Error(), "reason is required") {
		t.Fatalf("blank reason: %v", err)
	}
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"nope"}}, Reason: "x"}); err == nil || !strings.Contains(err.Error(), "App nope not found") {
		t.Fatalf("unknown app: %v", err)
	}

	// No identity anywhere.
	anon, err := Open(ctx, RepoOptions{Repo: dir, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Freeze(ctx, FreezeRequest{Selection: sel, Reason: "x"}); err == nil || !strings.Contains(err.Error(), "git config user.name") || !strings.Contains(err.Error(), "KDRIFT_AUTHOR") {
		t.Fatalf("missing identity: %v", err)
	}
	// The repository's own config is used when set.
	gitRun(t, dir, "config", "user.name", "Repo Person")
	gitRun(t, dir, "config", "user.email", "repo@example.com")
	if id, err := anon.Identity(); err != nil || id.String() != "Repo Person <repo@example.com>" {
		t.Fatalf("repo identity %v %v", id, err)
	}

	// Uncommitted edits in the App file: refuse, keep the edits, commit nothing.
	dirty := readFile(t, dir, ".kdrift/apps.yaml") + "# my unsaved note\n"
	writeFile(t, dir, ".kdrift/apps.yaml", dirty)
	_, err = r.Freeze(ctx, FreezeRequest{Selection: sel, Reason: "x"})
	var de *DirtyError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), ".kdrift/apps.yaml") || !strings.Contains(err.Error(), "commit or stash") {
		t.Fatalf("dirty file: %v", err)
	}
	if got := readFile(t, dir, ".kdrift/apps.yaml"); got != dirty {
		t.Fatal("the person's edit was lost")
	}
	if got := gitRun(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatal("something was committed")
	}
	// A staged edit counts too.
	gitRun(t, dir, "add", ".kdrift/apps.yaml")
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: sel, Reason: "x"}); !errors.As(err, &de) {
		t.Fatalf("staged edit: %v", err)
	}
	gitRun(t, dir, "reset", "-q", "--hard")

	// Edits to other files are left alone.
	writeFile(t, dir, "README.md", "my unsaved readme\n")
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: sel, Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "README.md"); got != "my unsaved readme\n" {
		t.Fatal("unrelated edit lost")
	}
	if st := gitRun(t, dir, "status", "--porcelain"); st != "M README.md" {
		t.Fatalf("status %q", st)
	}
}

// TestBranchCheckedOutInAnotherWorktreeIsRefused: moving a branch that
// another `git worktree` has checked out would leave that tree's files
// behind, so kdrift refuses and names the place to run it.
func TestBranchCheckedOutInAnotherWorktreeIsRefused(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	other := filepath.Join(t.TempDir(), "feature-wt")
	gitRun(t, dir, "worktree", "add", "-q", "-b", "feature", other)
	r, err := Open(context.Background(), RepoOptions{Repo: other, Branch: "main", Author: testAuthor, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	head := gitRun(t, dir, "rev-parse", "main")
	_, err = r.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "x"})
	if err == nil || !strings.Contains(err.Error(), "checked out in the working tree at "+dir) {
		t.Fatalf("got %v", err)
	}
	if gitRun(t, dir, "rev-parse", "main") != head {
		t.Fatal("main moved")
	}
	// From the linked worktree, its own branch works.
	r2, err := Open(context.Background(), RepoOptions{Repo: other, Author: testAuthor, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Branch() != "feature" {
		t.Fatalf("branch %s", r2.Branch())
	}
	if _, err := r2.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "on feature"}); err != nil {
		t.Fatal(err)
	}
	if st := gitRun(t, other, "status", "--porcelain"); st != "" {
		t.Fatalf("status %q", st)
	}
}

func TestFreezeRequestValidation(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	clock := newClock()
	r := openRepo(t, dir, clock)
	ctx := context.Background()
	past := clock.t.Add(-time.Minute)
	cases := []struct {
		req  FreezeRequest
		want string
	}{
		{FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "x", For: time.Hour, Until: &past}, "not both"},
		{FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "x", Until: &past}, "not in the future"},
		{FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "x", For: -time.Hour}, "must be positive"},
		{FreezeRequest{Selection: Selection{}, Reason: "x"}, "no app named"},
		{FreezeRequest{Selection: Selection{Apps: []string{"a"}, All: true}, Reason: "x"}, "not both"},
		{FreezeRequest{Selection: Selection{Apps: []string{"a"}, Selector: "env=prod"}, Reason: "x"}, "--selector needs --all"},
		{FreezeRequest{Selection: Selection{All: true, Selector: "env"}, Reason: "x"}, "want key=value"},
		{FreezeRequest{Selection: Selection{All: true, Selector: "env=nowhere"}, Reason: "x"}, "no App matches"},
	}
	head := gitRun(t, dir, "rev-parse", "HEAD")
	for _, c := range cases {
		if _, err := r.Freeze(ctx, c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.req, err, c.want)
		}
	}
	if _, err := r.Extend(ctx, ExtendRequest{Apps: []string{"render-prod"}, By: time.Hour, Reason: "x"}); err == nil || !strings.Contains(err.Error(), "not frozen") {
		t.Errorf("extend of an unfrozen app: %v", err)
	}
	if _, err := r.Unfreeze(ctx, UnfreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "x"}); err == nil || !strings.Contains(err.Error(), "not frozen") {
		t.Errorf("unfreeze of an unfrozen app: %v", err)
	}
	freezeOne(t, r, "api-prod", "open-ended")
	if _, err := r.Extend(ctx, ExtendRequest{Apps: []string{"api-prod"}, By: time.Hour, Reason: "x"}); err == nil || !strings.Contains(err.Error(), "no end time") {
		t.Errorf("extend of an open-ended freeze: %v", err)
	}
	if gitRun(t, dir, "rev-list", "--count", head+"..HEAD") != "1" {
		t.Fatal("a refused request committed something")
	}
	// An expired freeze may be replaced by a new one.
	res, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "short", For: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(time.Hour)
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "again after expiry"}); err != nil {
		t.Fatalf("refreeze after expiry: %v (previous %s)", err, res.Commit)
	}
}
