// Package gitfs opens and clones Git repositories with go-git so that
// go-git's writes follow git's own lock-file protocol.
//
// go-git's filesystem storage rewrites a ref, packed-refs, the index and
// config in place (open, flock, truncate, write). git never does: it
// creates <file>.lock exclusively, writes it and renames it over <file>.
// In a person's own clone, with git running beside kdrift, in-place writes
// let `git log` read an empty or half-written ref, and let a ref update be
// lost: git renames its lock over the ref after go-git opened the old
// file, go-git's compare-and-swap still sees the old value, and its write
// lands in a file no longer on disk. Through this package go-git takes the
// same lock files git takes, so the two exclude each other, a reader only
// ever sees a whole file, and a compare-and-swap checks what is on disk
// while the lock is held.
//
// The package never forks go-git: it hands go-git's own storage a wrapped
// billy.Filesystem (NewFilesystem). Objects need little: go-git writes a
// loose object and a pack under a temporary name and renames it; only a
// pack's .idx, which it writes in place (a kill mid-write would leave a
// truncated .idx that go-git then trusts), goes through a lock file too.
package gitfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"kdrift.dev/kdrift/internal/gitobj"
)

// PlainOpen opens the repository at p as git.PlainOpenWithOptions does
// (same discovery, same storage options), with its git folders wrapped by
// NewFilesystem. A nil o means the zero options.
func PlainOpen(p string, o *git.PlainOpenOptions) (*git.Repository, error) {
	if o == nil {
		o = &git.PlainOpenOptions{}
	}
	// go-git finds the git folder (DetectDotGit, a .git file naming a
	// linked worktree's folder, ~): let it, then open that folder again on
	// the wrapped filesystem, so discovery stays exactly go-git's.
	found, err := git.PlainOpenWithOptions(p, o)
	if err != nil {
		return nil, err
	}
	st, ok := found.Storer.(*filesystem.Storage)
	if !ok {
		return nil, fmt.Errorf("repository %s: go-git did not open it on disk", p)
	}
	gitDir := st.Filesystem().Root()
	var wt billy.Filesystem
	w, err := found.Worktree()
	switch {
	case err == nil:
		wt = w.Filesystem
	case !errors.Is(err, git.ErrIsBareRepository):
		return nil, err
	}
	fs := NewFilesystem(osfs.New(gitDir))
	if o.EnableDotGitCommonDir {
		common, err := commonDir(gitDir)
		if err != nil {
			return nil, err
		}
		if common != "" {
			fs = dotgit.NewRepositoryFilesystem(fs, NewFilesystem(osfs.New(common)))
		} else {
			fs = dotgit.NewRepositoryFilesystem(fs, nil)
		}
	}
	return git.Open(newStorage(fs), wt)
}

// PlainCloneBare clones o.URL into a new bare repository at p, as
// git.PlainCloneContext(ctx, p, true, o) does, writing through
// NewFilesystem. On error p may hold a partial clone: the caller removes
// it.
func PlainCloneBare(ctx context.Context, p string, o *git.CloneOptions) (*git.Repository, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	return git.CloneContext(ctx, newStorage(NewFilesystem(osfs.New(abs))), nil, o)
}

// newStorage is the storage go-git's Plain functions make (the default
// object cache), except that an object past gitobj.LargeObject is handed
// out unread, to be read through its Reader within a bound: without it
// go-git inflates a 1 GiB blob whole when asked for its Reader.
func newStorage(fs billy.Filesystem) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(fs, cache.NewObjectLRUDefault(), filesystem.Options{LargeObjectThreshold: gitobj.LargeObject})
}

// commonDir reads a linked worktree's commondir file: the shared git
// folder, or "" when gitDir is not a linked worktree's.
func commonDir(gitDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	c := strings.TrimSpace(string(b))
	if c == "" {
		return "", nil
	}
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	if _, err := os.Stat(c); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", git.ErrRepositoryIncomplete
		}
		return "", err
	}
	return c, nil
}
