package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing/fstest"
	"time"
)

// Mount is tree with files served, read-only, under the folder dir: a
// chart fetched from a Helm repository or an OCI registry, rendered like
// a chart folder of the repository (its values files from the repository
// root included). Whatever the tree holds under dir is hidden. id names
// the files' content (the chart archive's digest): the mounted folders'
// tree hashes are made from it, so a render of dir is cached, in memory
// and on disk, for exactly that content.
func Mount(tree Tree, dir string, files map[string][]byte, id string) Tree {
	return mount(tree, dir, files, id)
}

// MountFS is Mount over a file system that is not a Tree (its TreeHash
// then fails outside dir): for reading the mounted files beside the
// tree's, as discovery validates an app.
func MountFS(fsys fs.FS, dir string, files map[string][]byte) fs.FS {
	return mount(fsys, dir, files, "")
}

func mount(fsys fs.FS, dir string, files map[string][]byte, id string) *mounted {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: data, Mode: 0o444, ModTime: time.Time{}}
	}
	return &mounted{base: fsys, dir: path.Clean(dir), files: m, id: id}
}

// mounted is the Tree Mount returns.
type mounted struct {
	base  fs.FS
	dir   string
	files fstest.MapFS
	id    string
}

var (
	_ fs.ReadDirFS  = (*mounted)(nil)
	_ fs.ReadFileFS = (*mounted)(nil)
	_ fs.StatFS     = (*mounted)(nil)
)

// inside says whether name is dir or below it, and its path from dir.
func (m *mounted) inside(name string) (string, bool) {
	if name == m.dir {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(name, m.dir+"/"); ok {
		return rest, true
	}
	return "", false
}

// Open opens name from the mounted files, or from the tree.
func (m *mounted) Open(name string) (fs.File, error) {
	if r, ok := m.inside(name); ok {
		return m.files.Open(r)
	}
	return m.base.Open(name)
}

// ReadFile reads name from the mounted files, or from the tree.
func (m *mounted) ReadFile(name string) ([]byte, error) {
	if r, ok := m.inside(name); ok {
		return m.files.ReadFile(r)
	}
	return fs.ReadFile(m.base, name)
}

// ReadDir lists name from the mounted files, or from the tree.
func (m *mounted) ReadDir(name string) ([]fs.DirEntry, error) {
	if r, ok := m.inside(name); ok {
		return m.files.ReadDir(r)
	}
	return fs.ReadDir(m.base, name)
}

// Stat describes name from the mounted files, or from the tree.
func (m *mounted) Stat(name string) (fs.FileInfo, error) {
	if r, ok := m.inside(name); ok {
		return m.files.Stat(r)
	}
	return fs.Stat(m.base, name)
}

// TreeHash is, inside dir, made of the content's id and the folder's
// path (a missing folder is fs.ErrNotExist), else the tree's.
func (m *mounted) TreeHash(name string) (string, error) {
	r, ok := m.inside(name)
	if !ok {
		t, isTree := m.base.(Tree)
		if !isTree {
			return "", &fs.PathError{Op: "treehash", Path: name, Err: errors.ErrUnsupported}
		}
		return t.TreeHash(name)
	}
	st, err := m.files.Stat(r)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", &fs.PathError{Op: "treehash", Path: name, Err: fmt.Errorf("not a folder: %w", fs.ErrNotExist)}
	}
	return "mount:" + m.id + ":" + r, nil
}
