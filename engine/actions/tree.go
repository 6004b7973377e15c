package actions

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"kdrift.dev/kdrift/internal/gitobj"
)

// entry is one file of a flattened Git tree: its blob (or submodule commit)
// and its mode.
type entry struct {
	Hash plumbing.Hash
	Mode filemode.FileMode
}

// flatTree maps a slash-separated path relative to the repository root to
// the file there.
type flatTree map[string]entry

// readFlatTree flattens the tree with the given hash; the zero hash is the
// empty tree.
func readFlatTree(s storer.EncodedObjectStorer, h plumbing.Hash) (flatTree, error) {
	out := flatTree{}
	if h.IsZero() {
		return out, nil
	}
	t, err := object.GetTree(s, h)
	if err != nil {
		return nil, fmt.Errorf("tree %s read failed: %w", h, err)
	}
	if err := flattenInto(s, t, "", out); err != nil {
		return nil, err
	}
	return out, nil
}

func flattenInto(s storer.EncodedObjectStorer, t *object.Tree, prefix string, out flatTree) error {
	for _, e := range t.Entries {
		p := path.Join(prefix, e.Name)
		if e.Mode == filemode.Dir {
			sub, err := object.GetTree(s, e.Hash)
			if err != nil {
				return fmt.Errorf("tree %s (%s) read failed: %w", e.Hash, p, err)
			}
			if err := flattenInto(s, sub, p, out); err != nil {
				return err
			}
			continue
		}
		out[p] = entry{Hash: e.Hash, Mode: e.Mode}
	}
	return nil
}

// commitTree flattens a commit's tree; a zero commit hash gives the empty tree.
func commitTree(s storer.EncodedObjectStorer, c plumbing.Hash) (flatTree, error) {
	if c.IsZero() {
		return flatTree{}, nil
	}
	co, err := gitobj.Commit(s, c)
	if tl := (*gitobj.TooLargeError)(nil); err != nil && !errors.As(err, &tl) { // the header is enough
		return nil, fmt.Errorf("commit %s read failed: %w", c, err)
	}
	return readFlatTree(s, co.TreeHash)
}

// writeFlatTree stores the nested trees for a flattened tree and returns the
// root tree's hash.
func writeFlatTree(s storer.EncodedObjectStorer, ft flatTree) (plumbing.Hash, error) {
	type dir struct {
		files map[string]entry
		dirs  map[string]*dir
	}
	newDir := func() *dir { return &dir{files: map[string]entry{}, dirs: map[string]*dir{}} }
	root := newDir()
	for p, e := range ft {
		parts := strings.Split(p, "/")
		d := root
		for _, part := range parts[:len(parts)-1] {
			sub, ok := d.dirs[part]
			if !ok {
				sub = newDir()
				d.dirs[part] = sub
			}
			d = sub
		}
		d.files[parts[len(parts)-1]] = e
	}
	var write func(d *dir) (plumbing.Hash, error)
	write = func(d *dir) (plumbing.Hash, error) {
		var entries []object.TreeEntry
		for name, e := range d.files {
			entries = append(entries, object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash})
		}
		for name, sub := range d.dirs {
			h, err := write(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		// Git orders entries by name, comparing a folder's name as if it
		// ended in "/".
		key := func(e object.TreeEntry) string {
			if e.Mode == filemode.Dir {
				return e.Name + "/"
			}
			return e.Name
		}
		sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
		t := &object.Tree{Entries: entries}
		obj := s.NewEncodedObject()
		if err := t.Encode(obj); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("tree encode failed: %w", err)
		}
		return s.SetEncodedObject(obj)
	}
	return write(root)
}

// readBlob returns a blob's content.
func readBlob(s storer.EncodedObjectStorer, h plumbing.Hash) ([]byte, error) {
	data, err := gitobj.Blob(s, h, gitobj.MaxBlobBytes, "")
	if err != nil {
		return nil, fmt.Errorf("blob %s read failed: %w", h, err)
	}
	return data, nil
}

// writeBlob stores content as a blob and returns its hash.
func writeBlob(s storer.EncodedObjectStorer, content []byte) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(content)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("blob write failed: %w", err)
	}
	if _, err := w.Write(content); err != nil {
		_ = w.Close()
		return plumbing.ZeroHash, fmt.Errorf("blob write failed: %w", err)
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("blob write failed: %w", err)
	}
	return s.SetEncodedObject(obj)
}

// changedPaths lists, sorted, the paths whose entry differs between a and b.
func changedPaths(a, b flatTree) []string {
	var out []string
	for p, e := range a {
		if f, ok := b[p]; !ok || f != e {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// headerCommit reads commit h bounded (gitobj.Commit): one past the bound
// comes with its header only and an empty message.
func headerCommit(s storer.EncodedObjectStorer, h plumbing.Hash) (*object.Commit, error) {
	c, err := gitobj.Commit(s, h)
	if tl := (*gitobj.TooLargeError)(nil); errors.As(err, &tl) {
		return c, nil
	}
	return c, err
}
