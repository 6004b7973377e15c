package source_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

var files = map[string]string{
	".kdrift/apps.yaml":                "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec: {path: deploy/web}\n",
	"deploy/web/kustomization.yaml":    "resources: [cm.yaml]\n",
	"deploy/web/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: blue}\n",
	"deploy/web/sub/deeper/extra.yaml": "x: 1\n",
	"README.md":                        "hello\n",
}

// remote makes a bare repository holding one commit of files on main and
// returns it with the working copy that pushes to it.
func remote(t *testing.T) (bare, work *gittest.Repo) {
	t.Helper()
	bare = gittest.InitBare(t)
	work = gittest.Init(t)
	work.Commit("first", files)
	work.Git("remote", "add", "origin", bare.Dir)
	work.Git("push", "-q", "origin", "main")
	return bare, work
}

func TestCloneFileURLAndReuseCache(t *testing.T) {
	ctx := context.Background()
	bare, work := remote(t)
	cache := t.TempDir()
	r, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsRemote() || r.Branch() != "main" || !strings.HasPrefix(r.Dir(), cache) {
		t.Fatalf("remote=%v branch=%q dir=%q", r.IsRemote(), r.Branch(), r.Dir())
	}
	rev, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := work.Git("rev-parse", "HEAD")
	if rev.Hash != want || rev.Subject != "first" || rev.Author != "Test Author" || rev.Email != "author@example.com" || rev.Time.IsZero() {
		t.Fatalf("Head = %+v, want %s", rev, want)
	}
	snap, err := r.Snapshot(rev.Hash)
	if err != nil {
		t.Fatal(err)
	}
	data, err := fs.ReadFile(snap, "deploy/web/cm.yaml")
	if err != nil || string(data) != files["deploy/web/cm.yaml"] {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	if apps := snap.Apps(); len(apps.Apps) != 1 || apps.Apps[0].Metadata.Name != "web" {
		t.Fatalf("Apps = %+v", apps)
	}

	// A second Open reuses the cache folder and fetches into it.
	c2 := work.Commit("second", map[string]string{"README.md": "bye\n"})
	work.Git("push", "-q", "origin", "main")
	r2, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Dir() != r.Dir() {
		t.Fatalf("cache not reused: %s vs %s", r2.Dir(), r.Dir())
	}
	if rev, err := r2.Head(ctx); err != nil || rev.Hash != c2 {
		t.Fatalf("Head after reopen = %+v, %v; want %s", rev, err, c2)
	}
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache holds %v, %v; want one clone", entries, err)
	}
}

func TestRemoteDefaultBranchAndBranchOption(t *testing.T) {
	ctx := context.Background()
	bare, work := remote(t)
	work.Git("checkout", "-q", "-b", "staging")
	staging := work.Commit("on staging", map[string]string{"README.md": "staging\n"})
	work.Git("push", "-q", "origin", "staging")
	bare.Git("symbolic-ref", "HEAD", "refs/heads/staging")

	r, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Branch() != "staging" {
		t.Fatalf("default branch = %q, want the remote HEAD staging", r.Branch())
	}
	if rev, _ := r.Head(ctx); rev.Hash != staging {
		t.Fatalf("Head = %s, want %s", rev.Hash, staging)
	}
	r, err = source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: t.TempDir(), Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if rev, _ := r.Head(ctx); rev.Hash != work.Git("rev-parse", "main") {
		t.Fatalf("Head of main = %s", rev.Hash)
	}
	if _, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: t.TempDir(), Branch: "nope"}); err == nil || !strings.Contains(err.Error(), `branch "nope" not found`) {
		t.Fatalf("missing branch error = %v", err)
	}
}

func TestLocalRepoIgnoresWorktree(t *testing.T) {
	ctx := context.Background()
	work := gittest.Init(t)
	first := work.Commit("first", files)
	// Uncommitted edits of every kind: modified, staged, untracked, deleted.
	work.Write(map[string]string{"deploy/web/cm.yaml": "dirty: true\n", "deploy/web/new.yaml": "untracked\n"})
	work.Git("add", "deploy/web/new.yaml")
	if err := os.Remove(filepath.Join(work.Dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	statusBefore := work.Git("status", "--porcelain")
	indexBefore, err := os.ReadFile(filepath.Join(work.Dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}

	r, err := source.Open(ctx, source.Options{Location: filepath.Join(work.Dir, "deploy")}) // a folder inside the working copy
	if err != nil {
		t.Fatal(err)
	}
	if r.IsRemote() || r.Branch() != "main" || r.Dir() != work.Dir {
		t.Fatalf("remote=%v branch=%q dir=%q", r.IsRemote(), r.Branch(), r.Dir())
	}
	rev, err := r.Head(ctx)
	if err != nil || rev.Hash != first {
		t.Fatalf("Head = %+v, %v; want %s", rev, err, first)
	}
	snap, err := r.Snapshot(rev.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(snap, ".kdrift/apps.yaml", "README.md", "deploy/web/cm.yaml", "deploy/web/kustomization.yaml", "deploy/web/sub/deeper/extra.yaml"); err != nil {
		t.Fatal(err)
	}
	if data, _ := fs.ReadFile(snap, "deploy/web/cm.yaml"); string(data) != files["deploy/web/cm.yaml"] {
		t.Errorf("snapshot shows the dirty edit: %q", data)
	}
	if _, err := fs.Stat(snap, "deploy/web/new.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("snapshot shows a staged, uncommitted file: %v", err)
	}
	for _, dir := range []string{".", "deploy", "deploy/web/sub"} {
		got, err := snap.TreeHash(dir)
		if want := work.Git("rev-parse", "HEAD:"+strings.TrimPrefix(dir, ".")); err != nil || got != want {
			t.Errorf("TreeHash(%s) = %s, %v; want %s", dir, got, err, want)
		}
	}
	if _, err := snap.TreeHash("deploy/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("TreeHash of a missing folder = %v", err)
	}
	if got := work.Git("status", "--porcelain"); got != statusBefore {
		t.Errorf("worktree status changed:\n%s\nwas\n%s", got, statusBefore)
	}
	if indexAfter, _ := os.ReadFile(filepath.Join(work.Dir, ".git", "index")); string(indexAfter) != string(indexBefore) {
		t.Error("the index was rewritten")
	}

	// A commit made by the person is seen after Fetch (which re-reads the
	// repository), and the older snapshot still reads its own commit.
	work.Git("reset", "-q", "--hard")
	second := work.Commit("second", map[string]string{"deploy/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: red}\n"})
	work.Git("gc", "-q") // packs the new objects: a stale go-git handle would not find them
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if rev, err := r.Head(ctx); err != nil || rev.Hash != second {
		t.Fatalf("Head after commit = %+v, %v", rev, err)
	}
	if _, err := r.Snapshot(second); err != nil {
		t.Fatal(err)
	}
	if data, err := fs.ReadFile(snap, "deploy/web/cm.yaml"); err != nil || string(data) != files["deploy/web/cm.yaml"] {
		t.Errorf("old snapshot after gc = %q, %v", data, err)
	}
}

func TestLocalBareAndDetached(t *testing.T) {
	ctx := context.Background()
	bare, work := remote(t)
	r, err := source.Open(ctx, source.Options{Location: bare.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if rev, err := r.Head(ctx); err != nil || rev.Hash != work.Git("rev-parse", "HEAD") || r.IsRemote() {
		t.Fatalf("bare Head = %+v, %v", rev, err)
	}
	work.Git("checkout", "-q", "--detach")
	_, err = source.Open(ctx, source.Options{Location: work.Dir})
	if err == nil || !strings.Contains(err.Error(), "HEAD is detached; pass --branch") {
		t.Fatalf("detached error = %v", err)
	}
	if _, err := source.Open(ctx, source.Options{Location: work.Dir, Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := source.Open(ctx, source.Options{Location: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "cannot open") {
		t.Fatalf("not-a-repository error = %v", err)
	}
}

func TestWatchSeesPushedCommit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bare, work := remote(t)
	r, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	revs := r.Watch(ctx, time.Hour) // only Refresh makes it fetch
	first := recv(t, revs)
	if first.Hash != work.Git("rev-parse", "HEAD") {
		t.Fatalf("first revision = %s", first.Hash)
	}
	next := work.Commit("scale web to 3", map[string]string{"README.md": "new\n"})
	work.Git("push", "-q", "origin", "main")
	r.Refresh()
	if got := recv(t, revs); got.Hash != next || got.Subject != "scale web to 3" {
		t.Fatalf("watched revision = %+v, want %s", got, next)
	}

	// With a short interval the ticker alone picks up the next push.
	revs2 := r.Watch(ctx, 20*time.Millisecond)
	if got := recv(t, revs2); got.Hash != next {
		t.Fatalf("second watcher starts at %s", got.Hash)
	}
	third := work.Commit("third", map[string]string{"README.md": "third\n"})
	work.Git("push", "-q", "origin", "main")
	if got := recv(t, revs2); got.Hash != third {
		t.Fatalf("ticker watcher saw %s, want %s", got.Hash, third)
	}
	cancel()
	for range revs2 {
	}
	for range revs {
	}
}

// recv waits for one revision; the long limit only guards against a hang.
func recv(t *testing.T, ch <-chan source.Revision) source.Revision {
	t.Helper()
	select {
	case rev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return rev
	case <-time.After(60 * time.Second):
		t.Fatal("no revision within 60s")
	}
	return source.Revision{}
}

func TestUnreachableRemote(t *testing.T) {
	ctx := context.Background()
	t.Run("clone", func(t *testing.T) {
		loc := "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "missing.git"))
		cache := t.TempDir()
		r, err := source.Open(ctx, source.Options{Location: loc, CacheDir: cache})
		var re *source.RemoteError
		if r != nil || !errors.As(err, &re) || re.Op != "clone" {
			t.Fatalf("error = %v, want a clone RemoteError", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "git remote "+loc+": clone failed") || !strings.Contains(msg, "check the URL") {
			t.Errorf("message = %q", msg)
		}
		if entries, _ := os.ReadDir(cache); len(entries) != 0 {
			t.Errorf("failed clone left %v in the cache", entries)
		}
	})
	t.Run("https closed port", func(t *testing.T) {
		loc := "https://kdrift:s3cret@127.0.0.1:1/team/deploy.git"
		_, err := source.Open(ctx, source.Options{Location: loc, CacheDir: t.TempDir()})
		var re *source.RemoteError
		if !errors.As(err, &re) {
			t.Fatalf("error = %v, want RemoteError", err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "git remote https://127.0.0.1:1/team/deploy.git: clone failed") || strings.Contains(msg, "s3cret") {
			t.Errorf("message = %q", msg)
		}
	})
	t.Run("fetch keeps last good revision", func(t *testing.T) {
		bare, work := remote(t)
		cache := t.TempDir()
		r, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		moved := bare.Dir + ".away"
		if err := os.Rename(bare.Dir, moved); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Rename(moved, bare.Dir) })
		err = r.Fetch(ctx)
		var re *source.RemoteError
		if !errors.As(err, &re) || re.Op != "fetch" || re.Remote != bare.URL() {
			t.Fatalf("Fetch error = %v", err)
		}
		if !strings.Contains(err.Error(), "git remote "+bare.URL()+": fetch failed") || !strings.Contains(err.Error(), "keeps using the last fetched revision") {
			t.Errorf("message = %q", err)
		}
		if r.LastFetchError() == nil {
			t.Error("LastFetchError is nil after a failed fetch")
		}
		rev, err := r.Head(ctx)
		if err != nil || rev.Hash != work.Git("rev-parse", "HEAD") {
			t.Fatalf("Head while unreachable = %+v, %v", rev, err)
		}
		// Opening again from the cache works offline, with the error.
		r2, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: cache})
		if !errors.As(err, &re) || r2 == nil {
			t.Fatalf("offline Open = %v, %v", r2, err)
		}
		if rev2, err := r2.Head(ctx); err != nil || rev2.Hash != rev.Hash {
			t.Fatalf("offline Head = %+v, %v", rev2, err)
		}
	})
}

func TestAuthFromEnv(t *testing.T) {
	t.Setenv(source.EnvToken, "")
	t.Setenv(source.EnvTokenFallback, "tok-2")
	a, err := source.AuthFromEnv("https://example.com/x.git")
	if err != nil || a == nil || !strings.Contains(a.String(), "git:*******") {
		t.Fatalf("fallback token auth = %v, %v", a, err)
	}
	t.Setenv(source.EnvToken, "tok-1")
	t.Setenv(source.EnvUsername, "ci-bot")
	if a, _ := source.AuthFromEnv("https://example.com/x.git"); a == nil || !strings.Contains(a.String(), "ci-bot") {
		t.Fatalf("token auth = %v", a)
	}
	if a, err := source.AuthFromEnv("file:///tmp/x"); a != nil || err != nil {
		t.Fatalf("file auth = %v, %v", a, err)
	}
	t.Setenv(source.EnvSSHKey, filepath.Join(t.TempDir(), "missing_key"))
	if _, err := source.AuthFromEnv("git@example.com:team/deploy.git"); err == nil || !strings.Contains(err.Error(), source.EnvSSHKey) {
		t.Fatalf("missing key error = %v", err)
	}
	t.Setenv(source.EnvSSHKey, "")
	t.Setenv("SSH_AUTH_SOCK", "")
	if _, err := source.AuthFromEnv("ssh://git@example.com/team/deploy.git"); err == nil || !strings.Contains(err.Error(), "no ssh credentials") {
		t.Fatalf("no agent error = %v", err)
	}
}

func TestSnapshotReuse(t *testing.T) {
	work := gittest.Init(t)
	first := work.Commit("first", files)
	r, err := source.Open(context.Background(), source.Options{Location: work.Dir})
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Snapshot(first)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Snapshot(first)
	if err != nil || a != b || a.Commit() != first {
		t.Fatalf("second Snapshot of %s = %p (%v), first %p", first, b, err, a)
	}
	short, err := r.Snapshot(first[:10])
	if err != nil || short.Commit() != first {
		t.Fatalf("short hash snapshot = %v, %v", short, err)
	}
	if _, err := r.Snapshot("0123456789012345678901234567890123456789"); err == nil || !strings.Contains(err.Error(), "commit 0123456789") {
		t.Fatalf("unknown commit error = %v", err)
	}
}

func TestSnapshotSymlinks(t *testing.T) {
	work := gittest.Init(t)
	work.Write(files)
	for link, target := range map[string]string{
		"deploy/prod/cm.yaml":   "../web/cm.yaml", // a file
		"deploy/web-alias":      "web",            // a folder
		"deploy/outside":        "../../etc",      // leaves the repository
		"deploy/loop-a":         "loop-b",
		"deploy/loop-b":         "loop-a",
		"deploy/prod/base-link": "../web-alias/sub",
	} {
		p := filepath.Join(work.Dir, filepath.FromSlash(link))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	hash := work.Commit("links", nil)
	r, err := source.Open(context.Background(), source.Options{Location: work.Dir})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Snapshot(hash)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := fs.ReadFile(snap, "deploy/prod/cm.yaml"); err != nil || string(data) != files["deploy/web/cm.yaml"] {
		t.Fatalf("linked file = %q, %v", data, err)
	}
	if data, err := fs.ReadFile(snap, "deploy/prod/base-link/deeper/extra.yaml"); err != nil || string(data) != "x: 1\n" {
		t.Fatalf("file through two links = %q, %v", data, err)
	}
	if real, err := snap.RealPath("deploy/prod/base-link/deeper"); err != nil || real != "deploy/web/sub/deeper" {
		t.Fatalf("RealPath = %q, %v", real, err)
	}
	h1, err1 := snap.TreeHash("deploy/web-alias")
	h2, err2 := snap.TreeHash("deploy/web")
	if err1 != nil || err2 != nil || h1 != h2 {
		t.Fatalf("TreeHash through a link = %s (%v), want %s (%v)", h1, err1, h2, err2)
	}
	if _, err := fs.ReadFile(snap, "deploy/outside/passwd"); err == nil || !strings.Contains(err.Error(), "leaves the repository") {
		t.Fatalf("escaping link = %v", err)
	}
	if _, err := fs.Stat(snap, "deploy/loop-a"); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Fatalf("link loop = %v", err)
	}
	entries, err := fs.ReadDir(snap, "deploy/prod")
	if err != nil || len(entries) != 2 || entries[1].Type() != fs.ModeSymlink {
		t.Fatalf("ReadDir lists %v, %v", entries, err)
	}
	if target, err := fs.ReadLink(snap, "deploy/prod/cm.yaml"); err != nil || target != "../web/cm.yaml" {
		t.Fatalf("ReadLink = %q, %v", target, err)
	}
	if st, err := fs.Lstat(snap, "deploy/web-alias"); err != nil || st.Mode().Type() != fs.ModeSymlink {
		t.Fatalf("Lstat = %v, %v", st, err)
	}
	// TestFS opens every entry, so it runs on a folder without broken links.
	prod, err := fs.Sub(snap, "deploy/prod")
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(prod, "cm.yaml", "base-link"); err != nil {
		t.Fatal(err)
	}
}

// TestChangedPaths: what a snapshot says changed since an earlier root
// tree is what `git diff-tree -r -t` says (every changed file and every
// folder on the way), with the entries added, removed or replaced told
// apart from folders whose contents differ; ChangedEntries says which
// entries of one folder changed, and refuses a folder whose entries did.
func TestChangedPaths(t *testing.T) {
	ctx := context.Background()
	work := gittest.Init(t)
	first := work.Commit("first", map[string]string{
		"apps/a/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/a/cm.yaml":            "a: 1\n",
		"apps/b/cm.yaml":            "b: 1\n",
		"apps/c/cm.yaml":            "c: 1\n",
		"gone/x.yaml":               "x: 1\n",
		"README.md":                 "readme\n",
	})
	if err := os.RemoveAll(filepath.Join(work.Dir, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(work.Dir, "apps/c")); err != nil {
		t.Fatal(err)
	}
	second := work.Commit("second", map[string]string{
		"apps/a/cm.yaml":    "a: 2\n", // changed
		"apps/c":            "now a file\n",
		"new/deep/y.yaml":   "y: 1\n", // added with its folders
		"apps/b/extra.yaml": "e: 1\n", // added beside an unchanged file
	})
	r, err := source.Open(ctx, source.Options{Location: work.Dir})
	if err != nil {
		t.Fatal(err)
	}
	firstSnap, err := r.Snapshot(first)
	if err != nil {
		t.Fatal(err)
	}
	oldRoot, err := firstSnap.TreeHash(".")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Snapshot(second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := snap.ChangedPaths(oldRoot, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"apps": false, "apps/a": false, "apps/a/cm.yaml": true,
		"apps/b": false, "apps/b/extra.yaml": true,
		"apps/c": true, "gone": true, "new": true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ChangedPaths = %v\nwant %v", got, want)
	}
	// Git agrees: every path it names is listed, or inside an entry
	// listed as added, removed or replaced (whose insides are not).
	for _, line := range strings.Split(work.Git("diff-tree", "-r", "-t", "--name-only", "--no-commit-id", first, second), "\n") {
		if line == "" {
			continue
		}
		covered := false
		for p := line; p != "."; p = path.Dir(p) {
			if replaced, ok := got[p]; ok && (p == line || replaced) {
				covered = true
				break
			}
		}
		if !covered {
			t.Errorf("git diff-tree names %s, ChangedPaths does not cover it", line)
		}
	}
	if _, err := snap.ChangedPaths(oldRoot, 3); !errors.Is(err, source.ErrTooManyChanges) {
		t.Errorf("ChangedPaths past its bound = %v, want ErrTooManyChanges", err)
	}
	if _, err := snap.ChangedPaths("0123", 100); err == nil {
		t.Error("ChangedPaths of a malformed hash succeeded")
	}

	oldA, err := firstSnap.TreeHash("apps/a")
	if err != nil {
		t.Fatal(err)
	}
	if names, err := snap.ChangedEntries("apps/a", oldA); err != nil || !reflect.DeepEqual(names, []string{"cm.yaml"}) {
		t.Errorf("ChangedEntries(apps/a) = %v, %v; want [cm.yaml]", names, err)
	}
	oldB, err := firstSnap.TreeHash("apps/b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.ChangedEntries("apps/b", oldB); !errors.Is(err, source.ErrShapeChanged) {
		t.Errorf("ChangedEntries of a folder with a new file = %v, want ErrShapeChanged", err)
	}
	if names, err := snap.ChangedEntries("apps/a", work.Git("rev-parse", second+":apps/a")); err != nil || len(names) != 0 {
		t.Errorf("ChangedEntries against itself = %v, %v; want none", names, err)
	}
}
