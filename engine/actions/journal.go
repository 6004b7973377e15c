package actions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// A commit into a checked-out branch changes three things: the working
// files, the index and the branch ref. kdrift makes it crash-safe this way:
//
//  1. the commit's objects are written first (unreferenced until step 5);
//  2. a journal (.git/kdrift-advance: old commit, new commit, pid) is
//     written, then .git/index.lock is created exclusively, as git does;
//  3. each file is written to a temporary name beside it and renamed;
//  4. the new index is written into index.lock;
//  5. the ref moves (compare-and-swap) while index.lock is still held;
//  6. index.lock is renamed over index, then the journal goes.
//
// Holding index.lock until the ref has moved is what git's own commit
// does: a `git commit` racing kdrift fails on the lock instead of
// committing kdrift's staged files as its own, and when kdrift loses the
// race for the ref the index was never changed. A process killed before
// step 5 leaves the ref where it was; the next kdrift that opens the
// repository finds the journal and rolls the files back, so the action
// left nothing. Killed after step 5, the commit is whole: the next kdrift
// brings the index up to it (step 6) and removes the journal.
const journalName = "kdrift-advance"

// tmpSuffix marks a file written under a temporary name (step 3).
const tmpSuffix = ".kdrift-tmp"

// gitDir is the folder holding this working tree's HEAD and index.
func (r *Repo) gitDir() (string, error) {
	st, ok := r.git.Storer.(*filesystem.Storage)
	if !ok {
		return "", fmt.Errorf("repository %s: not stored on disk", r.location)
	}
	return filepath.Clean(st.Filesystem().Root()), nil
}

// crash runs the test hook at a named step of a commit; tests use it to
// stop the process there as a kill would.
func (r *Repo) crash(step string) {
	if r.crashPoint != nil {
		r.crashPoint(step)
	}
}

// writeJournal records an advance from old to new before anything visible
// changes.
func (r *Repo) writeJournal(old, new plumbing.Hash) (string, error) {
	dir, err := r.gitDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, journalName)
	body := fmt.Sprintf("%s %s %d %s\n", old, new, os.Getpid(), r.branch)
	if err := writeFileAtomic(p, []byte(body), 0o644); err != nil {
		return "", fmt.Errorf("repository %s: journal write failed: %w", r.location, err)
	}
	return p, nil
}

// indexLock is .git/index.lock held by kdrift while it writes the index.
type indexLock struct {
	path string
	f    *os.File
}

// lockIndex creates index.lock exclusively: it fails, as git does, while
// another process holds it.
func (r *Repo) lockIndex() (*indexLock, error) {
	if l := r.heldIndex; l != nil {
		r.heldIndex = nil
		return l, nil
	}
	dir, err := r.gitDir()
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, "index.lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, &localRaceError{fmt.Errorf("%s exists: another git process is running in this repository; wait for it (or, if one crashed, remove that file) and retry (nothing was committed)", p)}
	}
	if err != nil {
		return nil, fmt.Errorf("repository %s: cannot lock the index: %w", r.location, err)
	}
	return &indexLock{path: p, f: f}, nil
}

// awaitIndexLock takes index.lock for the next commit (heldIndex),
// waiting up to wait while a git command holds it; it gives up quietly:
// the commit then takes the lock itself, or reports it held.
func (r *Repo) awaitIndexLock(wait time.Duration) {
	r.releaseIndex()
	if _, on, err := r.checkedOut(); err != nil || !on {
		return
	}
	deadline := time.Now().Add(wait)
	for {
		l, err := r.lockIndex()
		if err == nil {
			r.heldIndex = l
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// releaseIndex gives up an index.lock awaitIndexLock took and no commit
// used.
func (r *Repo) releaseIndex() {
	if r.heldIndex != nil {
		r.heldIndex.abort()
		r.heldIndex = nil
	}
}

// commit writes idx into the lock file and renames it over the index.
func (l *indexLock) commit(idx *index.Index) error {
	if err := l.write(idx); err != nil {
		return err
	}
	return l.publish()
}

// write writes idx into the lock file, which stays held (see publish).
func (l *indexLock) write(idx *index.Index) error {
	err := index.NewEncoder(l.f).Encode(idx)
	if err == nil {
		err = l.f.Sync()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		l.abort()
		return fmt.Errorf("index write failed: %w", err)
	}
	return nil
}

// publish renames the written lock file over the index.
func (l *indexLock) publish() error {
	if err := os.Rename(l.path, strings.TrimSuffix(l.path, ".lock")); err != nil {
		_ = os.Remove(l.path)
		return fmt.Errorf("index write failed: %w", err)
	}
	return nil
}

// abort gives the lock up without changing the index.
func (l *indexLock) abort() {
	_ = l.f.Close()
	_ = os.Remove(l.path)
}

// writeFileAtomic writes data to a temporary file beside p and renames it
// over p.
func writeFileAtomic(p string, data []byte, perm os.FileMode) error {
	tmp := p + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// recoverAdvance finishes what a killed commit left: with the ref still at
// the old commit the files and the index are rolled back to it; with the
// ref at the new commit the commit is whole. Either way the journal, a
// stale index.lock and temporary files go. A journal of a process still
// running is left alone.
func (r *Repo) recoverAdvance() error {
	dir, err := r.gitDir()
	if err != nil {
		return nil // not on disk: nothing can have been left
	}
	jp := filepath.Join(dir, journalName)
	b, err := os.ReadFile(jp)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("repository %s: journal read failed: %w", r.location, err)
	}
	f := strings.Fields(string(b))
	if len(f) != 4 {
		return fmt.Errorf("%s is not a kdrift journal; remove it", jp)
	}
	old, new := plumbing.NewHash(f[0]), plumbing.NewHash(f[1])
	pid, _ := strconv.Atoi(f[2])
	if pid != os.Getpid() && pidAlive(pid) {
		return nil
	}
	_ = os.Remove(filepath.Join(dir, "index.lock"))
	ref, err := r.git.Storer.Reference(plumbing.NewBranchReferenceName(f[3]))
	if err == nil && ref.Hash() == new {
		// The commit is whole; the index may not have followed yet.
		return r.finishAdvance(jp, old, new)
	}
	if err != nil || ref.Hash() != old {
		// The branch moved on since: nothing to undo.
		return r.dropJournal(jp)
	}
	return r.settle(jp, old, new, false)
}

// finishAdvance brings the index up to a commit whose ref moved before
// the process that made it was killed (step 6), for each path the commit
// changed whose working file holds the commit's content, and removes the
// journal jp.
func (r *Repo) finishAdvance(jp string, old, new plumbing.Hash) error {
	return r.settle(jp, old, new, true)
}

// settle brings the paths a killed commit from old to new changed to one
// side, under index.lock, and removes the journal jp: back to old
// (forward false: the ref never moved), or on to new (forward: the ref
// moved, the index may not have). A path is settled only while its
// working file is what the commit left there (new's content, or absent
// when new has none; rolling back, old's content too); a path changed
// since is kept as it is and named in the error.
func (r *Repo) settle(jp string, old, new plumbing.Hash, forward bool) error {
	wt, on, err := r.checkedOut()
	if err != nil || !on {
		return r.dropJournal(jp)
	}
	oldT, oerr := commitTree(r.git.Storer, old)
	newT, nerr := commitTree(r.git.Storer, new)
	target, targetErr, otherErr := oldT, oerr, nerr
	if forward {
		target, targetErr, otherErr = newT, nerr, oerr
	}
	if targetErr != nil {
		return targetErr
	}
	if otherErr != nil {
		return r.dropJournal(jp)
	}
	lock, err := r.lockIndex()
	if err != nil {
		return err
	}
	idx, err := r.git.Storer.Index()
	if err != nil {
		lock.abort()
		return fmt.Errorf("repository %s: index read failed: %w", r.location, err)
	}
	var kept []string
	for _, p := range changedPaths(oldT, newT) {
		removeTemp(wt.Filesystem, p)
		h, exists, err := worktreeHash(wt.Filesystem, p)
		if err != nil {
			kept = append(kept, p)
			continue
		}
		o, inOld := oldT[p]
		n, inNew := newT[p]
		ours := (inNew && exists && h == n.Hash) || (!inNew && !exists) || (!forward && inOld && exists && h == o.Hash)
		if !ours {
			kept = append(kept, p)
			continue
		}
		if err := updateFile(r, wt.Filesystem, idx, p, target); err != nil {
			kept = append(kept, fmt.Sprintf("%s (%v)", p, err))
		}
	}
	idx.Cache = nil
	if err := lock.commit(idx); err != nil {
		return err
	}
	if err := r.dropJournal(jp); err != nil {
		return err
	}
	switch {
	case len(kept) == 0:
		return nil
	case forward:
		return fmt.Errorf("an interrupted kdrift commit was completed, except in the index for %s, which changed since; check them with `git status`", strings.Join(kept, ", "))
	}
	return fmt.Errorf("an interrupted kdrift commit was rolled back, except %s, which changed since; check them with `git status`", strings.Join(kept, ", "))
}

// dropJournal removes a journal whose commit needs no roll-back.
func (r *Repo) dropJournal(jp string) error {
	if err := os.Remove(jp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("repository %s: journal remove failed: %w", r.location, err)
	}
	return nil
}

// removeTemp removes a temporary file a killed write left beside p.
func removeTemp(fs billy.Filesystem, p string) {
	_ = fs.Remove(p + tmpSuffix)
}
