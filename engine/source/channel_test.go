package source_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

const frozenApp = "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec:\n  path: deploy/web\n  freeze: {reason: INC-1 hold, by: Lao Li <lao.li@example.com>, at: \"2026-01-01T00:00:00Z\"}\n"

// channelWork is a working copy on a channel branch of bare, started from
// main.
func channelWork(t *testing.T, bare *gittest.Repo) *gittest.Repo {
	t.Helper()
	w := gittest.Init(t)
	w.Git("remote", "add", "origin", bare.Dir)
	w.Git("fetch", "-q", "origin")
	w.Git("checkout", "-q", "-b", "kdrift/freezes", "origin/main")
	return w
}

// TestReadChannelRefusals: each kind of channel commit that is not a
// freeze record is refused, naming the commit, its author and what it
// changed; the records before it stay valid.
func TestReadChannelRefusals(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		merge bool
		want  string
	}{
		{"manifest", map[string]string{"deploy/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: red}\n"}, false, "changes deploy/web/cm.yaml"},
		{"app spec", map[string]string{".kdrift/apps.yaml": strings.Replace(frozenApp, "deploy/web", "deploy/other", 1)}, false, "changes App web in .kdrift/apps.yaml beyond its freezes"},
		{"settings", map[string]string{".kdrift/settings.yaml": "apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec: {freezes: {channel: elsewhere}}\n"}, false, "changes .kdrift/settings.yaml"},
		{"new app", map[string]string{".kdrift/new.yaml": "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: new}\nspec: {path: deploy/web}\n"}, false, "adds .kdrift/new.yaml"},
		{"merge", nil, true, "a commit with 2 parents"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			bare, work := remote(t)
			w := channelWork(t, bare)
			good := w.Commit("freeze(web): INC-1 hold", map[string]string{".kdrift/apps.yaml": frozenApp})
			var bad string
			if c.merge {
				work.Commit("main moves", map[string]string{"README.md": "moved\n"})
				work.Git("push", "-q", "origin", "main")
				w.Git("fetch", "-q", "origin")
				w.Git("merge", "-q", "--no-ff", "-m", "merge main", "origin/main")
				bad = w.Git("rev-parse", "HEAD")
			} else {
				bad = w.Commit("sneak", c.files)
			}
			w.Commit("freeze after", map[string]string{".kdrift/apps.yaml": strings.Replace(frozenApp, "INC-1", "INC-2", 1)})
			w.Git("push", "-q", "origin", "kdrift/freezes")
			r, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			head, err := r.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			read, err := r.ReadChannel(ctx, "kdrift/freezes", head.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if read.Refused == nil || read.Refused.Commit.Hash != bad || !strings.Contains(read.Refused.Problem, c.want) {
				t.Fatalf("want commit %s refused for %q, got %+v", bad, c.want, read.Refused)
			}
			msg := read.Refused.Error()
			if !strings.Contains(msg, bad[:7]) || !strings.Contains(msg, "Test Author") {
				t.Fatalf("the report does not name the commit and its author: %s", msg)
			}
			if read.Valid != good || len(read.Records) != 1 || read.Ref != "origin/kdrift/freezes" {
				t.Fatalf("valid %s records %d ref %s, want %s, 1, origin/kdrift/freezes", read.Valid, len(read.Records), read.Ref, good)
			}
		})
	}
}

// TestChannelMissingAndWatched: a missing channel is an empty read, not
// an error; Watch sends again when only the channel moves.
func TestChannelMissingAndWatched(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bare, work := remote(t)
	r, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read, err := r.ReadChannel(ctx, "kdrift/freezes", head.Hash)
	if err != nil || read.Tip.Hash != "" || read.Refused != nil || read.Valid != "" {
		t.Fatalf("a missing channel: %+v %v", read, err)
	}
	if _, err := r.ReadChannel(ctx, "../main", head.Hash); err == nil {
		t.Fatal("an invalid channel name was read")
	}
	r.SetChannel("kdrift/freezes")
	revs := r.Watch(ctx, time.Hour)
	recv(t, revs)
	w := channelWork(t, bare)
	rec := w.Commit("freeze(web): INC-1 hold", map[string]string{".kdrift/apps.yaml": frozenApp})
	w.Git("push", "-q", "origin", "kdrift/freezes")
	r.Refresh()
	if got := recv(t, revs); got.Hash != head.Hash {
		t.Fatalf("watch sent %s, want the unchanged head %s", got.Hash, head.Hash)
	}
	read, err = r.ReadChannel(ctx, "kdrift/freezes", head.Hash)
	if err != nil || read.Valid != rec || read.Base != head.Hash {
		t.Fatalf("read %+v %v, want valid %s on base %s", read, err, rec, head.Hash)
	}
	_ = work
	cancel()
	for range revs {
	}
}

// TestChannelFetchedIntoSingleBranchClone: a clone made with
// --single-branch fetches main alone; kdrift still fetches the channel
// into its remote-tracking ref (and sees its freeze), and drops that ref
// once the channel branch is deleted on the remote. git itself checks
// what kdrift wrote.
func TestChannelFetchedIntoSingleBranchClone(t *testing.T) {
	ctx := context.Background()
	bare, _ := remote(t)
	w := channelWork(t, bare)
	rec := w.Commit("freeze(web): INC-1 hold", map[string]string{".kdrift/apps.yaml": frozenApp})
	w.Git("push", "-q", "origin", "kdrift/freezes")

	dir := filepath.Join(t.TempDir(), "clone")
	gitCmd(t, "", "clone", "-q", "--single-branch", "--branch", "main", bare.Dir, dir)
	if out := gitCmd(t, dir, "config", "--get-all", "remote.origin.fetch"); out != "+refs/heads/main:refs/remotes/origin/main" {
		t.Fatalf("the clone is not single-branch: fetch refspec %q", out)
	}
	r, err := source.Open(ctx, source.Options{Location: dir})
	if err != nil {
		t.Fatal(err)
	}
	r.SetChannel("kdrift/freezes")
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, dir, "rev-parse", "refs/remotes/origin/kdrift/freezes"); got != rec {
		t.Fatalf("origin/kdrift/freezes is %q, want the channel's record %s", got, rec)
	}
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read, err := r.ReadChannel(ctx, "kdrift/freezes", head.Hash)
	if err != nil || read.Valid != rec || len(read.Records) != 1 {
		t.Fatalf("read %+v %v, want the record %s", read, err, rec)
	}

	w.Git("push", "-q", "origin", "--delete", "kdrift/freezes")
	if err := r.Fetch(ctx); err != nil {
		t.Fatalf("a channel deleted on the remote fails the fetch: %v", err)
	}
	if out, err := exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", "refs/remotes/origin/kdrift/freezes").Output(); err == nil {
		t.Fatalf("the deleted channel's tracking ref stays at %s: its freezes would stay in force", out)
	}
	if read, err := r.ReadChannel(ctx, "kdrift/freezes", head.Hash); err != nil || read.Valid != "" {
		t.Fatalf("after deletion: %+v %v, want an empty read", read, err)
	}
}

// gitCmd runs git in dir and returns its trimmed output.
func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
