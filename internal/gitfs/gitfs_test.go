package gitfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"kdrift.dev/kdrift/internal/gitfs"
	"kdrift.dev/kdrift/internal/gittest"
)

// gitIn runs git in dir and returns stdout and stderr apart, so a reader
// can tell a warning ("ignoring broken ref") from its output.
func gitIn(dir string, args ...string) (string, string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
		"GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.com",
		"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.com")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return strings.TrimSpace(out.String()), strings.TrimSpace(errb.String()), err
}

func newRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	r := gittest.Init(t)
	r.Commit("base", map[string]string{"apps.yaml": "name: a\n", "deploy/x.yaml": "kind: X\n"})
	return r
}

func open(t *testing.T, dir string) *git.Repository {
	t.Helper()
	g, err := gitfs.PlainOpen(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// commitOn makes an empty commit on top of branch and moves the branch to
// it with go-git's compare-and-swap.
func commitOn(g *git.Repository, branch, msg string) (plumbing.Hash, error) {
	name := plumbing.NewBranchReferenceName(branch)
	ref, err := g.Storer.Reference(name)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := newCommit(g, ref.Hash(), msg)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return h, g.Storer.CheckAndSetReference(plumbing.NewHashReference(name, h), ref)
}

func newCommit(g *git.Repository, parent plumbing.Hash, msg string) (plumbing.Hash, error) {
	pc, err := g.CommitObject(parent)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "kdrift", Email: "kdrift@example.com", When: time.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: pc.TreeHash, ParentHashes: []plumbing.Hash{parent}}
	obj := g.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.Storer.SetEncodedObject(obj)
}

// noLocks fails when a .lock file is left anywhere under dir.
func noLocks(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".lock") {
			t.Errorf("lock file left behind: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func fsck(t *testing.T, dir string) {
	t.Helper()
	if out, errOut, err := gitIn(dir, "fsck", "--strict", "--no-dangling"); err != nil || out != "" || errOut != "" {
		t.Fatalf("git fsck in %s: %v\n%s\n%s", dir, err, out, errOut)
	}
}

func TestIsProtected(t *testing.T) {
	for p, want := range map[string]bool{
		"HEAD": true, "ORIG_HEAD": true, "CHERRY_PICK_HEAD": true, "/HEAD": true,
		"refs/heads/main": true, "refs/remotes/origin/main": true, "refs/heads/feature/x": true,
		"packed-refs": true, "index": true, "config": true, "shallow": true,
		"objects/pack/pack-0123.idx": true,
		"refs/heads/main.lock":       false, "index.lock": false, "packed-refs.lock": false,
		"objects/pack/pack-0123.pack": false, "objects/ab/cdef": false, "objects/pack/tmp_obj_1": false,
		"kdrift-advance": false, "logs/HEAD": false, "description": false, "head": false, "MYHEADX": false,
		"objects/info/alternates": false, "hooks/pre-commit": false,
	} {
		if got := gitfs.IsProtected(p); got != want {
			t.Errorf("IsProtected(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestStressGitReadsNeverSeeAHalfWrittenFile commits many times through
// go-git, rewriting the index and config too, while git commands read the
// repository: none ever fails or warns, and the repository ends whole.
func TestStressGitReadsNeverSeeAHalfWrittenFile(t *testing.T) {
	repo := newRepo(t)
	g := open(t, repo.Dir)
	n := 150
	if testing.Short() {
		n = 30
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	reads := 0
	readers := [][]string{
		{"rev-parse", "--verify", "HEAD"},
		{"log", "-1", "--format=%H"},
		{"status", "--porcelain"},
		{"for-each-ref"},
		{"config", "--get", "kdrift.stress"},
	}
	for _, args := range readers {
		wg.Add(1)
		go func(args []string) {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				out, errOut, err := gitIn(repo.Dir, args...)
				mu.Lock()
				reads++
				// config --get exits 1 before the first SetConfig wrote the key.
				if (err != nil && !(args[0] == "config" && out == "" && errOut == "")) || errOut != "" {
					failures = append(failures, fmt.Sprintf("git %s: %v: %s", strings.Join(args, " "), err, errOut))
				}
				mu.Unlock()
			}
		}(args)
	}
	var last plumbing.Hash
	var werr error
	for i := 0; i < n && werr == nil; i++ {
		if last, werr = commitOn(g, "main", fmt.Sprintf("kdrift %d", i)); werr != nil {
			break
		}
		idx, err := g.Storer.Index()
		if err != nil {
			werr = err
			break
		}
		if werr = g.Storer.SetIndex(idx); werr != nil {
			break
		}
		if i%5 == 0 {
			cfg, err := g.Config()
			if err != nil {
				werr = err
				break
			}
			cfg.Raw.Section("kdrift").SetOption("stress", fmt.Sprint(i))
			werr = g.Storer.SetConfig(cfg)
		}
	}
	close(done)
	wg.Wait()
	if werr != nil {
		t.Fatalf("go-git write: %v", werr)
	}
	for _, f := range failures {
		t.Error(f)
	}
	if reads < 20 {
		t.Fatalf("only %d git reads ran beside %d commits: the test raced nothing", reads, n)
	}
	t.Logf("%d commits, %d concurrent git reads", n, reads)
	if got := repo.Git("rev-parse", "main"); got != last.String() {
		t.Fatalf("main is %s, want %s", got, last)
	}
	if got := repo.Git("rev-list", "--count", "main"); got != fmt.Sprint(n+1) {
		t.Fatalf("main has %s commits, want %d", got, n+1)
	}
	if st := repo.Git("status", "--porcelain"); st != "" {
		t.Fatalf("git status after go-git rewrote the index: %q", st)
	}
	fsck(t, repo.Dir)
	noLocks(t, repo.Dir)
}

// TestWriteStaysInTheLockFileUntilClose: while go-git writes a ref, the ref
// on disk is the old one whole, git cannot update it, and Close puts the
// new one in place at once.
func TestWriteStaysInTheLockFileUntilClose(t *testing.T) {
	repo := newRepo(t)
	old := repo.Git("rev-parse", "main")
	other := repo.Git("commit-tree", "-p", old, "-m", "other", repo.Git("rev-parse", "main^{tree}"))
	fsys := gitfs.NewFilesystem(osfs.New(filepath.Join(repo.Dir, ".git")))
	f, err := fsys.OpenFile("refs/heads/main", os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Lock(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	if err != nil || strings.TrimSpace(string(got)) != old {
		t.Fatalf("read %q, %v; want the ref on disk %s", got, err, old)
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, ".git/refs/heads/main.lock")); err != nil {
		t.Fatalf("no lock file while writing: %v", err)
	}
	if _, errOut, err := gitIn(repo.Dir, "update-ref", "refs/heads/main", other); err == nil || !strings.Contains(errOut, "main.lock") {
		t.Fatalf("git update-ref while go-git holds the ref: %v %s; want it refused on main.lock", err, errOut)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(other + "\n")); err != nil {
		t.Fatal(err)
	}
	if got := repo.Git("rev-parse", "main"); got != old {
		t.Fatalf("main is %s before Close, want still %s", got, old)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := repo.Git("rev-parse", "main"); got != other {
		t.Fatalf("main is %s after Close, want %s", got, other)
	}
	noLocks(t, repo.Dir)
}

// TestHeldRefLockFailsClearlyThenSucceeds: with git holding
// refs/heads/main.lock, a go-git ref update waits about a second and fails
// naming the lock, leaving the ref and git's lock alone; once git lets go
// the update goes through.
func TestHeldRefLockFailsClearlyThenSucceeds(t *testing.T) {
	repo := newRepo(t)
	old := repo.Git("rev-parse", "main")
	g := open(t, repo.Dir)
	lock := gittest.HoldLock(t, filepath.Join(repo.Dir, ".git/refs/heads/main"))
	start := time.Now()
	_, err := commitOn(g, "main", "while locked")
	var le *gitfs.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("commit while main.lock is held: %v; want a *gitfs.LockedError", err)
	}
	if waited := time.Since(start); waited < gitfs.LockTimeout {
		t.Fatalf("gave up after %s; want it to wait %s", waited, gitfs.LockTimeout)
	}
	if le.Lock != lock || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "another git process") {
		t.Fatalf("error %q; want it to name %s and say another git process holds it", err, lock)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("git's lock file was touched: %v", err)
	}
	if got := repo.Git("rev-parse", "main"); got != old {
		t.Fatalf("main moved to %s while locked", got)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	h, err := commitOn(g, "main", "after")
	if err != nil {
		t.Fatal(err)
	}
	if got := repo.Git("rev-parse", "main"); got != h.String() {
		t.Fatalf("main is %s, want %s", got, h)
	}
	noLocks(t, repo.Dir)
}

// TestLockReleasedWhileWaiting: a lock git lets go of within the wait does
// not fail the update.
func TestLockReleasedWhileWaiting(t *testing.T) {
	repo := newRepo(t)
	g := open(t, repo.Dir)
	lock := gittest.HoldLock(t, filepath.Join(repo.Dir, ".git/refs/heads/main"))
	go func() {
		time.Sleep(150 * time.Millisecond)
		_ = os.Remove(lock)
	}()
	h, err := commitOn(g, "main", "after the wait")
	if err != nil {
		t.Fatalf("commit after the lock went: %v", err)
	}
	if got := repo.Git("rev-parse", "main"); got != h.String() {
		t.Fatalf("main is %s, want %s", got, h)
	}
}

// TestCompareAndSwapSeesGitsCommit: a branch git moved after go-git read it
// is not overwritten; git's commit stays.
func TestCompareAndSwapSeesGitsCommit(t *testing.T) {
	repo := newRepo(t)
	g := open(t, repo.Dir)
	name := plumbing.NewBranchReferenceName("main")
	ref, err := g.Storer.Reference(name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := newCommit(g, ref.Hash(), "kdrift")
	if err != nil {
		t.Fatal(err)
	}
	theirs := repo.Commit("person", map[string]string{"apps.yaml": "name: b\n"})
	err = g.Storer.CheckAndSetReference(plumbing.NewHashReference(name, h), ref)
	if !errors.Is(err, storage.ErrReferenceHasChanged) {
		t.Fatalf("compare-and-swap after git moved the branch: %v; want ErrReferenceHasChanged", err)
	}
	if got := repo.Git("rev-parse", "main"); got != theirs {
		t.Fatalf("main is %s, want git's commit %s", got, theirs)
	}
}

// TestPackedRefs: updating and removing packed refs and packing refs go
// through packed-refs.lock and leave what git reads.
func TestPackedRefs(t *testing.T) {
	repo := newRepo(t)
	repo.Git("branch", "b1")
	repo.Git("branch", "b2")
	repo.Git("tag", "v1")
	repo.Git("pack-refs", "--all")
	g := open(t, repo.Dir)
	if err := g.Storer.RemoveReference(plumbing.NewBranchReferenceName("b1")); err != nil {
		t.Fatal(err)
	}
	h, err := commitOn(g, "b2", "on a packed branch")
	if err != nil {
		t.Fatal(err)
	}
	main := repo.Git("rev-parse", "main")
	want := fmt.Sprintf("%s refs/heads/b2\n%s refs/heads/main\n%s refs/tags/v1", h, main, main)
	if got := repo.Git("for-each-ref", "--format=%(objectname) %(refname)"); got != want {
		t.Fatalf("refs:\n%s\nwant\n%s", got, want)
	}
	st := g.Storer.(*filesystem.Storage)
	lock := gittest.HoldLock(t, filepath.Join(repo.Dir, ".git/packed-refs"))
	var le *gitfs.LockedError
	if err := st.PackRefs(); !errors.As(err, &le) || le.Lock != lock {
		t.Fatalf("pack refs while packed-refs.lock is held: %v", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := st.PackRefs(); err != nil {
		t.Fatal(err)
	}
	if got := repo.Git("for-each-ref", "--format=%(objectname) %(refname)"); got != want {
		t.Fatalf("refs after packing:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, ".git/refs/heads/b2")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("loose ref left after packing: %v", err)
	}
	fsck(t, repo.Dir)
	noLocks(t, repo.Dir)
}

// TestPackRefsCreatesPackedRefs: packing with no packed-refs file yet
// creates it (go-git stats it right after opening it).
func TestPackRefsCreatesPackedRefs(t *testing.T) {
	repo := newRepo(t)
	repo.Git("branch", "b1")
	g := open(t, repo.Dir)
	if err := g.Storer.(*filesystem.Storage).PackRefs(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, ".git/packed-refs")); err != nil {
		t.Fatal(err)
	}
	if got := repo.Git("rev-parse", "b1"); got != repo.Git("rev-parse", "main") {
		t.Fatalf("b1 is %s after packing", got)
	}
	fsck(t, repo.Dir)
	noLocks(t, repo.Dir)
}

// TestIndexAndConfig: the index and config are written through their lock
// files; config keeps its mode; a held index.lock refuses the write.
func TestIndexAndConfig(t *testing.T) {
	repo := newRepo(t)
	cfgPath := filepath.Join(repo.Dir, ".git/config")
	if err := os.Chmod(cfgPath, 0o640); err != nil {
		t.Fatal(err)
	}
	g := open(t, repo.Dir)
	cfg, err := g.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Raw.Section("kdrift").SetOption("x", "1")
	if err := g.Storer.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if got := repo.Git("config", "--get", "kdrift.x"); got != "1" {
		t.Fatalf("kdrift.x = %q", got)
	}
	if fi, err := os.Stat(cfgPath); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("config mode after the write: %v %v; want 0640 kept", fi.Mode(), err)
	}
	idx, err := g.Storer.Index()
	if err != nil {
		t.Fatal(err)
	}
	lock := gittest.HoldLock(t, filepath.Join(repo.Dir, ".git/index"))
	var le *gitfs.LockedError
	if err := g.Storer.SetIndex(idx); !errors.As(err, &le) || le.Lock != lock {
		t.Fatalf("index write while index.lock is held: %v", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := g.Storer.SetIndex(idx); err != nil {
		t.Fatal(err)
	}
	if got := repo.Git("ls-files"); got != "apps.yaml\ndeploy/x.yaml" {
		t.Fatalf("ls-files after the index write: %q", got)
	}
	if st := repo.Git("status", "--porcelain"); st != "" {
		t.Fatalf("status: %q", st)
	}
	noLocks(t, repo.Dir)
}

// TestLinkedWorktree: a linked worktree opens with its own HEAD and index
// and the shared refs; the lock of a shared ref is taken in the common
// folder, where git takes it.
func TestLinkedWorktree(t *testing.T) {
	repo := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	repo.Git("worktree", "add", "-q", "-b", "feature", wt)
	g := open(t, filepath.Join(wt, "deploy"))
	head, err := g.Storer.Reference(plumbing.HEAD)
	if err != nil || head.Target() != plumbing.NewBranchReferenceName("feature") {
		t.Fatalf("worktree HEAD %v %v; want refs/heads/feature", head, err)
	}
	w, err := g.Worktree()
	if err != nil || w.Filesystem.Root() != wt {
		t.Fatalf("worktree %v %v; want %s", w, err, wt)
	}
	lock := gittest.HoldLock(t, filepath.Join(repo.Dir, ".git/refs/heads/feature"))
	var le *gitfs.LockedError
	if _, err := commitOn(g, "feature", "locked"); !errors.As(err, &le) || le.Lock != lock {
		t.Fatalf("commit while the common folder's feature.lock is held: %v", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	h, err := commitOn(g, "feature", "in the worktree")
	if err != nil {
		t.Fatal(err)
	}
	if got := repo.Git("rev-parse", "feature"); got != h.String() {
		t.Fatalf("feature is %s in the main checkout, want %s", got, h)
	}
	idx, err := g.Storer.Index()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Storer.SetIndex(idx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, ".git/worktrees/wt/index")); err != nil {
		t.Fatalf("the worktree's index is not in its own folder: %v", err)
	}
	if out, errOut, err := gitIn(wt, "status", "--porcelain"); err != nil || errOut != "" {
		t.Fatalf("git status in the worktree: %v %s %s", err, out, errOut)
	}
	fsck(t, repo.Dir)
	noLocks(t, repo.Dir)
}

// TestPlainCloneBare clones through the lock files into a repository git
// finds whole.
func TestPlainCloneBare(t *testing.T) {
	repo := newRepo(t)
	repo.Git("branch", "b1")
	dir := filepath.Join(t.TempDir(), "cache")
	g, err := gitfs.PlainCloneBare(context.Background(), dir, &git.CloneOptions{URL: repo.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := commitOn(g, "main", "in the clone"); err != nil {
		t.Fatal(err)
	}
	if out, _, err := gitIn(dir, "rev-parse", "--is-bare-repository"); err != nil || out != "true" {
		t.Fatalf("is bare: %q %v", out, err)
	}
	if out, _, err := gitIn(dir, "rev-parse", "origin/b1"); err != nil || out != repo.Git("rev-parse", "b1") {
		t.Fatalf("origin/b1 in the clone: %q %v", out, err)
	}
	fsck(t, dir)
	noLocks(t, dir)
}

// TestOpenErrorsAreGoGits: a folder that is no repository gives go-git's
// own error, which callers test for.
func TestOpenErrorsAreGoGits(t *testing.T) {
	if _, err := gitfs.PlainOpen(t.TempDir(), nil); !errors.Is(err, git.ErrRepositoryNotExists) {
		t.Fatalf("open of an empty folder: %v; want git.ErrRepositoryNotExists", err)
	}
}

// TestListingRefsSkipsLockFiles: while git holds a ref's lock (empty until
// it writes it), go-git still lists the refs, without the lock file.
func TestListingRefsSkipsLockFiles(t *testing.T) {
	repo := newRepo(t)
	repo.Git("branch", "b1")
	g := open(t, repo.Dir)
	gittest.HoldLock(t, filepath.Join(repo.Dir, ".git/refs/heads/b1"))
	iter, err := g.References()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := iter.ForEach(func(r *plumbing.Reference) error {
		names = append(names, r.Name().String())
		return nil
	}); err != nil {
		t.Fatalf("listing refs while refs/heads/b1.lock exists: %v", err)
	}
	if got := strings.Join(names, " "); got != "HEAD refs/heads/b1 refs/heads/main" {
		t.Fatalf("refs: %s", got)
	}
}

// TestLockedFileEdges: a missing file opened without O_CREATE is go-git's
// not-exist error; a file opened and left unchanged stays as it was; an
// appending write lands at the end; every path lets its lock go.
func TestLockedFileEdges(t *testing.T) {
	repo := newRepo(t)
	gitDir := filepath.Join(repo.Dir, ".git")
	fsys := gitfs.NewFilesystem(osfs.New(gitDir))
	if _, err := fsys.OpenFile("refs/heads/nope", os.O_RDWR, 0); !os.IsNotExist(err) {
		t.Fatalf("open of a missing ref without O_CREATE: %v; want a not-exist error", err)
	}
	cfgBefore, err := os.ReadFile(filepath.Join(gitDir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenFile("config", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 6)
	if n, err := f.ReadAt(head, 1); err != nil || string(head[:n]) != string(cfgBefore[1:7]) {
		t.Fatalf("ReadAt: %q %v", head[:n], err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(gitDir, "config")); err != nil || string(got) != string(cfgBefore) {
		t.Fatalf("config changed by an open without a write: %v\n%s", err, got)
	}
	f, err = fsys.OpenFile("config", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("[kdrift]\n\tappended = yes\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := repo.Git("config", "--get", "kdrift.appended"); got != "yes" {
		t.Fatalf("appended config value: %q", got)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close: %v; want os.ErrClosed", err)
	}
	noLocks(t, repo.Dir)
}
