package app

import (
	"encoding/json"
	"io/fs"
	"reflect"
)

// keptAppFiles serves discovery the Apps of an App file it parsed before
// without error, by the file's path and blob: a commit that changes one
// App file of a repository with hundreds no longer parses every other
// one again (ARCHITECTURE.md, "The app list cache"). Parse is a function
// of the path and the bytes alone, so the same blob at the same path
// gives the same Apps. Only Apps that JSON gives back exactly are kept.
type keptAppFiles struct {
	tree  versionedTree
	rec   *recorder
	cache *ChildCache
}

// newKeptAppFiles is the kept App files of fsys (a versioned tree, or a
// recorder of one) in cache; nil, which keeps nothing, without either.
func newKeptAppFiles(fsys fs.FS, cache *ChildCache) *keptAppFiles {
	if cache == nil {
		return nil
	}
	k := &keptAppFiles{cache: cache}
	switch t := fsys.(type) {
	case *recorder:
		k.rec, k.tree = t, t.tree
	case versionedTree:
		k.tree = t
	default:
		return nil
	}
	return k
}

// key is file's key in the cache: its path and blob; "" when the tree
// does not name the blob.
func (k *keptAppFiles) key(file string) string {
	id, err := k.tree.EntryID(file)
	if err != nil || id == "" || id == "dir" {
		return ""
	}
	return file + "\x00" + id
}

// get returns the Apps of file when its blob's are kept, and records the
// read as a ReadFile of it would (the app list then depends on it).
func (k *keptAppFiles) get(file string) ([]App, bool) {
	if k == nil {
		return nil, false
	}
	key := k.key(file)
	if key == "" {
		return nil, false
	}
	c := k.cache
	c.mu.Lock()
	c.load()
	raw, ok := c.appFiles[key]
	if ok {
		c.usedAppFiles[key] = true
		c.appFileHits++
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	var apps []App
	if json.Unmarshal(raw, &apps) != nil {
		return nil, false
	}
	for i := range apps {
		apps[i].File = file
	}
	if k.rec != nil {
		k.rec.note(opRead, file, nil)
	}
	return apps, true
}

// put keeps the Apps Parse gave for file, when JSON gives them back
// exactly (the fields JSON leaves out are set only for other tools'
// declarations, never by Parse: the check keeps it so).
func (k *keptAppFiles) put(file string, apps []App) {
	if k == nil {
		return
	}
	key := k.key(file)
	if key == "" {
		return
	}
	raw, err := json.Marshal(apps)
	if err != nil {
		return
	}
	var back []App
	if json.Unmarshal(raw, &back) != nil {
		return
	}
	for i := range back {
		back[i].File = file
	}
	if !reflect.DeepEqual(back, apps) {
		return
	}
	c := k.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load()
	c.appFiles[key] = raw
	c.usedAppFiles[key] = true
	c.dirty = true
}
