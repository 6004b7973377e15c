package gitfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StaleLockAge is how old a lock file in a folder only kdrift writes must
// be before kdrift takes it for the remains of a killed process and
// removes it. kdrift holds a lock only while it writes one file it already
// has in memory (a ref, packed-refs, config): the write, its fsync and the
// rename take milliseconds, seconds on a disk under heavy load. Thirty
// seconds is far beyond the longest such write, and short enough that a
// controller killed mid-write heals at its next fetch.
const StaleLockAge = 30 * time.Second

// unheldGrace is how old a lock file nobody holds (see unheld) must be
// before RemoveStaleLocks removes it before StaleLockAge: kdrift marks its
// lock files within microseconds of creating them, so an unmarked lock
// older than this is a killed process's.
const unheldGrace = 2 * time.Second

// StaleLock is a lock file RemoveStaleLocks removed.
type StaleLock struct {
	// Path is the lock file's path on disk.
	Path string
	// Age is how long before the removal it was last written.
	Age time.Duration
}

// RemoveStaleLocks removes the lock files of protected files (see
// IsProtected) in the git folder dir that were last written more than
// olderThan before now, or more than unheldGrace before now and that no
// live process holds (kdrift's writers flock their lock files), and
// returns them. It must only be called on a
// folder no process but kdrift writes (the controller's and the
// commands' cache clone): in a person's repository a lock may belong to
// their own git, however old, and git's rule applies there (the lock stays
// and the error says how to remove it).
func RemoveStaleLocks(dir string, olderThan time.Duration, now time.Time) ([]StaleLock, error) {
	var removed []StaleLock
	var errs []error
	err := eachLock(dir, func(full string, info fs.FileInfo) {
		age := now.Sub(info.ModTime())
		if age <= olderThan && (age <= unheldGrace || !unheld(full)) {
			return
		}
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			return
		}
		removed = append(removed, StaleLock{Path: full, Age: age})
	})
	if err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// UntilUnheldStale is how long until every lock file in the git folder dir
// that no live process holds is old enough (unheldGrace) for
// RemoveStaleLocks to take it for a killed process's: 0 when there is none
// younger. A fetch that a killed writer's fresh lock failed waits this
// long (at most unheldGrace) instead of failing until the next fetch.
func UntilUnheldStale(dir string, now time.Time) time.Duration {
	var wait time.Duration
	_ = eachLock(dir, func(full string, info fs.FileInfo) {
		if left := unheldGrace - now.Sub(info.ModTime()); left > wait && unheld(full) {
			wait = min(left, unheldGrace)
		}
	})
	return wait
}

// eachLock calls f for every lock file of a protected file (see
// IsProtected) in the git folder dir: the root's, the refs' and the pack
// indexes'.
func eachLock(dir string, f func(full string, info fs.FileInfo)) error {
	var errs []error
	check := func(full, rel string, info fs.FileInfo) {
		if !strings.HasSuffix(rel, lockSuffix) || !info.Mode().IsRegular() || !IsProtected(strings.TrimSuffix(rel, lockSuffix)) {
			return
		}
		f(full, info)
	}
	// The root's lock files: HEAD, packed-refs, config, index, shallow.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !e.IsDir() {
			check(filepath.Join(dir, e.Name()), e.Name(), info)
		}
	}
	// Refs, and pack indexes.
	for _, sub := range []string{"refs", filepath.Join("objects", "pack")} {
		root := filepath.Join(dir, sub)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), lockSuffix) {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil // removed meanwhile
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			check(p, filepath.ToSlash(rel), info)
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
