//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package gitfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
)

// TestRemoveStaleLocks: a lock file nobody holds (its writer was killed)
// goes once it is past the short grace, without waiting StaleLockAge; one
// a live writer holds stays until StaleLockAge; a young one stays.
func TestRemoveStaleLocks(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	mk := func(rel string, age time.Duration, held bool) string {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("0123\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		if held {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	killed := mk("refs/remotes/origin/main.lock", 3*time.Second, false)
	live := mk("refs/heads/main.lock", 3*time.Second, true)
	young := mk("packed-refs.lock", 500*time.Millisecond, false)
	old := mk("config.lock", 31*time.Second, true)
	// A fetch that the young unheld lock failed waits for it to pass the
	// grace: 1.5 s here; a held lock, however young, is waited for by no one.
	mk("refs/heads/held.lock", 100*time.Millisecond, true)
	if wait := UntilUnheldStale(dir, now); wait != unheldGrace-500*time.Millisecond {
		t.Errorf("UntilUnheldStale = %v, want %v (the young unheld lock's time to the grace)", wait, unheldGrace-500*time.Millisecond)
	}
	removed, err := RemoveStaleLocks(dir, StaleLockAge, now)
	if err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{}
	for _, l := range removed {
		gone[l.Path] = true
	}
	for p, want := range map[string]bool{killed: true, live: false, young: false, old: true} {
		_, statErr := os.Stat(p)
		if gone[p] != want || os.IsNotExist(statErr) != want {
			t.Errorf("%s: removed %v, want %v", p, gone[p], want)
		}
	}
}

// TestAcquireMarksTheLock: a lock file kdrift holds carries its flock, so
// RemoveStaleLocks leaves it while it writes.
func TestAcquireMarksTheLock(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "refs", "heads"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs := NewFilesystem(osfs.New(dir)).(*lockFS)
	f, err := fs.acquire("refs/heads/x", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "refs", "heads", "x.lock")
	if unheld(lock) {
		t.Fatal("a lock kdrift holds looks unheld")
	}
	f.Close()
	if !unheld(lock) {
		t.Fatal("a lock whose writer closed it still looks held")
	}
}
