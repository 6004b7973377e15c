//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package source_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gitfs"
)

// plantLock leaves a lock file as a process killed between creating it
// and renaming it over the file would, last written age ago.
func plantLock(t *testing.T, dir, rel string, age time.Duration) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("0123456789abcdef0123456789abcdef01234567\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-age)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStaleLockInCacheClone: a lock file a killed process left in the
// cache clone (a remote-tracking ref's, packed-refs') no longer stops
// every later fetch: it is removed after the failed fetch, which is then
// retried, and at start-up. A lock younger than gitfs.StaleLockAge stays
// (a kdrift process may be writing), and so does any lock in a person's
// own repository, whose error says how to clear it.
func TestStaleLockInCacheClone(t *testing.T) {
	ctx := context.Background()
	bare, work := remote(t)
	cache := t.TempDir()
	r, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	refLock := plantLock(t, r.Dir(), "refs/remotes/origin/main.lock", 2*gitfs.StaleLockAge)
	c2 := work.Commit("second", map[string]string{"README.md": "two\n"})
	work.Git("push", "-q", "origin", "main")
	if err := r.Fetch(ctx); err != nil {
		t.Fatalf("fetch with a stale lock in the cache clone: %v", err)
	}
	if rev, err := r.Head(ctx); err != nil || rev.Hash != c2 {
		t.Fatalf("Head = %+v %v, want %s", rev, err, c2)
	}
	if _, err := os.Stat(refLock); !os.IsNotExist(err) {
		t.Fatalf("the stale lock is still there: %v", err)
	}

	// A fresh lock a live writer holds (its flock) is a live write: it
	// stays and the fetch says so.
	fresh := plantLock(t, r.Dir(), "refs/remotes/origin/main.lock", 0)
	held, err := os.Open(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	c3 := work.Commit("third", map[string]string{"README.md": "three\n"})
	work.Git("push", "-q", "origin", "main")
	if err := r.Fetch(ctx); err == nil || !strings.Contains(err.Error(), "main.lock") {
		t.Fatalf("fetch with a fresh lock: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a fresh lock was removed: %v", err)
	}
	held.Close()
	if err := os.Remove(fresh); err != nil {
		t.Fatal(err)
	}

	// A fresh lock nobody holds is a writer killed a moment ago (a
	// controller restarted at once): the fetch waits until it is past
	// the grace, removes it and goes through.
	killed := plantLock(t, r.Dir(), "refs/remotes/origin/main.lock", 0)
	if err := r.Fetch(ctx); err != nil {
		t.Fatalf("fetch with the fresh lock of a killed writer: %v", err)
	}
	if rev, err := r.Head(ctx); err != nil || rev.Hash != c3 {
		t.Fatalf("Head = %+v %v, want %s", rev, err, c3)
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Fatalf("the killed writer's lock is still there: %v", err)
	}
	c3 = work.Commit("third again", map[string]string{"README.md": "three again\n"})
	work.Git("push", "-q", "origin", "main")

	// At start-up: a controller restarted after being killed mid-write.
	packed := plantLock(t, r.Dir(), "packed-refs.lock", 2*gitfs.StaleLockAge)
	plantLock(t, r.Dir(), "refs/remotes/origin/main.lock", 2*gitfs.StaleLockAge)
	r2, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: cache})
	if err != nil {
		t.Fatalf("open with stale locks: %v", err)
	}
	if rev, err := r2.Head(ctx); err != nil || rev.Hash != c3 {
		t.Fatalf("Head after restart = %+v %v, want %s", rev, err, c3)
	}
	if _, err := os.Stat(packed); !os.IsNotExist(err) {
		t.Fatalf("packed-refs.lock is still there: %v", err)
	}

	// A person's clone keeps git's rule, however old the lock.
	person := work.Dir
	work.Git("fetch", "-q", "origin")
	work.Git("branch", "-q", "--set-upstream-to=origin/main", "main")
	lr, err := source.Open(ctx, source.Options{Location: person})
	if err != nil {
		t.Fatal(err)
	}
	other := work.Commit("fourth", map[string]string{"README.md": "four\n"})
	work.Git("push", "-q", "origin", "main:main")
	work.Git("update-ref", "refs/remotes/origin/main", "HEAD~1")
	theirs := plantLock(t, filepath.Join(person, ".git"), "refs/remotes/origin/main.lock", time.Hour)
	err = lr.Fetch(ctx)
	if err == nil || !strings.Contains(err.Error(), "rm "+theirs) {
		t.Fatalf("fetch in a person's clone with a lock: %v (pushed %s)", err, other)
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Fatalf("the lock in a person's clone was removed: %v", err)
	}
}
