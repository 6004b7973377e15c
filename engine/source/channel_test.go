package source_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
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
// changed; it is skipped, and the records before and after it count,
// each judged by its own diff.
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
			later := frozenApp
			if f, ok := c.files[".kdrift/apps.yaml"]; ok {
				later = f // a record changes only freezes, over whatever is there
			}
			after := w.Commit("freeze after", map[string]string{".kdrift/apps.yaml": strings.Replace(later, "INC-1", "INC-2", 1)})
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
			if len(read.Refused) != 1 || read.Refused[0].Commit.Hash != bad || !strings.Contains(read.Refused[0].Problem, c.want) {
				t.Fatalf("want commit %s refused for %q, got %+v", bad, c.want, read.Refused)
			}
			msg := read.Refused[0].Error()
			if !strings.Contains(msg, bad[:7]) || !strings.Contains(msg, "Test Author") || !strings.Contains(msg, "skips it") {
				t.Fatalf("the report does not name the commit and its author: %s", msg)
			}
			if read.Valid != after || len(read.Records) != 2 || read.Records[0].Hash != good || read.Ref != "origin/kdrift/freezes" {
				t.Fatalf("valid %s records %+v ref %s, want %s after %s, origin/kdrift/freezes", read.Valid, read.Records, read.Ref, after, good)
			}
			web, touched := read.Freezes.Apply(app.App{Metadata: app.Metadata{Name: "web"}})
			if !touched || web.Spec.Freeze == nil || web.Spec.Freeze.Reason != "INC-2 hold" {
				t.Fatalf("the record after the refused commit must count: %+v", web.Spec.Freeze)
			}
		})
	}
}

// TestRefusedCommitsFreezeNeverCounts: each channel commit is judged by
// its own diff, so a freeze a refused commit wrote (along with a
// manifest) is not taken even though later records sit on top of it;
// the later records' own freezes are.
func TestRefusedCommitsFreezeNeverCounts(t *testing.T) {
	ctx := context.Background()
	bare, work := remote(t)
	two := "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec: {path: deploy/web}\n---\napiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: api}\nspec: {path: deploy/web}\n"
	work.Commit("two apps", map[string]string{".kdrift/apps.yaml": two})
	work.Git("push", "-q", "origin", "main")
	w := channelWork(t, bare)
	webFrozen := strings.Replace(two, "spec: {path: deploy/web}\n---", "spec:\n  path: deploy/web\n  freeze: {reason: INC-9 sneaked, by: Eve <eve@example.com>, at: \"2026-01-01T00:00:00Z\"}\n---", 1)
	bad := w.Commit("freeze web and recolour", map[string]string{
		".kdrift/apps.yaml":  webFrozen,
		"deploy/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: red}\n",
	})
	both := strings.Replace(webFrozen, "metadata: {name: api}\nspec: {path: deploy/web}\n", "metadata: {name: api}\nspec:\n  path: deploy/web\n  freeze: {reason: INC-3 hold api, by: Lao Li <lao.li@example.com>, at: \"2026-01-02T00:00:00Z\"}\n", 1)
	w.Commit("freeze(api): INC-3 hold api", map[string]string{".kdrift/apps.yaml": both})
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
	if len(read.Refused) != 1 || read.Refused[0].Commit.Hash != bad || len(read.Records) != 1 {
		t.Fatalf("refused %+v records %+v, want %s refused and one record", read.Refused, read.Records, bad)
	}
	if web, touched := read.Freezes.Apply(app.App{Metadata: app.Metadata{Name: "web"}}); touched || web.Spec.Freeze != nil {
		t.Fatalf("the refused commit's freeze of web counts: %+v", web.Spec.Freeze)
	}
	if api, touched := read.Freezes.Apply(app.App{Metadata: app.Metadata{Name: "api"}}); !touched || api.Spec.Freeze == nil || api.Spec.Freeze.Reason != "INC-3 hold api" {
		t.Fatalf("the valid record's freeze of api must count: %+v", api.Spec.Freeze)
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
