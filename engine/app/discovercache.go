package app

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/privfile"
)

// A ChildCache keeps, for each app discovery rendered to find the
// Applications and Kustomizations it generates (app-of-apps), what that
// render yielded for discovery: the declarations, and the names of the
// Applications and Kustomizations it put out (which decide whether a
// literal document of its inputs is a base). An entry holds the Git tree
// hash of every folder the render read and is used only while each of
// them is the same; anything else renders again. So finding which apps
// exist renders only the generating apps whose own trees changed, not
// every app of the repository.
//
// A ChildCache lives as long as its owner (a Repo: the controller keeps
// it in memory across commits) and, with a file, between processes (the
// one-shot commands). The file is kdrift's own (0600, written
// atomically), read with a size bound; one that cannot be read or decoded
// is an empty cache.
type ChildCache struct {
	file  string
	scope string

	mu      sync.Mutex
	loaded  bool
	entries map[string]childEntry
	// dirs are, by Git tree hash, folders that hold no file mentioning
	// Argo CD or Flux, with what they count against the budgets.
	dirs  map[string]DirSummary
	dirty bool
	// used are the keys this process looked up or stored.
	used     map[string]bool
	usedDirs map[string]bool

	// lists are the app lists Discover found, newest first, kept in a
	// file of their own (listcache.go).
	lists       []listEntry
	listsLoaded bool
	listsDirty  bool
	// listHit says a list was taken from lists.
	listHit bool
	// appFiles are App files parsed without error, by path and blob
	// (appfiles.go), and those used since the last Save.
	appFiles     map[string]json.RawMessage
	usedAppFiles map[string]bool
	// appFileHits counts the App files served from appFiles.
	appFileHits int
	// rawEntries and rawAppFiles are entries and appFiles as the file
	// holds them, until first used (entriesMap, appFilesMap): a kept
	// app list checked against a new commit needs only dirs.
	rawEntries, rawAppFiles json.RawMessage
}

// DirSummary is what discovery's walk counted in one folder, recursively:
// YAML files and their bytes (against the budgets), and whether any of
// them mentions Argo CD or Flux.
type DirSummary struct {
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
	Markers bool  `json:"markers,omitempty"`
}

// childEntry is one parent's render as discovery saw it.
type childEntry struct {
	// Inputs are the folders the render read, with their tree hashes.
	Inputs map[string]string `json:"inputs"`
	// Declarations are the rendered Applications, Kustomizations and
	// GitRepositories, in render order.
	Declarations []childDecl `json:"declarations,omitempty"`
	// Out names the rendered declarations of every tool's kinds, as
	// "KIND/NAMESPACE/NAME" and "KIND//NAME".
	Out []string `json:"out,omitempty"`
}

// childDecl is one rendered declaration and its place (1-based) in the
// render's output.
type childDecl struct {
	Doc    int             `json:"doc"`
	Object json.RawMessage `json:"object"`
}

// childFile is what a ChildCache file holds; its entries (a map of
// childEntry by childKey) and App files (the Apps of App files, by
// "PATH NUL BLOB": appfiles.go) are decoded when first used.
type childFile struct {
	Format   string                `json:"format"`
	Scope    string                `json:"scope"`
	Entries  json.RawMessage       `json:"entries"`
	Dirs     map[string]DirSummary `json:"dirs,omitempty"`
	AppFiles json.RawMessage       `json:"appFiles,omitempty"`
}

// childFormat names the file format; a change makes an old file empty.
const childFormat = "kdrift-discover/3"

// maxChildFile bounds the cache file read and written: past it the
// cache is kept in memory only.
const maxChildFile = 32 << 20

// NewChildCache is a cache kept in memory and, when dir is not empty, in
// one file of dir for the repository clone at repoDir (the repository
// identity repo and the kdrift binary are part of its key: another binary
// renders anew).
func NewChildCache(dir, repoDir, repo string) *ChildCache {
	c := &ChildCache{scope: childFormat + "\x00" + render.BinaryID() + "\x00" + repo, entries: map[string]childEntry{}, dirs: map[string]DirSummary{}, used: map[string]bool{}, usedDirs: map[string]bool{},
		appFiles: map[string]json.RawMessage{}, usedAppFiles: map[string]bool{}}
	if dir != "" && render.BinaryID() != "" {
		sum := sha256.Sum256([]byte(repoDir + "\x00" + repo))
		c.file = filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
	} else {
		c.loaded = true
	}
	return c
}

// childKey identifies a parent's render: its folder and Helm settings.
func childKey(p parent) string {
	h, _ := json.Marshal(p.helm) // plain values: cannot fail
	return p.path + "\x00" + string(h)
}

// load reads the file once. Callers hold c.mu.
func (c *ChildCache) load() {
	if c.loaded {
		return
	}
	c.loaded = true
	data, ok := readCacheFile(c.file, maxChildFile)
	if !ok {
		return
	}
	var cf childFile
	if json.Unmarshal(data, &cf) != nil || cf.Format != childFormat || cf.Scope != c.scope || len(cf.Entries) == 0 || string(cf.Entries) == "null" {
		return
	}
	c.rawEntries, c.rawAppFiles = cf.Entries, cf.AppFiles
	if cf.Dirs != nil {
		c.dirs = cf.Dirs
	}
}

// entriesMap is entries, read from the file the first time. Callers
// hold c.mu.
func (c *ChildCache) entriesMap() map[string]childEntry {
	c.load()
	decodeOnce(&c.rawEntries, c.entries)
	return c.entries
}

// appFilesMap is appFiles, read from the file the first time. Callers
// hold c.mu.
func (c *ChildCache) appFilesMap() map[string]json.RawMessage {
	c.load()
	decodeOnce(&c.rawAppFiles, c.appFiles)
	return c.appFiles
}

// decodeOnce adds to m the map *raw holds, when it holds one, and
// forgets *raw; a part that does not decode adds nothing.
func decodeOnce[V any](raw *json.RawMessage, m map[string]V) {
	if *raw == nil {
		return
	}
	var part map[string]V
	if json.Unmarshal(*raw, &part) == nil {
		for k, v := range part {
			m[k] = v
		}
	}
	*raw = nil
}

// dir is the summary of the folder whose tree hash is hash, when it is
// known to hold no marker.
func (c *ChildCache) dir(hash string) (DirSummary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load()
	s, ok := c.dirs[hash]
	if ok {
		c.usedDirs[hash] = true
	}
	return s, ok && !s.Markers
}

// putDir keeps the summary of a folder with no marker.
func (c *ChildCache) putDir(hash string, s DirSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load()
	if _, ok := c.dirs[hash]; !ok {
		c.dirs[hash] = s
		c.dirty = true
	}
	c.usedDirs[hash] = true
}

// get is the entry of p when every folder it read has the same tree hash
// in tree now.
func (c *ChildCache) get(tree treeHasher, p parent) (childEntry, bool) {
	c.mu.Lock()
	e, ok := c.entriesMap()[childKey(p)]
	c.used[childKey(p)] = true
	c.mu.Unlock()
	if !ok || len(e.Inputs) == 0 {
		return childEntry{}, false
	}
	for dir, hash := range e.Inputs {
		if h, err := tree.TreeHash(dir); err != nil || h != hash {
			return childEntry{}, false
		}
	}
	return e, true
}

// quiet is p's entry brought up to tree without rendering p, when its
// kept render yielded no declaration and the new one cannot yield any
// either (quietRender); the entry is kept with the new tree hashes.
func (c *ChildCache) quiet(tree fs.FS, p parent) (childEntry, bool) {
	qt, ok := tree.(quietTree)
	if !ok || !quietParent(p) {
		return childEntry{}, false
	}
	c.mu.Lock()
	e, ok := c.entriesMap()[childKey(p)]
	c.mu.Unlock()
	if !ok || len(e.Inputs) == 0 || len(e.Declarations) > 0 {
		return childEntry{}, false
	}
	inputs, ok := quietRender(qt, p.path, e.Inputs)
	if !ok {
		return childEntry{}, false
	}
	e = childEntry{Inputs: inputs}
	c.mu.Lock()
	c.entries[childKey(p)] = e
	c.used[childKey(p)] = true
	c.dirty = true
	c.mu.Unlock()
	return e, true
}

// put keeps p's render, which read the folders inputs (by tree hash, ""
// for one that does not exist: then it is not kept) and yielded the
// declarations decls.
func (c *ChildCache) put(p parent, inputs map[string]string, decls []numbered) {
	if len(inputs) == 0 {
		return
	}
	e := childEntry{Inputs: make(map[string]string, len(inputs))}
	for dir, h := range inputs {
		if h == "" {
			return // not a folder of the tree: not kept
		}
		e.Inputs[dir] = h
	}
	for _, n := range decls {
		raw, err := json.Marshal(n.obj.Object)
		if err != nil {
			return
		}
		e.Declarations = append(e.Declarations, childDecl{Doc: n.doc, Object: raw})
		// What dropBases asks of a render: whether it put out a literal
		// declaration of its inputs again, for every kind a tool declares
		// (HelmRelease and ApplicationSet too, not only Application and
		// Kustomization).
		k := n.obj.GetKind()
		e.Out = append(e.Out, k+"/"+n.obj.GetNamespace()+"/"+n.obj.GetName(), k+"//"+n.obj.GetName())
	}
	c.mu.Lock()
	c.entriesMap()[childKey(p)] = e
	c.used[childKey(p)] = true
	c.dirty = true
	c.mu.Unlock()
}

// maxChildEntries bounds what a ChildCache holds in memory (a controller
// meets new tree hashes with every commit): past it, only what was used
// since the last Save stays.
const maxChildEntries = 100_000

// Save writes the file when an entry changed since it was read, keeping
// the entries this process used (the apps of a folder that is gone
// leave); in memory, past maxChildEntries, it keeps only those used since
// the last Save. A failure to write leaves the cache in memory only.
func (c *ChildCache) Save() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries)+len(c.dirs)+len(c.appFiles) > maxChildEntries {
		c.entries, c.dirs, c.appFiles = used(c.entries, c.used), used(c.dirs, c.usedDirs), used(c.appFiles, c.usedAppFiles)
		c.used, c.usedDirs, c.usedAppFiles = map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	c.saveLists()
	if !c.dirty || c.file == "" {
		return
	}
	c.dirty = false
	entries, dirs, appFiles := used(c.entries, c.used), used(c.dirs, c.usedDirs), used(c.appFiles, c.usedAppFiles)
	cf := childFile{Format: childFormat, Scope: c.scope}
	if c.listHit {
		// An app list was taken whole: what it rests on was not looked
		// up, and stays (as the file held it, when not read).
		entries, dirs, appFiles = c.entries, c.dirs, c.appFiles
		cf.Entries, cf.AppFiles = c.rawEntries, c.rawAppFiles
	}
	cf.Dirs = dirs
	var err error
	if cf.Entries == nil {
		if cf.Entries, err = json.Marshal(entries); err != nil {
			return
		}
	}
	if cf.AppFiles == nil {
		if cf.AppFiles, err = json.Marshal(appFiles); err != nil {
			return
		}
	}
	data, err := json.Marshal(cf)
	if err == nil {
		writeCacheFile(c.file, data, maxChildFile)
	}
}

// readCacheFile is what file holds, when this user's alone and at most
// max bytes long.
func readCacheFile(file string, max int) ([]byte, bool) {
	f, err := privfile.Open(file)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	return data, err == nil && len(data) <= max
}

// writeCacheFile writes data to file atomically (0600) when it is at
// most max bytes long; a failure leaves the file as it was.
func writeCacheFile(file string, data []byte, max int) {
	if len(data) > max || os.MkdirAll(filepath.Dir(file), 0o700) != nil {
		return
	}
	_ = privfile.WriteAtomic(file, data)
}

// used is the part of m whose keys are in keys.
func used[V any](m map[string]V, keys map[string]bool) map[string]V {
	out := make(map[string]V, len(keys))
	for k, v := range m {
		if keys[k] {
			out[k] = v
		}
	}
	return out
}

// declarations decodes an entry's declarations, as the render gave
// them (integers stay integers).
func (e childEntry) declarations() []numbered {
	out := make([]numbered, 0, len(e.Declarations))
	for _, d := range e.Declarations {
		o := &unstructured.Unstructured{}
		if o.UnmarshalJSON(d.Object) != nil {
			continue
		}
		out = append(out, numbered{doc: d.Doc, obj: o})
	}
	return out
}

// numbered is a rendered declaration and its place (1-based) in the
// render's output.
type numbered struct {
	doc int
	obj *unstructured.Unstructured
}

// inputs lists an entry's folders, sorted.
func (e childEntry) inputs() []string {
	out := make([]string, 0, len(e.Inputs))
	for dir := range e.Inputs {
		out = append(out, dir)
	}
	sort.Strings(out)
	return out
}

// treeHasher gives the Git tree hash of a folder of the tree
// (source.Snapshot is one).
type treeHasher interface {
	TreeHash(dir string) (string, error)
}
