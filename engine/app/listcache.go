package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"

	"kdrift.dev/kdrift/engine/render"
)

// The app list cache: what Discover found, kept with every read it made
// of the tree (ARCHITECTURE.md, "The app list cache"). Each read is kept
// as what it showed, by Git object: a file by its blob hash, a folder's
// listing by its entries' names, modes and blob hashes (not what its
// subfolders hold), a folder discovery's walk counted without finding a
// marker by what it counts, a render's inputs by their tree hashes, a
// failed read by its error. A later tree in which every one of them shows
// the same gets the same list without parsing, validating, walking or
// rendering anything.

// versionedTree is a tree that names the Git objects behind its paths
// (source.Snapshot is one): the reads of such a tree can be recorded.
type versionedTree interface {
	fs.FS
	treeHasher
	EntryID(name string) (string, error)
	ListingID(name string) (string, error)
}

// What a recorded read did: the key of a dependency is OP NUL PATH.
const (
	opRead    = "read"
	opStat    = "stat"
	opReadDir = "readdir"
	opOpen    = "open"
	opTree    = "tree"
	// opSum is a folder the walk counted and found no marker in; its
	// value is "TREEHASH FILES BYTES".
	opSum = "sum"
	// opRender is a render of a parent (its path is the parent's key,
	// childKey); its value is a renderDep in JSON.
	opRender = "render"
)

// renderDep is what a recorded render read, and whether a later tree
// may be checked for a quiet render (quiet.go) instead of rendering.
type renderDep struct {
	// Path is the parent's folder.
	Path string `json:"path"`
	// Inputs are the folders the render read, by tree hash ("" for one
	// that did not exist).
	Inputs map[string]string `json:"inputs"`
	// Quiet says the render yielded no declaration and the parent is
	// built by kustomize alone (quietParent).
	Quiet bool `json:"quiet,omitempty"`
}

// recorder is the tree discovery reads while its result is recorded:
// every read goes to the tree, and what it showed is kept.
type recorder struct {
	tree versionedTree

	mu  sync.Mutex
	log []dep
	// same are the answers SameRepo gave, by URL.
	same map[string]bool
	// broken says a read could not be identified or a render failed:
	// the result is not kept.
	broken bool
}

// dep is one recorded read: its key, what it showed, and whether it
// followed a symbolic link (recorder.linked).
type dep struct {
	key, id string
	linked  bool
}

var (
	_ fs.ReadDirFS  = (*recorder)(nil)
	_ fs.ReadFileFS = (*recorder)(nil)
	_ fs.StatFS     = (*recorder)(nil)
	_ render.Tree   = (*recorder)(nil)
)

// Open opens name in the tree, recorded.
func (r *recorder) Open(name string) (fs.File, error) {
	f, err := r.tree.Open(name)
	r.note(opOpen, name, err)
	return f, err
}

// ReadFile reads name from the tree, recorded.
func (r *recorder) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(r.tree, name)
	r.note(opRead, name, err)
	return data, err
}

// ReadDir lists name in the tree, recorded.
func (r *recorder) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(r.tree, name)
	r.note(opReadDir, name, err)
	return entries, err
}

// Stat describes name in the tree, recorded.
func (r *recorder) Stat(name string) (fs.FileInfo, error) {
	fi, err := fs.Stat(r.tree, name)
	r.note(opStat, name, err)
	return fi, err
}

// TreeHash is the tree's, recorded.
func (r *recorder) TreeHash(dir string) (string, error) {
	h, err := r.tree.TreeHash(dir)
	r.note(opTree, dir, err)
	return h, err
}

// note records that op on name showed what it shows now, or failed
// with err.
func (r *recorder) note(op, name string, err error) {
	id := ""
	if err != nil {
		id = "!" + err.Error()
	} else if id, err = idOf(r.tree, op, name); err != nil {
		r.mu.Lock()
		r.broken = true
		r.mu.Unlock()
		return
	}
	r.noted(op, name, id)
}

// noted records that op on name showed id (what idOf says of it).
func (r *recorder) noted(op, name, id string) {
	linked := strings.HasPrefix(id, "!") || r.linked(name)
	r.mu.Lock()
	r.log = append(r.log, dep{key: op + "\x00" + name, id: id, linked: linked})
	r.mu.Unlock()
}

// linked reports whether name's look-up follows a symbolic link in the
// tree, or may (it cannot be resolved): such a read is checked in a
// later tree by reading it again, whatever that tree's changes (see
// affected).
func (r *recorder) linked(name string) bool { return linkedIn(r.tree, name) }

// linkedIn reports whether name's look-up in t follows a symbolic link,
// or may.
func linkedIn(t fs.FS, name string) bool {
	rp, ok := t.(interface{ RealPath(string) (string, error) })
	if !ok {
		return true
	}
	real, err := rp.RealPath(name)
	return err != nil || real != path.Clean(name)
}

// mark is where the log is now; nil records nothing.
func (r *recorder) mark() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.log)
}

// summary replaces what was recorded since mark (the walk of folder dir)
// by dir's count: a later tree needs only to count the same there and
// find no marker.
func (r *recorder) summary(mark int, dir, hash string, s DirSummary) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log[:mark], dep{key: opSum + "\x00" + dir, id: fmt.Sprintf("%s %d %d", hash, s.Files, s.Bytes), linked: r.linked(dir)})
}

// render records that p's render read inputs (folders by tree hash, ""
// for one that did not exist) and yielded no declaration when none is
// set.
func (r *recorder) render(p parent, inputs map[string]string, none bool) {
	if r == nil {
		return
	}
	id, err := json.Marshal(renderDep{Path: p.path, Inputs: inputs, Quiet: none && quietParent(p)})
	if err != nil {
		r.fail()
		return
	}
	folders := make([]string, 0, len(inputs))
	for in := range inputs {
		folders = append(folders, in)
	}
	linked := linkedAny(r.tree, folders)
	r.mu.Lock()
	r.log = append(r.log, dep{key: opRender + "\x00" + childKey(p), id: string(id), linked: linked})
	r.mu.Unlock()
}

// fail says the result must not be kept.
func (r *recorder) fail() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.broken = true
	r.mu.Unlock()
}

// sameRepo is f, its answers recorded.
func (r *recorder) sameRepo(f func(string) bool) func(string) bool {
	return func(u string) bool {
		ok := f(u)
		r.mu.Lock()
		r.same[u] = ok
		r.mu.Unlock()
		return ok
	}
}

// idOf is what op on name shows in t, by Git object.
func idOf(t versionedTree, op, name string) (string, error) {
	switch op {
	case opRead, opStat:
		return t.EntryID(name)
	case opReadDir:
		return t.ListingID(name)
	case opOpen:
		id, err := t.EntryID(name)
		if err != nil || id != "dir" {
			return id, err
		}
		l, err := t.ListingID(name)
		return "dir " + l, err
	case opTree:
		return t.TreeHash(name)
	}
	return "", fmt.Errorf("unknown read %q", op)
}

// failure is the error op on name meets in t, "" when it succeeds.
func failure(t versionedTree, op, name string) string {
	var err error
	switch op {
	case opRead:
		_, err = fs.ReadFile(t, name)
	case opStat:
		_, err = fs.Stat(t, name)
	case opReadDir:
		_, err = fs.ReadDir(t, name)
	case opOpen:
		var f fs.File
		if f, err = t.Open(name); err == nil {
			f.Close()
		}
	case opTree:
		_, err = t.TreeHash(name)
	default:
		return "unknown read"
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// listEntry is one app list and what it was computed from.
type listEntry struct {
	// Root is the tree hash of the repository root it was computed at.
	Root string `json:"root"`
	// Opts identifies the DiscoverOptions (listOptsKey).
	Opts string `json:"opts"`
	// Same are SameRepo's answers, by URL.
	Same map[string]bool `json:"same,omitempty"`
	// Deps are the reads, by OP NUL PATH (a JSON object of strings,
	// decoded only when Root differs).
	Deps json.RawMessage `json:"deps"`
	// Linked are the keys of the reads that followed a symbolic link
	// (recorder.linked).
	Linked []string `json:"linked,omitempty"`
	// Files and Bytes are what the walk counted against its budgets.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Result is the list (listResult).
	Result json.RawMessage `json:"result"`
}

// listResult is a LoadResult as the cache keeps it: with the fields an
// App file never holds, and errors as the *Error values they join.
type listResult struct {
	Apps    []listApp     `json:"apps,omitempty"`
	Invalid []listInvalid `json:"invalid,omitempty"`
	Flux    *FluxLayout   `json:"flux,omitempty"`
}

// listApp is an App with its fields that are not part of the document.
type listApp struct {
	App        App                 `json:"app"`
	File       string              `json:"file,omitempty"`
	Origin     *Origin             `json:"origin,omitempty"`
	Overlay    *render.Overlay     `json:"overlay,omitempty"`
	Chart      *RemoteChart        `json:"chart,omitempty"`
	Artifact   *Artifact           `json:"artifact,omitempty"`
	SkipCRDs   bool                `json:"skipCRDs,omitempty"`
	PostRender []render.PostRender `json:"postRender,omitempty"`
	ValuesFrom []ValuesFrom        `json:"valuesFrom,omitempty"`
}

// listInvalid is an Invalid entry.
type listInvalid struct {
	Name string  `json:"name,omitempty"`
	File string  `json:"file,omitempty"`
	Err  listErr `json:"err"`
}

// listErr is an *Error, or errors joined.
type listErr struct {
	E    *Error    `json:"e,omitempty"`
	Join []listErr `json:"join,omitempty"`
}

// encodeErr is err as the cache keeps it; false when it is another kind
// of error.
func encodeErr(err error) (listErr, bool) {
	switch e := err.(type) {
	case *Error:
		c := *e
		return listErr{E: &c}, e != nil
	case interface{ Unwrap() []error }:
		var out listErr
		for _, x := range e.Unwrap() {
			le, ok := encodeErr(x)
			if !ok {
				return listErr{}, false
			}
			out.Join = append(out.Join, le)
		}
		return out, len(out.Join) > 0
	}
	return listErr{}, false
}

// decode is the error e keeps.
func (e listErr) decode() error {
	if e.E != nil {
		c := *e.E
		return &c
	}
	errs := make([]error, 0, len(e.Join))
	for _, x := range e.Join {
		errs = append(errs, x.decode())
	}
	return errors.Join(errs...)
}

// encodeResult is res as the cache keeps it; false when it would not
// decode to exactly res (then it is not kept).
func encodeResult(res LoadResult) (json.RawMessage, bool) {
	var lr listResult
	for _, a := range res.Apps {
		la := listApp{App: a, File: a.File, Origin: a.Origin, Overlay: a.Spec.Overlay, Chart: a.Spec.Chart, Artifact: a.Spec.Artifact}
		if h := a.Spec.Helm; h != nil {
			la.SkipCRDs, la.PostRender, la.ValuesFrom = h.SkipCRDs, h.PostRender, h.ValuesFrom
		}
		lr.Apps = append(lr.Apps, la)
	}
	for _, in := range res.Invalid {
		le, ok := encodeErr(in.Err)
		if !ok {
			return nil, false
		}
		lr.Invalid = append(lr.Invalid, listInvalid{Name: in.Name, File: in.File, Err: le})
	}
	lr.Flux = res.Flux
	data, err := json.Marshal(lr)
	if err != nil {
		return nil, false
	}
	back, ok := decodeResult(data)
	if !ok || !reflect.DeepEqual(back, res) {
		return nil, false
	}
	return data, true
}

// decodeResult is the LoadResult data keeps.
func decodeResult(data []byte) (LoadResult, bool) {
	var lr listResult
	if json.Unmarshal(data, &lr) != nil {
		return LoadResult{}, false
	}
	var res LoadResult
	for _, la := range lr.Apps {
		a := la.App
		a.File, a.Origin, a.Spec.Overlay, a.Spec.Chart, a.Spec.Artifact = la.File, la.Origin, la.Overlay, la.Chart, la.Artifact
		if a.Spec.Helm != nil {
			a.Spec.Helm.SkipCRDs, a.Spec.Helm.PostRender, a.Spec.Helm.ValuesFrom = la.SkipCRDs, la.PostRender, la.ValuesFrom
		} else if la.SkipCRDs || la.PostRender != nil || la.ValuesFrom != nil {
			return LoadResult{}, false
		}
		res.Apps = append(res.Apps, a)
	}
	for _, li := range lr.Invalid {
		if li.Err.E == nil && len(li.Err.Join) == 0 {
			return LoadResult{}, false
		}
		res.Invalid = append(res.Invalid, Invalid{Name: li.Name, File: li.File, Err: li.Err.decode()})
	}
	res.Flux = lr.Flux
	return res, true
}

// listLogic names the rules discovery finds apps by: a list kept under
// other rules (before patch files were told apart from declarations and
// GitRepositories' refs compared) is not this binary's answer.
const listLogic = 2

// listOptsKey identifies what of opts, besides SameRepo's answers,
// discovery's result depends on, and the rules it ran (listLogic).
func listOptsKey(opts DiscoverOptions) string {
	errText := ""
	if opts.ClustersErr != nil {
		errText = opts.ClustersErr.Error()
	}
	b, err := json.Marshal(struct {
		Clusters    map[string]string
		ClustersErr string
		Flux        *FluxCluster
		Render      bool
		Same        bool
		Branch      string `json:",omitempty"`
		Logic       int
	}{opts.Clusters, errText, opts.Flux, opts.Renderer != nil, opts.SameRepo != nil, opts.Branch, listLogic})
	if err != nil {
		return "" // plain values: cannot fail
	}
	return string(b)
}

// valid reports whether e's list is the list of tree t with options key
// and SameRepo same: each recorded read shows the same in t, the folders
// the walk counted still hold no marker and fit the budgets, and each
// render read the same folders or is still quiet (quietRender). It
// returns the entry as recorded in t: e itself for the same tree, else
// with t's root, counts and what the reads show there. children counts
// folders the walk had not seen.
func (e *listEntry) valid(t versionedTree, key string, same func(string) bool, children *ChildCache) (listEntry, bool) {
	if e.Opts != key {
		return listEntry{}, false
	}
	for u, ok := range e.Same {
		if same == nil || same(u) != ok {
			return listEntry{}, false
		}
	}
	root, err := t.TreeHash(".")
	if err == nil && root == e.Root {
		return *e, true // the same tree: every read shows the same
	}
	var deps map[string]string
	if err != nil || json.Unmarshal(e.Deps, &deps) != nil || deps == nil {
		return listEntry{}, false
	}
	// What changed since e's tree, when the tree can say: a read that
	// followed no symbolic link and met no change shows the same.
	var changed map[string]bool
	if pd, ok := t.(pathDiffer); ok {
		changed, _ = pd.ChangedPaths(e.Root, maxListChanges)
	}
	linked := make(map[string]bool, len(e.Linked))
	for _, k := range e.Linked {
		linked[k] = true
	}
	files, bytes := e.Files, e.Bytes
	// The reads that follow a link in t: those checked here may have
	// become links (one left alone kept its path, and so what it was).
	var links []string
	for _, k := range checkOrder(deps) {
		id := deps[k]
		op, name, ok := strings.Cut(k, "\x00")
		if !ok {
			return listEntry{}, false
		}
		paths, rd, ok := depPaths(op, name, id)
		if !ok {
			return listEntry{}, false
		}
		if changed != nil && !linked[k] && !affected(paths, changed) {
			continue
		}
		if strings.HasPrefix(id, "!") || linkedAny(t, paths) {
			links = append(links, k)
		}
		switch {
		case op == opSum:
			df, db, now, ok := sumDelta(t, name, id, children)
			if !ok {
				return listEntry{}, false
			}
			files, bytes = files+df, bytes+db
			deps[k] = now
		case op == opRender:
			now, ok := renderStill(t, rd, id)
			if !ok {
				return listEntry{}, false
			}
			deps[k] = now
		case strings.HasPrefix(id, "!"):
			if failure(t, op, name) != id[1:] {
				return listEntry{}, false
			}
		default:
			if got, err := idOf(t, op, name); err != nil || got != id {
				return listEntry{}, false
			}
		}
	}
	if files > MaxDiscoverFiles || bytes > MaxDiscoverBytes {
		return listEntry{}, false
	}

	raw, err := json.Marshal(deps)
	if err != nil {
		return listEntry{}, false
	}
	return listEntry{Root: root, Opts: e.Opts, Same: e.Same, Deps: raw, Linked: links, Files: files, Bytes: bytes, Result: e.Result}, true
}

// depPaths is what a read (op on name, recorded as id) depends on: its
// path, or a render's folders (rd, decoded from id); false when id is
// not a render as recorded.
func depPaths(op, name, id string) (paths []string, rd renderDep, ok bool) {
	if op != opRender {
		return []string{name}, rd, true
	}
	if json.Unmarshal([]byte(id), &rd) != nil || len(rd.Inputs) == 0 {
		return nil, rd, false
	}
	for in := range rd.Inputs {
		paths = append(paths, in)
	}
	return paths, rd, true
}

// linkedAny reports whether the look-up of any of paths in t follows a
// symbolic link, or may (linkedIn).
func linkedAny(t fs.FS, paths []string) bool {
	for _, p := range paths {
		if linkedIn(t, p) {
			return true
		}
	}
	return false
}

// pathDiffer is a tree that can list what changed since an earlier root
// tree (source.Snapshot can).
type pathDiffer interface {
	ChangedPaths(since string, max int) (map[string]bool, error)
}

// maxListChanges bounds the changes valid lists; past it every read is
// checked.
const maxListChanges = 2000

// affected reports whether a read of paths (depPaths) that followed no
// symbolic link may show something else after the changes changed lists
// (ChangedPaths: by path, true for an entry added, removed or replaced,
// false for a folder whose contents differ). A folder that holds a
// change is listed itself, so a read of a folder (its listing, its tree
// hash, what the walk counted there, a render's input) is affected when
// its path is listed; a read of a file or a Stat when its own path is;
// any read when a folder on its path was replaced.
func affected(paths []string, changed map[string]bool) bool {
	for _, name := range paths {
		if name == "." || name == "" {
			if len(changed) > 0 {
				return true
			}
			continue
		}
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if changed[dir] {
				return true
			}
		}
		if _, ok := changed[name]; ok {
			return true
		}
	}
	return false
}

// renderStill checks a recorded render (rd, recorded as id) against t:
// it holds when every folder it read has the same tree hash, or when
// the render was quiet and still is. now is the render as recorded in
// t.
func renderStill(t versionedTree, rd renderDep, id string) (now string, ok bool) {
	same := true
	for in, was := range rd.Inputs {
		h, err := t.TreeHash(in)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", false
		}
		if h != was {
			same = false
			break
		}
	}
	if same {
		return id, true
	}
	qt, isQuiet := t.(quietTree)
	if !rd.Quiet || !isQuiet {
		return "", false
	}
	inputs, ok := quietRender(qt, rd.Path, rd.Inputs)
	if !ok {
		return "", false
	}
	rd.Inputs = inputs
	raw, err := json.Marshal(rd)
	return string(raw), err == nil
}

// checkOrder is the order valid checks deps in: a folder's tree hash
// first (one lookup answers for everything under it, and a commit to an
// app's folder shows there at once), the walk's counts last (a changed
// folder is walked again to count it), the rest by name in between.
func checkOrder(deps map[string]string) []string {
	rank := func(k string) int {
		switch op, _, _ := strings.Cut(k, "\x00"); op {
		case opTree:
			return 0
		case opSum, opRender:
			return 2
		}
		return 1
	}
	keys := make([]string, 0, len(deps))
	for k := range deps {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return keys
}

// sumDelta is how much more the walk counts in folder name of t than
// the recorded id ("TREEHASH FILES BYTES") says, and the id recorded in
// t; false when the folder is gone or now holds a marker.
func sumDelta(t versionedTree, name, id string, children *ChildCache) (int, int64, string, bool) {
	var hash string
	var files int
	var bytes int64
	if n, err := fmt.Sscanf(id, "%s %d %d", &hash, &files, &bytes); err != nil || n != 3 {
		return 0, 0, "", false
	}
	h, err := t.TreeHash(name)
	if err != nil {
		return 0, 0, "", false
	}
	if h == hash {
		return 0, 0, id, true
	}
	d := &discovery{fsys: t, opts: DiscoverOptions{Children: children}, repos: map[string]gitRepository{}}
	s, stop, err := d.walkDir(name)
	if stop || err != nil || s.Markers || d.limit != "" {
		return 0, 0, "", false
	}
	return s.Files - files, s.Bytes - bytes, fmt.Sprintf("%s %d %d", h, s.Files, s.Bytes), true
}

// listFormat names the list file's format; a change makes an old file
// empty.
const listFormat = "kdrift-apps/6"

// maxLists is how many app lists a ChildCache keeps (the newest): the
// head, a local commit ahead of it, the channel's.
const maxLists = 4

// maxListFile bounds the list file read and written.
const maxListFile = 32 << 20

// listFile is what the list file holds.
type listFile struct {
	Format string      `json:"format"`
	Scope  string      `json:"scope"`
	Lists  []listEntry `json:"lists"`
}

// loadLists reads the list file once. Callers hold c.mu.
func (c *ChildCache) loadLists() {
	if c.listsLoaded {
		return
	}
	c.listsLoaded = true
	if c.file == "" {
		return
	}
	data, ok := readCacheFile(c.listPath(), maxListFile)
	if !ok {
		return
	}
	var lf listFile
	if json.Unmarshal(data, &lf) != nil || lf.Format != listFormat || lf.Scope != c.scope {
		return
	}
	for _, e := range lf.Lists {
		if len(e.Deps) > 0 && len(c.lists) < maxLists {
			c.lists = append(c.lists, e)
		}
	}
}

// listPath is the list file, beside the cache file.
func (c *ChildCache) listPath() string {
	return strings.TrimSuffix(c.file, ".json") + ".apps.json"
}

// list is the kept app list of tree t when one is still its list.
func (c *ChildCache) list(t versionedTree, key string, same func(string) bool) (LoadResult, bool) {
	c.mu.Lock()
	c.loadLists()
	lists := append([]listEntry(nil), c.lists...)
	c.mu.Unlock()
	root, err := t.TreeHash(".")
	if err != nil {
		return LoadResult{}, false
	}
	// A list of this very tree first: checking another one against it
	// costs reads (a local commit ahead of the head and the head each
	// have theirs).
	slices.SortStableFunc(lists, func(a, b listEntry) int {
		switch {
		case a.Root == root && b.Root != root:
			return -1
		case b.Root == root && a.Root != root:
			return 1
		}
		return 0
	})
	for i := range lists {
		now, ok := lists[i].valid(t, key, same, c)
		if !ok {
			continue
		}
		res, ok := decodeResult(now.Result)
		if !ok {
			continue
		}
		c.mu.Lock()
		c.listHit = true
		if now.Root != lists[i].Root {
			// Kept for t too: the next look-up at t checks nothing.
			c.keepList(now)
		}
		c.mu.Unlock()
		return res, true
	}
	return LoadResult{}, false
}

// putList keeps res, the list of tree t that rec recorded the reads of.
func (c *ChildCache) putList(t versionedTree, key string, rec *recorder, files int, bytes int64, res LoadResult) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.broken {
		return
	}
	root, err := t.TreeHash(".")
	if err != nil {
		return
	}
	data, ok := encodeResult(res)
	if !ok {
		return
	}
	deps := map[string]string{}
	linked := map[string]bool{}
	for _, d := range rec.log {
		deps[d.key] = d.id
		linked[d.key] = linked[d.key] || d.linked
	}
	var links []string
	for k, l := range linked {
		if l {
			links = append(links, k)
		}
	}
	slices.Sort(links)
	raw, err := json.Marshal(deps)
	if err != nil {
		return
	}
	e := listEntry{Root: root, Opts: key, Same: rec.same, Deps: raw, Linked: links, Files: files, Bytes: bytes, Result: data}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadLists()
	c.keepList(e)
}

// keepList puts e first among the kept lists, in place of one of the
// same root and options. Callers hold c.mu, lists loaded.
func (c *ChildCache) keepList(e listEntry) {
	kept := []listEntry{e}
	for _, old := range c.lists {
		if len(kept) < maxLists && !(old.Root == e.Root && old.Opts == e.Opts) {
			kept = append(kept, old)
		}
	}
	c.lists = kept
	c.listsDirty = true
}

// saveLists writes the list file when a list was added. Callers hold
// c.mu.
func (c *ChildCache) saveLists() {
	if !c.listsDirty || c.file == "" {
		return
	}
	c.listsDirty = false
	data, err := json.Marshal(listFile{Format: listFormat, Scope: c.scope, Lists: c.lists})
	if err == nil {
		writeCacheFile(c.listPath(), data, maxListFile)
	}
}
