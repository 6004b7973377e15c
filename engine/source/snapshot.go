package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"kdrift.dev/kdrift/engine/app"
)

// Snapshot is a read-only view of one commit's tree, read lazily from the
// object store; it never touches a working tree. It implements io/fs.FS
// (with ReadDir, ReadFile and Stat) with paths relative to the repository
// root, and is safe for concurrent use. Symbolic links and submodules are
// listed but cannot be opened.
type Snapshot struct {
	h      *handle
	commit string
	root   *object.Tree

	mu    sync.Mutex
	trees map[string]*object.Tree // by cleaned folder path; "." is the root

	appsOnce sync.Once
	apps     app.LoadResult
}

var (
	_ fs.ReadDirFS  = (*Snapshot)(nil)
	_ fs.ReadFileFS = (*Snapshot)(nil)
	_ fs.StatFS     = (*Snapshot)(nil)
)

func newSnapshot(h *handle, commit string, root *object.Tree) *Snapshot {
	return &Snapshot{h: h, commit: commit, root: root, trees: map[string]*object.Tree{".": root}}
}

// Commit is the hash of the commit the Snapshot shows.
func (s *Snapshot) Commit() string { return s.commit }

// Apps loads and validates the Apps declared in the commit's .kdrift folder,
// once per Snapshot.
func (s *Snapshot) Apps() app.LoadResult {
	s.appsOnce.Do(func() { s.apps = app.Load(s, ".") })
	return s.apps
}

// TreeHash is the Git tree hash of folder dir ("." or "" for the root). Two
// snapshots whose trees for dir have the same hash have identical contents
// there, recursively. A missing folder is an error wrapping fs.ErrNotExist.
func (s *Snapshot) TreeHash(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	if !fs.ValidPath(dir) {
		return "", &fs.PathError{Op: "treehash", Path: dir, Err: fs.ErrInvalid}
	}
	t, err := s.tree(dir)
	if err != nil {
		return "", &fs.PathError{Op: "treehash", Path: dir, Err: err}
	}
	return t.Hash.String(), nil
}

// tree returns the tree of folder dir, walking from the nearest known one.
func (s *Snapshot) tree(dir string) (*object.Tree, error) {
	s.mu.Lock()
	t, ok := s.trees[dir]
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	parent, err := s.tree(path.Dir(dir))
	if err != nil {
		return nil, err
	}
	e, err := findEntry(parent, path.Base(dir))
	if err != nil {
		return nil, err
	}
	if e.Mode != filemode.Dir {
		return nil, fmt.Errorf("%s is not a folder: %w", dir, fs.ErrNotExist)
	}
	s.h.mu.Lock()
	t, err = object.GetTree(s.h.repo.Storer, e.Hash)
	s.h.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("reading tree %s of %s: %w", e.Hash, dir, err)
	}
	s.mu.Lock()
	s.trees[dir] = t
	s.mu.Unlock()
	return t, nil
}

func findEntry(t *object.Tree, name string) (*object.TreeEntry, error) {
	for i := range t.Entries {
		if t.Entries[i].Name == name {
			return &t.Entries[i], nil
		}
	}
	return nil, fs.ErrNotExist
}

// entry finds name's tree entry; the root has none and returns nil, nil.
func (s *Snapshot) entry(op, name string) (*object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return nil, nil
	}
	parent, err := s.tree(path.Dir(name))
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	e, err := findEntry(parent, path.Base(name))
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return e, nil
}

// Stat describes name.
func (s *Snapshot) Stat(name string) (fs.FileInfo, error) {
	e, err := s.entry("stat", name)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return fileInfo{name: ".", mode: fs.ModeDir | 0o555}, nil
	}
	return s.info(e)
}

func (s *Snapshot) info(e *object.TreeEntry) (fileInfo, error) {
	fi := fileInfo{name: e.Name, mode: goMode(e.Mode)}
	if fi.mode.IsRegular() {
		s.h.mu.Lock()
		size, err := s.h.repo.Storer.EncodedObjectSize(e.Hash)
		s.h.mu.Unlock()
		if err != nil {
			return fi, fmt.Errorf("reading size of %s: %w", e.Name, err)
		}
		fi.size = size
	}
	return fi, nil
}

func goMode(m filemode.FileMode) fs.FileMode {
	switch m {
	case filemode.Dir:
		return fs.ModeDir | 0o555
	case filemode.Executable:
		return 0o555
	case filemode.Symlink:
		return fs.ModeSymlink | 0o777
	case filemode.Submodule:
		return fs.ModeIrregular
	}
	return 0o444
}

// ReadDir lists folder name, sorted by file name.
func (s *Snapshot) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	t, err := s.tree(name)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, 0, len(t.Entries))
	for i := range t.Entries {
		out = append(out, dirEntry{s: s, e: &t.Entries[i]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// ReadFile reads file name's contents from the object store.
func (s *Snapshot) ReadFile(name string) ([]byte, error) {
	e, err := s.entry("read", name)
	if err != nil {
		return nil, err
	}
	if e == nil || !goMode(e.Mode).IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("not a regular file")}
	}
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	blob, err := object.GetBlob(s.h.repo.Storer, e.Hash)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	rc, err := blob.Reader()
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	data, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return data, nil
}

// Open opens name: a folder (listable with ReadDir) or a regular file.
func (s *Snapshot) Open(name string) (fs.File, error) {
	e, err := s.entry("open", name)
	if err != nil {
		return nil, err
	}
	if e == nil || e.Mode == filemode.Dir {
		entries, err := s.ReadDir(name)
		if err != nil {
			return nil, err
		}
		fi := fileInfo{name: path.Base(name), mode: fs.ModeDir | 0o555}
		return &dirFile{info: fi, entries: entries}, nil
	}
	fi, err := s.info(e)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if !fi.mode.IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("symbolic links and submodules are not followed")}
	}
	data, err := s.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &file{info: fi, Reader: bytes.NewReader(data)}, nil
}

type fileInfo struct {
	name string
	mode fs.FileMode
	size int64
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi fileInfo) ModTime() time.Time { return time.Time{} }
func (fi fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi fileInfo) Sys() any           { return nil }

type dirEntry struct {
	s *Snapshot
	e *object.TreeEntry
}

func (d dirEntry) Name() string               { return d.e.Name }
func (d dirEntry) IsDir() bool                { return d.e.Mode == filemode.Dir }
func (d dirEntry) Type() fs.FileMode          { return goMode(d.e.Mode).Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.s.info(d.e) }

type file struct {
	info fileInfo
	*bytes.Reader
}

func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *file) Close() error               { return nil }

type dirFile struct {
	info    fileInfo
	entries []fs.DirEntry
	pos     int
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Close() error               { return nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}

// ReadDir implements fs.ReadDirFile.
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.pos:]
	if n <= 0 {
		d.pos = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.pos += n
	return rest[:n], nil
}
