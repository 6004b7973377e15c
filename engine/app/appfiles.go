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

// blob is file's blob as the tree names it (what idOf says of a read of
// it), "" when the tree does not name one.
func (k *keptAppFiles) blob(file string) string {
	if k == nil {
		return ""
	}
	id, err := k.tree.EntryID(file)
	if err != nil || id == "dir" {
		return ""
	}
	return id
}

// get returns the Apps of file, whose blob is id, when they are kept,
// and records the read as a ReadFile of it would (the app list then
// depends on it).
func (k *keptAppFiles) get(file, id string) ([]App, bool) {
	if id == "" {
		return nil, false
	}
	key := file + "\x00" + id
	c := k.cache
	c.mu.Lock()
	raw, ok := c.appFilesMap()[key]
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
		k.rec.noted(opRead, file, id)
	}
	return apps, true
}

// put keeps the Apps Parse gave for file, whose blob is id, when JSON gives them back
// exactly (the fields JSON leaves out are set only for other tools'
// declarations, never by Parse: the check keeps it so).
func (k *keptAppFiles) put(file, id string, apps []App) {
	if id == "" {
		return
	}
	key := file + "\x00" + id
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
	c.appFilesMap()[key] = raw
	c.usedAppFiles[key] = true
	c.dirty = true
}
