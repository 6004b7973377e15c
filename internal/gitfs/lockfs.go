package gitfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
)

// LockTimeout is how long a write waits for another process's lock file to
// go before it fails. git waits 100 ms for a ref and 1 s for packed-refs
// (core.filesRefLockTimeout, core.packedRefsTimeout); kdrift waits the
// longer of the two for every file, since a person's `git commit` holding
// the lock finishes in well under a second.
const LockTimeout = time.Second

// lockSuffix is what git appends to a file's name for its lock file.
const lockSuffix = ".lock"

// LockedError says a git lock file exists: another git process is
// updating the file, or one crashed and left the lock behind. Nothing was
// written.
type LockedError struct {
	// Path is the file kdrift meant to update.
	Path string
	// Lock is the lock file that is in the way (Path + ".lock").
	Lock string
	// Waited is how long kdrift waited for the lock to go.
	Waited time.Duration
}

// Error names the lock file and says what to do about it.
func (e *LockedError) Error() string {
	return fmt.Sprintf("%s: exists (still after %s): another git process is updating %s; let it finish and retry; if no git process is running in this repository (one was killed mid-write), remove the lock: rm %s",
		e.Lock, e.Waited.Round(time.Millisecond), e.Path, e.Lock)
}

// IsProtected says whether git updates the file at p (a slash path inside a
// git folder) only through a lock file: HEAD and the other root refs,
// everything under refs/, packed-refs, index, config, shallow, and a
// pack's .idx (written whole before the pack appears, as git does).
func IsProtected(p string) bool {
	p = strings.TrimPrefix(path.Clean(filepath.ToSlash(p)), "/")
	if strings.HasSuffix(p, lockSuffix) {
		return false
	}
	switch p {
	case "packed-refs", "index", "config", "shallow":
		return true
	}
	if strings.HasPrefix(p, "refs/") {
		return true
	}
	if strings.HasPrefix(p, "objects/pack/") && strings.HasSuffix(p, ".idx") && !strings.Contains(p[len("objects/pack/"):], "/") {
		return true
	}
	return isRootRef(p)
}

// isRootRef says p is HEAD or a pseudo-ref beside it (ORIG_HEAD,
// CHERRY_PICK_HEAD, ...): upper case and underscores, ending in HEAD.
func isRootRef(p string) bool {
	if !strings.HasSuffix(p, "HEAD") {
		return false
	}
	for _, c := range p {
		if (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}

// lockFS is a billy.Filesystem over a git folder that writes the files
// git protects with lock files the way git does: create <file>.lock
// exclusively, write it, fsync it and rename it over <file>. Everything
// else passes through unchanged.
type lockFS struct {
	billy.Filesystem
	timeout time.Duration

	mu sync.Mutex
	// held are the protected paths whose lock file an open lockedFile of
	// this filesystem holds; a rename or removal of such a path during
	// the update is the update itself (go-git renames a temporary
	// packed-refs over the one it locked).
	held map[string]*lockedFile
}

// NewFilesystem wraps fs, a git folder (the .git folder, a linked
// worktree's folder, a common folder or a bare repository), so that go-git
// writes HEAD, refs, packed-refs, index, config and shallow through git's
// lock files.
func NewFilesystem(fs billy.Filesystem) billy.Filesystem {
	return &lockFS{Filesystem: fs, timeout: LockTimeout, held: map[string]*lockedFile{}}
}

func clean(p string) string {
	return strings.TrimPrefix(path.Clean(filepath.ToSlash(p)), "/")
}

// Capabilities are those of the wrapped filesystem: go-git picks its
// read-and-write code paths from them.
func (fs *lockFS) Capabilities() billy.Capability {
	return billy.Capabilities(fs.Filesystem)
}

// Chmod changes a file's mode when the wrapped filesystem can.
func (fs *lockFS) Chmod(name string, mode os.FileMode) error {
	c, ok := fs.Filesystem.(billy.Chmod)
	if !ok {
		return billy.ErrNotSupported
	}
	return c.Chmod(name, mode)
}

// Chroot wraps the sub-folder too: go-git chroots into modules/<name>,
// which is a git folder of its own.
func (fs *lockFS) Chroot(p string) (billy.Filesystem, error) {
	sub, err := fs.Filesystem.Chroot(p)
	if err != nil {
		return nil, err
	}
	return &lockFS{Filesystem: sub, timeout: fs.timeout, held: map[string]*lockedFile{}}, nil
}

// Create opens name for writing from empty, as os.Create does.
func (fs *lockFS) Create(name string) (billy.File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// OpenFile opens a protected file for writing through its lock file; every
// other open passes through.
func (fs *lockFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 || !IsProtected(name) {
		return fs.Filesystem.OpenFile(name, flag, perm)
	}
	return fs.openLocked(name, flag, perm)
}

// Rename onto a protected path takes its lock first, unless this
// filesystem already holds it for the update the rename completes.
func (fs *lockFS) Rename(from, to string) error {
	if !IsProtected(to) || fs.holds(to) {
		return fs.Filesystem.Rename(from, to)
	}
	lock, err := fs.acquire(to, 0o666)
	if err != nil {
		return err
	}
	err = fs.Filesystem.Rename(from, to)
	return errors.Join(err, fs.release(to, lock))
}

// Remove of a protected path takes its lock first, as git does when it
// deletes a ref, unless this filesystem already holds it.
func (fs *lockFS) Remove(name string) error {
	if !IsProtected(name) || fs.holds(name) {
		return fs.Filesystem.Remove(name)
	}
	lock, err := fs.acquire(name, 0o666)
	if err != nil {
		return err
	}
	err = fs.Filesystem.Remove(name)
	return errors.Join(err, fs.release(name, lock))
}

// Stat of a protected file being created under a lock this filesystem
// holds describes the lock file: go-git stats packed-refs right after it
// opened it with O_CREATE, and git's protocol makes the file appear only
// when the update completes.
func (fs *lockFS) Stat(name string) (os.FileInfo, error) {
	fi, err := fs.Filesystem.Stat(name)
	if err != nil && errors.Is(err, os.ErrNotExist) && fs.holds(name) {
		if lfi, lerr := fs.Filesystem.Stat(name + lockSuffix); lerr == nil {
			return lfi, nil
		}
	}
	return fi, err
}

// ReadDir of a folder under refs/ leaves out lock files, as git does:
// go-git would read refs/heads/main.lock as a ref, and fail listing refs
// on an empty one while git (or this package) writes it.
func (fs *lockFS) ReadDir(name string) ([]os.FileInfo, error) {
	infos, err := fs.Filesystem.ReadDir(name)
	if err != nil {
		return nil, err
	}
	if p := clean(name); p != "refs" && !strings.HasPrefix(p, "refs/") {
		return infos, nil
	}
	kept := infos[:0]
	for _, fi := range infos {
		if fi.IsDir() || !strings.HasSuffix(fi.Name(), lockSuffix) {
			kept = append(kept, fi)
		}
	}
	return kept, nil
}

func (fs *lockFS) holds(name string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.held[clean(name)] != nil
}

// acquire creates name's lock file exclusively, retrying with backoff for
// up to fs.timeout while another process holds it.
func (fs *lockFS) acquire(name string, perm os.FileMode) (billy.File, error) {
	lockName := name + lockSuffix
	start := time.Now()
	wait := 2 * time.Millisecond
	for {
		f, err := fs.Filesystem.OpenFile(lockName, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			// The writer's mark, held until the lock file is closed: the
			// kernel drops it when the process dies, so RemoveStaleLocks
			// can tell a killed writer's lock from a live one at once.
			// Best effort: a file system without flock keeps the age rule.
			_ = f.Lock()
			return f, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s: cannot create lock file: %w", fs.full(lockName), err)
		}
		waited := time.Since(start)
		if waited >= fs.timeout {
			return nil, &LockedError{Path: fs.full(name), Lock: fs.full(lockName), Waited: waited}
		}
		time.Sleep(min(wait, fs.timeout-waited))
		wait = min(wait*2, 100*time.Millisecond)
	}
}

// release closes and removes a lock file without touching the file it
// locked.
func (fs *lockFS) release(name string, lock billy.File) error {
	cerr := lock.Close()
	rerr := fs.Filesystem.Remove(name + lockSuffix)
	if rerr != nil {
		rerr = fmt.Errorf("%s: cannot remove lock file: %w; remove it by hand", fs.full(name+lockSuffix), rerr)
	}
	return errors.Join(cerr, rerr)
}

// full is name as a path on disk, for messages.
func (fs *lockFS) full(name string) string {
	if root := fs.Root(); root != "" {
		return filepath.Join(root, filepath.FromSlash(name))
	}
	return name
}

// openLocked takes name's lock and returns a file that reads what name
// holds on disk and whose writes land in the lock file, renamed over name
// on Close.
func (fs *lockFS) openLocked(name string, flag int, perm os.FileMode) (billy.File, error) {
	lock, err := fs.acquire(name, perm)
	if err != nil {
		return nil, err
	}
	lf := &lockedFile{fs: fs, name: name, lock: lock, append: flag&os.O_APPEND != 0}
	// fail gives the lock up and returns err itself when that works: go-git
	// tests it with os.IsNotExist, which sees through no wrapping.
	fail := func(err error) (billy.File, error) {
		if rerr := fs.release(name, lock); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		return nil, err
	}
	fi, err := fs.Filesystem.Stat(name)
	switch {
	case err == nil:
		if flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
			return fail(&os.PathError{Op: "open", Path: name, Err: os.ErrExist})
		}
		lf.mode = fi.Mode().Perm()
		lf.existed = true
	case errors.Is(err, os.ErrNotExist):
		if flag&os.O_CREATE == 0 {
			return fail(err)
		}
	default:
		return fail(err)
	}
	if flag&os.O_TRUNC != 0 {
		lf.dirty = true
	} else if lf.existed {
		if lf.buf, err = fs.readAll(name); err != nil {
			return fail(err)
		}
	}
	fs.mu.Lock()
	fs.held[clean(name)] = lf
	fs.mu.Unlock()
	return lf, nil
}

func (fs *lockFS) readAll(name string) ([]byte, error) {
	f, err := fs.Filesystem.Open(name)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return b, err
}

// lockedFile is a protected file open for writing under its lock file. It
// keeps the content in memory: it starts as what the file holds on disk
// (what a compare-and-swap must check while the lock is held) and is
// written to the lock file, fsynced and renamed over the file on Close;
// unchanged, only the lock goes.
type lockedFile struct {
	fs      *lockFS
	name    string
	lock    billy.File
	buf     []byte
	pos     int64
	append  bool
	dirty   bool
	existed bool
	mode    os.FileMode
	closed  bool
}

// Name is the path of the file being updated (not of its lock file).
func (f *lockedFile) Name() string { return f.name }

// Lock is a no-op: the lock file is the lock.
func (f *lockedFile) Lock() error { return nil }

// Unlock is a no-op: Close releases the lock file.
func (f *lockedFile) Unlock() error { return nil }

func (f *lockedFile) Read(p []byte) (int, error) {
	if f.closed {
		return 0, os.ErrClosed
	}
	if f.pos >= int64(len(f.buf)) {
		return 0, io.EOF
	}
	n := copy(p, f.buf[f.pos:])
	f.pos += int64(n)
	return n, nil
}

func (f *lockedFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, os.ErrClosed
	}
	if off < 0 {
		return 0, &os.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	if off >= int64(len(f.buf)) {
		return 0, io.EOF
	}
	n := copy(p, f.buf[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *lockedFile) Write(p []byte) (int, error) {
	if f.closed {
		return 0, os.ErrClosed
	}
	if f.append {
		f.pos = int64(len(f.buf))
	}
	if end := f.pos + int64(len(p)); end > int64(len(f.buf)) {
		f.buf = append(f.buf, make([]byte, end-int64(len(f.buf)))...)
	}
	copy(f.buf[f.pos:], p)
	f.pos += int64(len(p))
	f.dirty = true
	return len(p), nil
}

func (f *lockedFile) Seek(offset int64, whence int) (int64, error) {
	if f.closed {
		return 0, os.ErrClosed
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = f.pos + offset
	case io.SeekEnd:
		abs = int64(len(f.buf)) + offset
	default:
		return 0, &os.PathError{Op: "seek", Path: f.name, Err: errors.New("invalid whence")}
	}
	if abs < 0 {
		return 0, &os.PathError{Op: "seek", Path: f.name, Err: errors.New("negative position")}
	}
	f.pos = abs
	return abs, nil
}

func (f *lockedFile) Truncate(size int64) error {
	if f.closed {
		return os.ErrClosed
	}
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: errors.New("negative size")}
	}
	if size <= int64(len(f.buf)) {
		f.buf = f.buf[:size]
	} else {
		f.buf = append(f.buf, make([]byte, size-int64(len(f.buf)))...)
	}
	f.dirty = true
	return nil
}

// Close completes the update: the content goes into the lock file, is
// fsynced and renamed over the file. Unchanged, the lock file is removed
// and the file stays as it was. On any error the lock file is removed and
// the file is left as it was.
func (f *lockedFile) Close() error {
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	fs := f.fs
	defer func() {
		fs.mu.Lock()
		delete(fs.held, clean(f.name))
		fs.mu.Unlock()
	}()
	if !f.dirty {
		return fs.release(f.name, f.lock)
	}
	err := f.commit()
	if err != nil {
		_ = f.lock.Close()
		_ = fs.Filesystem.Remove(f.name + lockSuffix)
		return fmt.Errorf("%s: update failed (the file is unchanged): %w", fs.full(f.name), err)
	}
	return nil
}

func (f *lockedFile) commit() error {
	fs := f.fs
	lockName := f.name + lockSuffix
	if _, err := f.lock.Write(f.buf); err != nil {
		return err
	}
	if err := syncFile(fs, f.lock, lockName); err != nil {
		return err
	}
	if err := f.lock.Close(); err != nil {
		return err
	}
	if f.existed {
		// Keep the file's mode, as git does for config.
		if err := fs.Chmod(lockName, f.mode); err != nil && !errors.Is(err, billy.ErrNotSupported) {
			return err
		}
	}
	return fs.Filesystem.Rename(lockName, f.name)
}

// syncFile flushes a written file to disk. billy's chroot hides the
// os.File's Sync, so the file is reopened by path on an OS filesystem.
func syncFile(fs *lockFS, f billy.File, name string) error {
	if s, ok := f.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	root := fs.Root()
	if root == "" {
		return nil // not on an OS filesystem: nothing to flush
	}
	osf, err := os.Open(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	err = osf.Sync()
	if cerr := osf.Close(); err == nil {
		err = cerr
	}
	return err
}
