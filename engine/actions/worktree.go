package actions

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"kdrift.dev/kdrift/internal/gitfs"
)

// DirtyError says files the action must change hold uncommitted edits;
// nothing was committed.
type DirtyError struct {
	Branch string
	Files  []string
}

// Error names the files and says to commit or stash them.
func (e *DirtyError) Error() string {
	return fmt.Sprintf("%s: uncommitted changes (in the working tree or staged) in a file this action must change or bring up to date from upstream; commit or stash them, then retry (nothing was committed)",
		strings.Join(e.Files, ", "))
}

// checkedOut returns the working tree when the branch is the one checked
// out in it.
func (r *Repo) checkedOut() (*git.Worktree, bool, error) {
	wt, err := r.git.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("repository %s: working tree open failed: %w", r.location, err)
	}
	head, err := r.git.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return nil, false, fmt.Errorf("repository %s: cannot read HEAD: %w", r.location, err)
	}
	if head.Type() != plumbing.SymbolicReference || head.Target() != plumbing.NewBranchReferenceName(r.branch) {
		return nil, false, nil
	}
	return wt, true, nil
}

// advance moves the branch from old to new. When the branch is checked out
// it also brings the files that differ between the two commits up to date
// in the working tree and the index, but only when each is clean (equal to
// old): otherwise it refuses with a DirtyError and moves nothing.
func (r *Repo) advance(old, new plumbing.Hash) error {
	if old == new {
		return nil
	}
	wt, on, err := r.checkedOut()
	if err != nil {
		return err
	}
	if !on {
		if elsewhere, err := r.checkedOutElsewhere(); err != nil {
			return err
		} else if elsewhere != "" {
			return fmt.Errorf("branch %s is checked out in the working tree at %s; run kdrift there (or pass --repo %s) so its files follow the commit (nothing was committed)", r.branch, elsewhere, elsewhere)
		}
	}
	var oldT, newT flatTree
	var paths []string
	var idx *index.Index
	if on {
		if oldT, err = commitTree(r.git.Storer, old); err != nil {
			return err
		}
		if newT, err = commitTree(r.git.Storer, new); err != nil {
			return err
		}
		paths = changedPaths(oldT, newT)
		if idx, err = r.git.Storer.Index(); err != nil {
			return fmt.Errorf("repository %s: index read failed: %w", r.location, err)
		}
		var dirty []string
		for _, p := range paths {
			clean, err := isClean(wt.Filesystem, idx, p, oldT, newT)
			if err != nil {
				return err
			}
			if !clean {
				dirty = append(dirty, p)
			}
		}
		if len(dirty) > 0 {
			return &DirtyError{Branch: r.branch, Files: dirty}
		}
	}
	name := plumbing.NewBranchReferenceName(r.branch)
	moveRef := func() error {
		if err := r.git.Storer.CheckAndSetReference(plumbing.NewHashReference(name, new), plumbing.NewHashReference(name, old)); err != nil {
			if le := (*gitfs.LockedError)(nil); errors.As(err, &le) {
				// A git command is moving the branch right now.
				return &localRaceError{fmt.Errorf("branch %s: %w; retry (nothing was committed)", r.branch, err)}
			}
			return &localRaceError{fmt.Errorf("branch %s moved while kdrift was committing (%v); retry (nothing was committed)", r.branch, err)}
		}
		return nil
	}
	if !on {
		return moveRef()
	}
	// Crash-safe order (see journal.go): journal, index.lock, files under
	// temporary names, the index into index.lock, the ref, then the index
	// lock renamed.
	journal, err := r.writeJournal(old, new)
	if err != nil {
		return err
	}
	lock, err := r.lockIndex()
	if err != nil {
		_ = os.Remove(journal)
		return err
	}
	r.crash("locked")
	var done []string
	// undo puts the files (and the index, with lock held) back to old.
	undo := func(cause error, lock *indexLock) error {
		var failed []string
		for _, p := range done {
			if err := updateFile(r, wt.Filesystem, idx, p, oldT); err != nil {
				failed = append(failed, p)
			}
		}
		if lock != nil {
			if err := lock.commit(idx); err != nil {
				failed = append(failed, "the index")
			}
		}
		if len(failed) > 0 {
			// Keep the journal: the next kdrift run finishes the roll-back.
			return fmt.Errorf("%w; putting back %s failed too (kdrift retries on its next run; `git checkout -- <file>` does it now)", cause, strings.Join(failed, ", "))
		}
		_ = os.Remove(journal)
		if strings.Contains(cause.Error(), "nothing was committed") {
			return cause
		}
		return fmt.Errorf("%w (nothing was committed)", cause)
	}
	for _, p := range paths {
		if err := updateFile(r, wt.Filesystem, idx, p, newT); err != nil {
			lock.abort()
			return undo(fmt.Errorf("working file %s: update failed: %w", p, err), nil)
		}
		done = append(done, p)
		r.crash("file")
	}
	// The cached tree extension describes the old index; git rebuilds it.
	idx.Cache = nil
	if err := lock.write(idx); err != nil {
		return undo(err, nil)
	}
	r.crash("index")
	// The ref moves while index.lock is held, as git's commit does: a
	// racing `git commit` cannot take kdrift's staged files as its own.
	if err := moveRef(); err != nil {
		lock.abort()
		return undo(err, nil)
	}
	r.crash("ref")
	if err := lock.publish(); err != nil {
		return fmt.Errorf("committed %s on %s, but %w; the next kdrift run brings the index up to the commit (`git reset -q` does it now)", new.String()[:12], r.branch, err)
	}
	r.crash("published")
	if err := os.Remove(journal); err != nil {
		return fmt.Errorf("committed %s on %s, but removing the journal %s failed: %w", new.String()[:12], r.branch, journal, err)
	}
	return nil
}

// localRaceError is a commit that lost a race with a git command in the
// same repository (the branch moved, or git held a lock): nothing was
// committed, and running the operation again on the new head is safe.
type localRaceError struct{ err error }

func (e *localRaceError) Error() string { return e.err.Error() }
func (e *localRaceError) Unwrap() error { return e.err }

// checkedOutElsewhere returns the path of another working tree of the
// same repository (git worktree) that has the branch checked out, or "".
func (r *Repo) checkedOutElsewhere() (string, error) {
	st, ok := r.git.Storer.(*filesystem.Storage)
	if !ok {
		return "", nil
	}
	gitDir := filepath.Clean(st.Filesystem().Root())
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	want := "ref: refs/heads/" + r.branch
	headIs := func(dir string) bool {
		b, err := os.ReadFile(filepath.Join(dir, "HEAD"))
		return err == nil && strings.TrimSpace(string(b)) == want
	}
	if common != gitDir && headIs(common) {
		cfg, err := r.git.Config()
		if err != nil {
			return "", fmt.Errorf("repository %s: config read failed: %w", r.location, err)
		}
		if !cfg.Core.IsBare {
			return filepath.Dir(common), nil
		}
	}
	entries, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("repository %s: %w", r.location, err)
	}
	for _, e := range entries {
		d := filepath.Join(common, "worktrees", e.Name())
		if d == gitDir || !headIs(d) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "gitdir"))
		if err != nil {
			return d, nil
		}
		return filepath.Dir(strings.TrimSpace(string(b))), nil
	}
	return "", nil
}

// isClean says the working file and its index entry both equal the old
// commit's version (or, when the file is new, that nothing other than the
// new version sits there).
func isClean(fs billy.Filesystem, idx *index.Index, p string, oldT, newT flatTree) (bool, error) {
	o, inOld := oldT[p]
	n, inNew := newT[p]
	ie, err := idx.Entry(p)
	inIdx := err == nil
	if err != nil && !errors.Is(err, index.ErrEntryNotFound) {
		return false, err
	}
	switch {
	case inOld && (!inIdx || ie.Hash != o.Hash):
		return false, nil
	case !inOld && inIdx && !(inNew && ie.Hash == n.Hash):
		return false, nil
	}
	h, exists, err := worktreeHash(fs, p)
	if err != nil {
		return false, err
	}
	if inOld {
		return exists && h == o.Hash, nil
	}
	return !exists || (inNew && h == n.Hash), nil
}

// worktreeHash hashes a working file as a blob (a symlink by its target).
func worktreeHash(fs billy.Filesystem, p string) (plumbing.Hash, bool, error) {
	fi, err := fs.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("%s: %w", p, err)
	}
	var data []byte
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := fs.Readlink(p)
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("%s: %w", p, err)
		}
		data = []byte(t)
	case fi.IsDir():
		return plumbing.ZeroHash, true, nil
	default:
		f, err := fs.Open(p)
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("%s: %w", p, err)
		}
		data = make([]byte, fi.Size())
		_, rerr := readFull(f, data)
		cerr := f.Close()
		if rerr != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("%s: %w", p, rerr)
		}
		if cerr != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("%s: %w", p, cerr)
		}
	}
	return plumbing.ComputeHash(plumbing.BlobObject, data), true, nil
}

func readFull(f billy.File, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// updateFile writes (or removes) one working file and its index entry to
// match the new commit.
func updateFile(r *Repo, fs billy.Filesystem, idx *index.Index, p string, newT flatTree) error {
	n, inNew := newT[p]
	if !inNew {
		if err := fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		removeEmptyParents(fs, p)
		if _, err := idx.Remove(p); err != nil && !errors.Is(err, index.ErrEntryNotFound) {
			return err
		}
		return nil
	}
	if n.Mode == filemode.Submodule {
		return fmt.Errorf("submodule; update it with git")
	}
	data, err := readBlob(r.git.Storer, n.Hash)
	if err != nil {
		return err
	}
	if dir := path.Dir(p); dir != "." {
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// Written under a temporary name and renamed, so a reader (or a
	// kill) never sees half a file.
	tmp := p + tmpSuffix
	if err := fs.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if n.Mode == filemode.Symlink {
		if err := fs.Symlink(string(data), tmp); err != nil {
			return err
		}
	} else {
		perm := os.FileMode(0o644)
		if n.Mode == filemode.Executable {
			perm = 0o755
		}
		f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
		if err != nil {
			return err
		}
		_, werr := f.Write(data)
		cerr := f.Close()
		if werr != nil {
			_ = fs.Remove(tmp)
			return werr
		}
		if cerr != nil {
			_ = fs.Remove(tmp)
			return cerr
		}
	}
	if err := fs.Rename(tmp, p); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	fi, err := fs.Lstat(p)
	if err != nil {
		return err
	}
	e, err := idx.Entry(p)
	if errors.Is(err, index.ErrEntryNotFound) {
		e = idx.Add(p)
	} else if err != nil {
		return err
	}
	e.Hash, e.Mode, e.Size, e.ModifiedAt = n.Hash, n.Mode, uint32(fi.Size()), fi.ModTime()
	fillStat(e, fi)
	sort.Slice(idx.Entries, func(i, j int) bool { return idx.Entries[i].Name < idx.Entries[j].Name })
	return nil
}

// removeEmptyParents removes folders left empty by a deleted file, as git
// does; a folder it cannot read or remove is simply left in place.
func removeEmptyParents(fs billy.Filesystem, p string) {
	for dir := path.Dir(p); dir != "." && dir != "/"; dir = path.Dir(dir) {
		entries, err := fs.ReadDir(dir)
		if err != nil || len(entries) > 0 {
			return
		}
		if err := fs.Remove(dir); err != nil {
			return
		}
	}
}
