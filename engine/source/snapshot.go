package source

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/gitobj"
)

// Snapshot is a read-only view of one commit's tree, read lazily from the
// object store; it never touches a working tree. It implements io/fs.FS
// (with ReadDir, ReadFile and Stat) with paths relative to the repository
// root, and is safe for concurrent use. Symbolic links that stay inside the
// repository are followed; submodules are listed but cannot be opened.
type Snapshot struct {
	h      *handle
	commit string
	root   *object.Tree

	mu    sync.Mutex
	trees map[string]*object.Tree // by cleaned folder path; "." is the root
	sizes map[plumbing.Hash]int64 // blob sizes Stat found: renderers ask often

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

// Apps loads and validates the Apps declared in the commit's .kdrift
// folder, and the Argo CD Applications and Flux Kustomizations of the
// tree that read this repository (app.Discover), once per Snapshot.
func (s *Snapshot) Apps() app.LoadResult {
	s.appsOnce.Do(func() {
		s.apps = app.Discover(s, app.DiscoverOptions{SameRepo: s.h.sameRepo(), Branch: s.h.upstreamBranch(), Renderer: s.h.discoverRenderer(), Clusters: s.h.clusters, ClustersErr: s.h.clustersErr, Flux: s.h.fluxCluster(), Children: s.h.children})
		if s.h.children != nil {
			s.h.children.Save()
		}
	})
	return s.apps
}

// TreeHash is the Git tree hash of folder dir ("." or "" for the root). Two
// snapshots whose trees for dir have the same hash have identical contents
// there, recursively. A missing folder is an error wrapping fs.ErrNotExist.
// Symbolic links to folders inside the repository are followed.
func (s *Snapshot) TreeHash(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	real, e, err := s.resolve("treehash", dir)
	if err != nil {
		return "", err
	}
	if e != nil && e.Mode != filemode.Dir {
		return "", &fs.PathError{Op: "treehash", Path: dir, Err: fmt.Errorf("not a folder: %w", fs.ErrNotExist)}
	}
	if e != nil {
		return e.Hash.String(), nil // its parent names it: no need to read it
	}
	t, err := s.tree(real)
	if err != nil {
		return "", &fs.PathError{Op: "treehash", Path: dir, Err: err}
	}
	return t.Hash.String(), nil
}

// EntryID identifies what name shows without reading it: "dir" for a
// folder (whatever it holds), else the tree entry's mode and object hash,
// symbolic links followed. Two snapshots with the same EntryID for name
// give the same Stat, ReadFile and Open of it (a folder's listing
// aside: see ListingID).
func (s *Snapshot) EntryID(name string) (string, error) {
	_, e, err := s.resolve("entry", name)
	if err != nil {
		return "", err
	}
	if e == nil || e.Mode == filemode.Dir {
		return "dir", nil
	}
	return e.Mode.String() + " " + e.Hash.String(), nil
}

// ListingID identifies folder name's listing: the names and modes of its
// entries and the objects of those that are not folders, but not what
// its subfolders hold. Two snapshots with the same ListingID for name
// give the same ReadDir of it, with the same Info of each entry.
func (s *Snapshot) ListingID(name string) (string, error) {
	real, e, err := s.resolve("listing", name)
	if err != nil {
		return "", err
	}
	if e != nil && e.Mode != filemode.Dir {
		return "", &fs.PathError{Op: "listing", Path: name, Err: errors.New("not a folder")}
	}
	t, err := s.tree(real)
	if err != nil {
		return "", &fs.PathError{Op: "listing", Path: name, Err: err}
	}
	h := sha256.New()
	for _, en := range t.Entries {
		id := ""
		if en.Mode != filemode.Dir {
			id = en.Hash.String()
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", en.Name, en.Mode, id)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ErrShapeChanged says a folder's entries differ from an earlier tree's
// in more than their contents: a name or a mode.
var ErrShapeChanged = errors.New("the folder's entries changed")

// ChangedEntries names the entries of folder dir whose object differs
// from the same entry in the tree whose hash is since (an earlier
// version of dir, read from the object store). It fails with
// ErrShapeChanged when an entry was added, removed or changed mode, and
// with another error when either tree cannot be read.
func (s *Snapshot) ChangedEntries(dir, since string) ([]string, error) {
	real, e, err := s.resolve("changes", dir)
	if err != nil {
		return nil, err
	}
	if e != nil && e.Mode != filemode.Dir {
		return nil, &fs.PathError{Op: "changes", Path: dir, Err: fmt.Errorf("not a folder: %w", fs.ErrNotExist)}
	}
	now, err := s.tree(real)
	if err != nil {
		return nil, &fs.PathError{Op: "changes", Path: dir, Err: err}
	}
	h, err := parseTreeHash(since)
	if err != nil {
		return nil, &fs.PathError{Op: "changes", Path: dir, Err: err}
	}
	was, err := s.treeByHash(h)
	if err != nil {
		return nil, &fs.PathError{Op: "changes", Path: dir, Err: fmt.Errorf("reading tree %s: %w", since, err)}
	}
	if len(now.Entries) != len(was.Entries) {
		return nil, ErrShapeChanged
	}
	var changed []string
	for i, en := range now.Entries {
		old := was.Entries[i]
		if en.Name != old.Name || en.Mode != old.Mode {
			return nil, ErrShapeChanged
		}
		if en.Hash != old.Hash {
			changed = append(changed, en.Name)
		}
	}
	return changed, nil
}

// treeByHash reads the tree object whose hash is hash.
func (s *Snapshot) treeByHash(hash plumbing.Hash) (*object.Tree, error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return object.GetTree(s.h.repo.Storer, hash)
}

// parseTreeHash is the tree hash hash names, given as hex.
func parseTreeHash(hash string) (plumbing.Hash, error) {
	if !plumbing.IsHash(hash) {
		return plumbing.ZeroHash, fmt.Errorf("%q is not a tree hash", hash)
	}
	return plumbing.NewHash(hash), nil
}

// ErrTooManyChanges says ChangedPaths met more changed entries than it
// was allowed to list.
var ErrTooManyChanges = errors.New("too many changed entries")

// ChangedPaths lists what changed between the root tree whose hash is
// since (an earlier commit's, read from the object store) and this
// snapshot's, by path, following no symbolic link: an entry added,
// removed or changed (its value is true), or a folder that is a folder
// in both with other contents (false; what changed in it is listed
// too). It reads only the folders that differ, and fails with
// ErrTooManyChanges past max entries.
func (s *Snapshot) ChangedPaths(since string, max int) (map[string]bool, error) {
	h, err := parseTreeHash(since)
	if err != nil {
		return nil, err
	}
	was, err := s.treeByHash(h)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", since, err)
	}
	out := map[string]bool{}
	if err := s.diffTrees(was, s.root, "", out, max); err != nil {
		return nil, err
	}
	return out, nil
}

// diffTrees adds to out what differs between trees a and b of folder
// prefix ("" for the root).
func (s *Snapshot) diffTrees(a, b *object.Tree, prefix string, out map[string]bool, max int) error {
	old := make(map[string]object.TreeEntry, len(a.Entries))
	for _, e := range a.Entries {
		old[e.Name] = e
	}
	seen := make(map[string]bool, len(b.Entries))
	for _, e := range b.Entries {
		seen[e.Name] = true
		o, ok := old[e.Name]
		if ok && o.Mode == e.Mode && o.Hash == e.Hash {
			continue
		}
		name := path.Join(prefix, e.Name)
		if len(out) >= max {
			return ErrTooManyChanges
		}
		if !ok || o.Mode != filemode.Dir || e.Mode != filemode.Dir {
			out[name] = true
			continue
		}
		out[name] = false
		ta, err := s.treeByHash(o.Hash)
		if err != nil {
			return fmt.Errorf("reading tree %s of %s: %w", o.Hash, name, err)
		}
		tb, err := s.treeByHash(e.Hash)
		if err != nil {
			return fmt.Errorf("reading tree %s of %s: %w", e.Hash, name, err)
		}
		if err := s.diffTrees(ta, tb, name, out, max); err != nil {
			return err
		}
	}
	for _, e := range a.Entries {
		if !seen[e.Name] {
			if len(out) >= max {
				return ErrTooManyChanges
			}
			out[path.Join(prefix, e.Name)] = true
		}
	}
	return nil
}

// RealPath is name with every symbolic link resolved: the path whose
// contents name shows.
func (s *Snapshot) RealPath(name string) (string, error) {
	real, _, err := s.resolve("realpath", name)
	return real, err
}

// maxLinks bounds how many symbolic links one lookup follows.
const maxLinks = 40

// resolve finds name's tree entry, following symbolic links that stay
// inside the repository, and returns the resolved path. The root has no
// entry and returns ".", nil, nil.
func (s *Snapshot) resolve(op, name string) (string, *object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return ".", nil, nil
	}
	rest := strings.Split(name, "/")
	cur := "." // resolved, free of links
	for hops := 0; ; {
		t, err := s.tree(cur)
		if err != nil {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
		e, err := findEntry(t, rest[0])
		if err != nil {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
		if e.Mode == filemode.Symlink {
			if hops++; hops > maxLinks {
				return "", nil, &fs.PathError{Op: op, Path: name, Err: errors.New("too many levels of symbolic links")}
			}
			target, err := s.blob(e.Hash, gitobj.MaxLinkBytes, "the target of symbolic link "+path.Join(cur, rest[0]))
			if err != nil {
				return "", nil, &fs.PathError{Op: op, Path: name, Err: err}
			}
			next := path.Join(append([]string{cur, string(target)}, rest[1:]...)...)
			if path.IsAbs(string(target)) || next == ".." || strings.HasPrefix(next, "../") {
				return "", nil, &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("symbolic link to %q leaves the repository: %w", target, fs.ErrNotExist)}
			}
			if next == "." {
				return ".", nil, nil
			}
			cur, rest = ".", strings.Split(next, "/")
			continue
		}
		p := path.Join(cur, rest[0])
		if len(rest) == 1 {
			return p, e, nil
		}
		if e.Mode != filemode.Dir {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		cur, rest = p, rest[1:]
	}
}

// tree returns the tree of folder dir, a path free of symbolic links,
// walking from the nearest known folder.
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
	t, err = s.treeByHash(e.Hash)
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

// MaxReadBytes bounds any file a Snapshot reads whole (ReadFile, Open),
// checked against the object's header before it is inflated: the render
// budget, which no reader of a repository file goes past. Readers with a
// smaller bound (an App file, the settings) check it first with Stat,
// which reads only the header (gitobj.ReadFile).
const MaxReadBytes = render.DefaultMaxRenderBytes

// blob reads a blob's contents when its header says it is at most max
// bytes; what names it in the error.
func (s *Snapshot) blob(hash plumbing.Hash, max int64, what string) ([]byte, error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return gitobj.Blob(s.h.repo.Storer, hash, max, what)
}

// Stat describes name, following symbolic links.
func (s *Snapshot) Stat(name string) (fs.FileInfo, error) {
	_, e, err := s.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return fileInfo{name: path.Base(name), mode: fs.ModeDir | 0o555}, nil
	}
	fi, err := s.info(e)
	fi.name = path.Base(name)
	return fi, err
}

func (s *Snapshot) info(e *object.TreeEntry) (fileInfo, error) {
	fi := fileInfo{name: e.Name, mode: goMode(e.Mode)}
	if fi.mode.IsRegular() {
		s.mu.Lock()
		size, ok := s.sizes[e.Hash]
		s.mu.Unlock()
		if !ok {
			var err error
			s.h.mu.Lock()
			size, err = s.h.repo.Storer.EncodedObjectSize(e.Hash)
			s.h.mu.Unlock()
			if err != nil {
				return fi, fmt.Errorf("reading size of %s: %w", e.Name, err)
			}
			s.mu.Lock()
			if s.sizes == nil {
				s.sizes = map[plumbing.Hash]int64{}
			}
			s.sizes[e.Hash] = size
			s.mu.Unlock()
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

// ReadDir lists folder name, sorted by file name, following symbolic links
// to the folder; entries that are links are listed as links.
func (s *Snapshot) ReadDir(name string) ([]fs.DirEntry, error) {
	real, e, err := s.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	if e != nil && e.Mode != filemode.Dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a folder")}
	}
	t, err := s.tree(real)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	out := make([]fs.DirEntry, 0, len(t.Entries))
	for i := range t.Entries {
		out = append(out, dirEntry{s: s, e: &t.Entries[i]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// ReadFile reads file name's contents from the object store, following
// symbolic links.
func (s *Snapshot) ReadFile(name string) ([]byte, error) {
	_, e, err := s.resolve("read", name)
	if err != nil {
		return nil, err
	}
	if e == nil || !goMode(e.Mode).IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("not a regular file")}
	}
	data, err := s.blob(e.Hash, MaxReadBytes, "")
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return data, nil
}

// Open opens name, a folder (listable with ReadDir) or a regular file,
// following symbolic links.
func (s *Snapshot) Open(name string) (fs.File, error) {
	_, e, err := s.resolve("open", name)
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
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("a submodule is not part of this repository")}
	}
	fi.name = path.Base(name)
	data, err := s.blob(e.Hash, MaxReadBytes, "")
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
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

var _ fs.ReadLinkFS = (*Snapshot)(nil)

// lentry finds name's own tree entry without following a link at the end.
func (s *Snapshot) lentry(op, name string) (*object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return nil, nil
	}
	parent, e, err := s.resolve(op, path.Dir(name))
	if err != nil {
		return nil, err
	}
	if e != nil && e.Mode != filemode.Dir {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	t, err := s.tree(parent)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	own, err := findEntry(t, path.Base(name))
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return own, nil
}

// Lstat describes name itself: a symbolic link is not followed.
func (s *Snapshot) Lstat(name string) (fs.FileInfo, error) {
	e, err := s.lentry("lstat", name)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return fileInfo{name: ".", mode: fs.ModeDir | 0o555}, nil
	}
	return s.info(e)
}

// ReadLink returns the target of symbolic link name.
func (s *Snapshot) ReadLink(name string) (string, error) {
	e, err := s.lentry("readlink", name)
	if err != nil {
		return "", err
	}
	if e == nil || e.Mode != filemode.Symlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	target, err := s.blob(e.Hash, gitobj.MaxLinkBytes, "the target of symbolic link "+name)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return string(target), nil
}
