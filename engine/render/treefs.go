package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"kdrift.dev/kdrift/engine/redact"
)

// errReadOnly is returned by every writing method of treeFS.
var errReadOnly = errors.New("a Git snapshot is read-only")

// treeFS is a kustomize filesys.FileSystem over a Tree, rooted at "/" (the
// repository root). It records the folder of every path kustomize looks at,
// with that folder's tree hash, so that a cached build can later tell
// whether any of its inputs changed.
//
// It is also the sandbox of a build: nothing is read from the local disk
// (kustomize's remote bases, cloned into a temporary folder, are refused
// before kustomize runs, and a path under that folder is just absent
// here), nothing is written, every file read is within the budgets of
// opts and passes CheckYAML, and reads stop once the render's context
// ends.
type treeFS struct {
	tree    Tree
	opts    Options
	ctx     context.Context
	secrets *redact.Secrets
	sops    *sopsReader // decrypts SOPS files the build reads
	// sopsRule says which files may become a Secret's data (sopsrule.go).
	sopsRule *sopsRule

	// virtual are files served from memory by repository path, over the
	// tree: a kustomization whose local helmCharts kdrift rendered, and
	// their output. Set before kustomize runs.
	virtual map[string][]byte
	// inProcess runs Helm and Jsonnet in this process, not in a render
	// worker; hook is the test hook of the worker. See sandboxFS.
	inProcess bool
	hook      string

	mu     sync.Mutex
	seen   map[string]string // folder -> tree hash, "" when absent
	broken bool              // a read failed for a reason other than absence
	read   int64             // bytes read so far
	// decodedRead and decodedOut are the YAML and JSON the parent
	// decoded so far: of the files read, of what the render gave (see
	// spend).
	decodedRead, decodedOut nodeCost
	limitErr                error // the first budget a read went past
}

var _ filesys.FileSystem = (*treeFS)(nil)

func newTreeFS(ctx context.Context, tree Tree, opts Options, secrets *redact.Secrets) *treeFS {
	return &treeFS{tree: tree, opts: opts.withDefaults(), ctx: ctx, secrets: secrets, seen: map[string]string{}}
}

// limit returns the first budget a read went past, or nil.
func (t *treeFS) limit() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limitErr
}

// refuse records a budget error (the first one wins) and returns it; the
// build is not cached, since a budget is a setting and not the input.
func (t *treeFS) refuse(err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limitErr == nil {
		t.limitErr = err
	}
	t.broken = true
	return err
}

// spend counts what the parent decodes for this render (nodes and
// scalar bytes), and refuses the render once either comes to more than
// its budget (opts.MaxRenderNodes, opts.MaxScalarBytes): what it reads
// (out false; file names the file) and, separately, what it renders (out
// true; file names the template or file, empty for a render worker's
// objects), as for the bytes of the files.
func (t *treeFS) spend(file string, c nodeCost, out bool) error {
	t.mu.Lock()
	d, what := &t.decodedRead, "read"
	if out {
		d, what = &t.decodedOut, "rendered"
	}
	d.nodes += c.nodes
	d.bytes += c.bytes
	total := *d
	t.mu.Unlock()
	at := ""
	if file != "" {
		at = " (at " + file + ")"
	}
	switch {
	case total.nodes > t.opts.MaxRenderNodes:
		return t.refuse(limitf("", "nodes", "the render %s more than %d YAML or JSON nodes%s", what, t.opts.MaxRenderNodes, at))
	case int64(total.bytes) > t.opts.MaxScalarBytes:
		return t.refuse(limitf("", "scalar bytes", "the render %s more than %d bytes of YAML or JSON values%s", what, t.opts.MaxScalarBytes, at))
	}
	return nil
}

// markBroken records that the render failed for a reason that is not its
// input (a render worker that failed, a render that ran out of time): it
// is not cached.
func (t *treeFS) markBroken() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.broken = true
}

// inputs returns a copy of the recorded folders and hashes.
func (t *treeFS) inputs() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]string, len(t.seen))
	for k, v := range t.seen {
		out[k] = v
	}
	return out
}

// failed reports whether a read failed for a reason other than absence, in
// which case the build must not be cached.
func (t *treeFS) failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.broken
}

// realPather is a Tree that follows symbolic links and can say where a
// path really is (*source.Snapshot does).
type realPather interface {
	RealPath(name string) (string, error)
}

// rel turns a kustomize path (absolute from "/", or relative to "/") into a
// Tree path; ok is false for a path outside the repository.
func rel(p string) (string, bool) {
	p = filepath.ToSlash(p)
	p = path.Clean("/" + p)
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		p = "."
	}
	return p, fs.ValidPath(p)
}

// note records folder dir as an input.
func (t *treeFS) note(dir string) {
	t.mu.Lock()
	_, ok := t.seen[dir]
	t.mu.Unlock()
	if ok {
		return
	}
	hash, err := t.tree.TreeHash(dir)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err == nil:
		t.seen[dir] = hash
	case errors.Is(err, fs.ErrNotExist):
		t.seen[dir] = ""
	default:
		t.broken = true
	}
}

// stat looks p up and records the folder it depends on: p itself when it
// is a folder, else its parent folder (a file's presence and contents are
// part of its parent's tree hash).
func (t *treeFS) stat(p string) (string, fs.FileInfo, error) {
	r, ok := rel(p)
	if !ok {
		return r, nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
	if data, ok := t.virtual[r]; ok {
		return r, memInfo{name: path.Base(r), size: int64(len(data))}, nil
	}
	st, err := fs.Stat(t.tree, r)
	switch {
	case err == nil && st.IsDir():
		t.note(r)
	case err == nil || errors.Is(err, fs.ErrNotExist):
		t.note(path.Dir(r))
		// A file reached through a symbolic link also depends on the
		// folder that really holds it.
		if rp, ok := t.tree.(realPather); ok && err == nil {
			if real, rerr := rp.RealPath(r); rerr == nil && real != r {
				t.note(path.Dir(real))
			}
		}
	default:
		t.mu.Lock()
		t.broken = true
		t.mu.Unlock()
	}
	return r, st, err
}

// Create implements filesys.FileSystem; the tree is read-only.
func (t *treeFS) Create(p string) (filesys.File, error) {
	return nil, &fs.PathError{Op: "create", Path: p, Err: errReadOnly}
}

// Mkdir implements filesys.FileSystem; the tree is read-only.
func (t *treeFS) Mkdir(p string) error { return &fs.PathError{Op: "mkdir", Path: p, Err: errReadOnly} }

// MkdirAll implements filesys.FileSystem; the tree is read-only.
func (t *treeFS) MkdirAll(p string) error {
	return &fs.PathError{Op: "mkdir", Path: p, Err: errReadOnly}
}

// RemoveAll implements filesys.FileSystem; the tree is read-only.
func (t *treeFS) RemoveAll(p string) error {
	return &fs.PathError{Op: "remove", Path: p, Err: errReadOnly}
}

// WriteFile implements filesys.FileSystem; the tree is read-only.
func (t *treeFS) WriteFile(p string, _ []byte) error {
	return &fs.PathError{Op: "write", Path: p, Err: errReadOnly}
}

// Open implements filesys.FileSystem for reading.
func (t *treeFS) Open(p string) (filesys.File, error) {
	data, err := t.ReadFile(p)
	if err != nil {
		return nil, err
	}
	_, st, err := t.stat(p)
	if err != nil {
		return nil, err
	}
	return &roFile{Reader: bytes.NewReader(data), info: st}, nil
}

// IsDir implements filesys.FileSystem.
func (t *treeFS) IsDir(p string) bool {
	_, st, err := t.stat(p)
	return err == nil && st.IsDir()
}

// Exists implements filesys.FileSystem.
func (t *treeFS) Exists(p string) bool {
	_, _, err := t.stat(p)
	return err == nil
}

// ReadDir implements filesys.FileSystem.
func (t *treeFS) ReadDir(p string) ([]string, error) {
	r, st, err := t.stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", p)
	}
	entries, err := fs.ReadDir(t.tree, r)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// CleanedAbs implements filesys.FileSystem: a folder comes back as itself
// with an empty file name, a file as its folder and its name, both with
// symbolic links resolved.
func (t *treeFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	r, st, err := t.stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", notExistError(p)
		}
		return "", "", err
	}
	// Like kustomize on disk, resolve symbolic links, so that its
	// load restrictions see where a file really is.
	if rp, ok := t.tree.(realPather); ok && t.virtual[r] == nil {
		real, err := rp.RealPath(r)
		if err != nil {
			return "", "", err
		}
		r = real
	}
	abs := "/" + r
	if r == "." {
		abs = "/"
	}
	if st.IsDir() {
		return filesys.ConfirmedDir(abs), "", nil
	}
	return filesys.ConfirmedDir(path.Dir(abs)), path.Base(abs), nil
}

// Glob implements filesys.FileSystem; matches are absolute from "/".
func (t *treeFS) Glob(pattern string) ([]string, error) {
	r, ok := rel(pattern)
	if !ok {
		return nil, nil
	}
	t.note(path.Dir(r))
	matches, err := fs.Glob(t.tree, r)
	if err != nil {
		return nil, err
	}
	for i, m := range matches {
		matches[i] = "/" + m
	}
	return matches, nil
}

// ReadFile implements filesys.FileSystem; a SOPS file is decrypted only
// as sopsrule.go allows.
func (t *treeFS) ReadFile(p string) ([]byte, error) {
	return t.readAs(p, "")
}

// readAs reads p for reader ("" for kustomize and plain folders; see
// openSOPS).
func (t *treeFS) readAs(p, reader string) ([]byte, error) {
	r, st, err := t.stat(p)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", p)
	}
	if data, ok := t.virtual[r]; ok {
		return data, nil // read through the budgets when it was made
	}
	if err := t.ctx.Err(); err != nil {
		return nil, t.refuse(err)
	}
	if st.Size() > t.opts.MaxFileBytes {
		return nil, t.refuse(limitf(r, "file size", "%d bytes, more than %d", st.Size(), t.opts.MaxFileBytes))
	}
	t.mu.Lock()
	t.read += st.Size()
	total := t.read
	t.mu.Unlock()
	if total > t.opts.MaxRenderBytes {
		return nil, t.refuse(limitf("", "read size", "the render read more than %d bytes", t.opts.MaxRenderBytes))
	}
	data, err := fs.ReadFile(t.tree, r)
	if err != nil {
		return nil, err
	}
	if yamlName(r) {
		// Syntax errors are kustomize's to report, in its words; what
		// would exhaust the process is refused here.
		cost, err := checkYAML(r, data, t.opts, t.secrets)
		if err != nil && !isSyntax(err) {
			return nil, t.refuse(err)
		}
		if err := t.spend(r, cost, false); err != nil {
			return nil, err
		}
	}
	// A SOPS file is decrypted in memory, after the guard read it raw,
	// when it becomes a Secret's data.
	return t.openSOPS(r, data, reader)
}

// Walk implements filesys.FileSystem, in lexical order.
func (t *treeFS) Walk(p string, walkFn filepath.WalkFunc) error {
	r, _, err := t.stat(p)
	if err != nil {
		return walkFn(p, nil, err)
	}
	return fs.WalkDir(t.tree, r, func(name string, d fs.DirEntry, err error) error {
		abs := "/" + name
		if name == "." {
			abs = "/"
		}
		if err != nil {
			return walkFn(abs, nil, err)
		}
		if d.IsDir() {
			t.note(name)
		}
		info, err := d.Info()
		if err != nil {
			return walkFn(abs, nil, err)
		}
		return walkFn(abs, info, nil)
	})
}

// memInfo describes a virtual file of a treeFS.
type memInfo struct {
	name string
	size int64
}

func (m memInfo) Name() string       { return m.name }
func (m memInfo) Size() int64        { return m.size }
func (m memInfo) Mode() fs.FileMode  { return 0o444 }
func (m memInfo) ModTime() time.Time { return time.Time{} }
func (m memInfo) IsDir() bool        { return false }
func (m memInfo) Sys() any           { return nil }

// roFile is an open file of a treeFS.
type roFile struct {
	*bytes.Reader
	info fs.FileInfo
}

func (f *roFile) Write([]byte) (int, error)  { return 0, errReadOnly }
func (f *roFile) Close() error               { return nil }
func (f *roFile) Stat() (os.FileInfo, error) { return f.info, nil }

// notExistError words a missing path as kustomize's own file systems do,
// and still matches fs.ErrNotExist.
type notExistError string

func (e notExistError) Error() string        { return fmt.Sprintf("'%s' doesn't exist", string(e)) }
func (e notExistError) Is(target error) bool { return target == fs.ErrNotExist }
