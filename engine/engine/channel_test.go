package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/gittest"
)

// protectMain installs a pre-receive hook in the bare remote that refuses
// every update of refs/heads/main, as a forge's branch protection does.
func protectMain(t *testing.T, remote string) {
	t.Helper()
	hook := "#!/bin/sh\nwhile read old new ref; do\n  if [ \"$ref\" = \"refs/heads/main\" ]; then\n    echo \"protected branch main: changes go through a pull request\" >&2\n    exit 1\n  fi\ndone\nexit 0\n"
	if err := os.WriteFile(filepath.Join(remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
}

// cloneOf is a working copy of remote whose main tracks origin/main.
func cloneOf(t *testing.T, remote *gittest.Repo) *gittest.Repo {
	t.Helper()
	c := gittest.Init(t)
	c.Git("remote", "add", "origin", remote.Dir)
	c.Git("fetch", "-q", "origin")
	c.Git("reset", "-q", "--hard", "origin/main")
	c.Git("branch", "-q", "--set-upstream-to=origin/main")
	return c
}

// oncall opens the actions' repository on dir as the on-call engineer.
func oncall(t *testing.T, dir string) *actions.Repo {
	t.Helper()
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	r, err := actions.Open(context.Background(), actions.RepoOptions{Repo: dir, Author: "Lao Li <lao.li@example.com>"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// errorEvents collects the Error events e publishes.
func errorEvents(t *testing.T, e *engine.Engine) func() []string {
	t.Helper()
	ch, stop := e.SubscribeAll()
	t.Cleanup(stop)
	var got []string
	return func() []string {
		for {
			select {
			case ev := <-ch:
				if er, ok := ev.(status.ErrorEvent); ok {
					got = append(got, er.Message)
				}
			default:
				return got
			}
		}
	}
}

// TestChannelFreezeHonoured: on a remote whose main refuses pushes, a
// freeze lands on the incident channel; an engine on another clone
// honours it (a manual scale under it stays), shows where it comes from,
// and heals once the channel lifts it. A channel commit that edits a
// manifest is never applied and is reported as an Error event naming the
// commit; it is skipped, so a freeze and an unfreeze recorded after it
// count; the channel's log is the audit.
func TestChannelFreezeHonoured(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "channel")
	remote := gittest.InitBare(t)
	mine := gittest.Init(t)
	mine.Commit("first", map[string]string{
		".kdrift/apps.yaml":   appYAML("up", "deploy/app", ns, true, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 2),
	})
	mine.Git("remote", "add", "origin", remote.Dir)
	mine.Git("push", "-q", "-u", "origin", "main")
	protectMain(t, remote.Dir)
	other := cloneOf(t, remote)

	e := newEngine(t, mine, nil)
	events := errorEvents(t, e)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := replicasOf(t, ns, "web"); got != 2 {
		t.Fatalf("replicas %d, want 2", got)
	}
	if ch := e.Channel(); ch.Tip.Hash != "" || ch.Name != "kdrift/freezes" {
		t.Fatalf("no channel yet, read %+v", ch)
	}

	r := oncall(t, other.Dir)
	res, err := r.Freeze(ctx, actions.FreezeRequest{Selection: actions.Selection{Apps: []string{"up"}}, Reason: "INC-77 keep manual scale"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Channel != "kdrift/freezes" || !res.Pushed {
		t.Fatalf("the freeze did not land on the channel: %+v", res)
	}
	scaleAs(t, ns, "web", "kubectl", 9)
	for i := 0; i < 2; i++ {
		if err := e.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a := appStatus(t, e, "up")
	if got := replicasOf(t, ns, "web"); got != 9 || a.SelfHeal != status.SelfHealFrozen || a.FreezeChannel != "kdrift/freezes" || a.Freeze == nil || a.Freeze.Reason != "INC-77 keep manual scale" {
		t.Fatalf("replicas %d selfHeal %s channel %q freeze %+v: the channel's freeze must hold", got, a.SelfHeal, a.FreezeChannel, a.Freeze)
	}
	if ev := events(); len(ev) != 0 {
		t.Fatalf("a valid channel reported errors: %q", ev)
	}

	// Lifting it on the channel heals.
	if res, err = r.Unfreeze(ctx, actions.UnfreezeRequest{Selection: actions.Selection{Apps: []string{"up"}}, Reason: "INC-77 over"}); err != nil {
		t.Fatal(err)
	}
	if res.Channel != "kdrift/freezes" {
		t.Fatalf("the unfreeze did not go to the channel: %+v", res)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "up")
	if got := replicasOf(t, ns, "web"); got != 2 || a.SelfHeal != status.SelfHealOn || a.FreezeChannel != "" {
		t.Fatalf("replicas %d selfHeal %s channel %q: the unfreeze on the channel must heal", got, a.SelfHeal, a.FreezeChannel)
	}

	// Someone commits a manifest change to the channel: never applied.
	other.Git("fetch", "-q", "origin")
	other.Git("checkout", "-q", "-b", "sneak", "origin/kdrift/freezes")
	bad := other.Commit("scale web to 7", map[string]string{"deploy/app/dep.yaml": deploymentYAML("web", 7)})
	other.Git("push", "-q", "origin", "sneak:kdrift/freezes")
	other.Git("checkout", "-q", "main")
	// A freeze recorded after it counts: each commit is judged by its own
	// diff.
	if res, err = r.Freeze(ctx, actions.FreezeRequest{Selection: actions.Selection{Apps: []string{"up"}}, Reason: "INC-78 after the bad commit"}); err != nil || res.Channel != "kdrift/freezes" {
		t.Fatalf("freeze after the bad commit: %+v %v", res, err)
	}
	scaleAs(t, ns, "web", "kubectl", 9)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "up")
	if got := replicasOf(t, ns, "web"); got != 9 || a.SelfHeal != status.SelfHealFrozen || a.Freeze == nil || a.Freeze.Reason != "INC-78 after the bad commit" {
		t.Fatalf("replicas %d selfHeal %s freeze %+v: a record after a refused channel commit must count, and its manifest never applies", got, a.SelfHeal, a.Freeze)
	}
	ev := events()
	if len(ev) != 1 || !strings.Contains(ev[0], bad[:7]) || !strings.Contains(ev[0], "Test Author") || !strings.Contains(ev[0], "changes deploy/app/dep.yaml") {
		t.Fatalf("want one Error event naming commit %s, its author and what it changed, got %q", bad[:7], ev)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := events(); len(ev) != 1 {
		t.Fatalf("the refused commit is reported once, got %q", ev)
	}
	if ch := e.Channel(); len(ch.Refused) != 1 || ch.Refused[0].Commit.Hash != bad || len(ch.Records) != 3 {
		t.Fatalf("channel read %+v", ch)
	}
	// The unfreeze after it is taken too, and healing resumes (to Git's
	// 2, never the refused commit's 7).
	if res, err = r.Unfreeze(ctx, actions.UnfreezeRequest{Selection: actions.Selection{Apps: []string{"up"}}, Reason: "INC-78 over"}); err != nil || res.Channel != "kdrift/freezes" || !strings.Contains(res.Summary(), "where it is in force") {
		t.Fatalf("unfreeze after the bad commit: %+v %v", res, err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "up")
	if got := replicasOf(t, ns, "web"); got != 2 || a.SelfHeal != status.SelfHealOn {
		t.Fatalf("replicas %d selfHeal %s: the unfreeze recorded after a refused commit must heal", got, a.SelfHeal)
	}

	// The channel's log is the audit: every record, with its trailers.
	log := remote.Git("log", "--format=%s%n%b", "kdrift/freezes")
	for _, want := range []string{"INC-77 keep manual scale", "INC-77 over", "INC-78 after the bad commit", "INC-78 over", "scale web to 7"} {
		if !strings.Contains(log, want) {
			t.Errorf("channel log lacks %q:\n%s", want, log)
		}
	}
}

// TestChannelWakesTheLoop: with the engine running, a freeze on the
// channel is honoured after a Refresh (the leader's notice), as a freeze
// on main is, without waiting for the fetch interval.
func TestChannelWakesTheLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := namespace(t, "channelrun")
	remote := gittest.InitBare(t)
	mine := gittest.Init(t)
	mine.Commit("first", map[string]string{
		".kdrift/apps.yaml":   appYAML("up", "deploy/app", ns, true, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 2),
	})
	mine.Git("remote", "add", "origin", remote.Dir)
	mine.Git("push", "-q", "-u", "origin", "main")
	protectMain(t, remote.Dir)
	other := cloneOf(t, remote)

	e := newEngine(t, mine, func(o *engine.Options) { o.FetchInterval = time.Hour })
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, "the first pass", func() bool {
		a, ok := e.App("up")
		return ok && a.Revision != "" && replicasOf(t, ns, "web") == 2
	})
	r := oncall(t, other.Dir)
	if res, err := r.Freeze(ctx, actions.FreezeRequest{Selection: actions.Selection{Apps: []string{"up"}}, Reason: "INC-79 hold"}); err != nil || res.Channel != "kdrift/freezes" {
		t.Fatalf("freeze: %+v %v", res, err)
	}
	e.Refresh()
	eventually(t, "the channel's freeze in force", func() bool {
		a, _ := e.App("up")
		return a.SelfHeal == status.SelfHealFrozen && a.FreezeChannel == "kdrift/freezes"
	})
	scaleAs(t, ns, "web", "kubectl", 9)
	e.Refresh()
	time.Sleep(500 * time.Millisecond)
	if got := replicasOf(t, ns, "web"); got != 9 {
		t.Fatalf("replicas %d: the running engine healed under a channel freeze", got)
	}
}

// TestChannelReadFromSingleBranchClone: a clone made with --single-branch
// fetches main alone; the first pass of an engine on it (a one-shot
// command's only pass) still fetches the channel and honours its freeze.
func TestChannelReadFromSingleBranchClone(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "channel-single")
	remote := gittest.InitBare(t)
	mine := gittest.Init(t)
	mine.Commit("first", map[string]string{
		".kdrift/apps.yaml":   appYAML("single", "deploy/app", ns, true, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 2),
	})
	mine.Git("remote", "add", "origin", remote.Dir)
	mine.Git("push", "-q", "-u", "origin", "main")
	protectMain(t, remote.Dir)
	res, err := oncall(t, cloneOf(t, remote).Dir).Freeze(ctx, actions.FreezeRequest{Selection: actions.Selection{Apps: []string{"single"}}, Reason: "INC-78 hold"})
	if err != nil || res.Channel != "kdrift/freezes" || !res.Pushed {
		t.Fatalf("freeze on the channel: %+v %v", res, err)
	}

	single := gittest.Init(t)
	single.Dir = filepath.Join(t.TempDir(), "single")
	mine.Git("clone", "-q", "--single-branch", "--branch", "main", remote.Dir, single.Dir)
	if spec := single.Git("config", "--get-all", "remote.origin.fetch"); strings.TrimSpace(spec) != "+refs/heads/main:refs/remotes/origin/main" {
		t.Fatalf("not a single-branch clone: %q", spec)
	}
	e := newEngine(t, single, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "single")
	if a.SelfHeal != status.SelfHealFrozen || a.FreezeChannel != "kdrift/freezes" || a.Freeze == nil || a.Freeze.Reason != "INC-78 hold" {
		t.Fatalf("selfHeal %s channel %q freeze %+v: the channel's freeze must be read on the first pass", a.SelfHeal, a.FreezeChannel, a.Freeze)
	}
}
