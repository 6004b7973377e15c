package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/render"
)

// Discovery budgets: a repository is untrusted, so the walk that looks for
// Argo CD and Flux declarations is bounded in files, bytes and rendered
// apps, whatever the repository holds.
const (
	// MaxDiscoverFiles is how many YAML files discovery reads.
	MaxDiscoverFiles = 20_000
	// MaxDiscoverBytes is how many bytes discovery reads in all.
	MaxDiscoverBytes = 256 << 20
	// MaxDiscoverDepth is how deep an app-of-apps chain is followed.
	MaxDiscoverDepth = 5
	// MaxDiscoverRenders is how many apps discovery renders to find the
	// declarations they generate.
	MaxDiscoverRenders = 500
)

// Renderer renders a folder of a repository tree and says which folders
// the render read; *render.Renderer is one.
type Renderer interface {
	RenderApp(ctx context.Context, tree render.Tree, dir string, h *render.Helm) ([]*unstructured.Unstructured, error)
	Inputs(dir string) []string
}

// DiscoverOptions say which repository the tree is and how to render it.
type DiscoverOptions struct {
	// SameRepo reports whether a repository URL an Application or a
	// GitRepository names is this repository (compare normalized URLs).
	// Nil matches nothing: every Argo CD or Flux declaration is then an
	// Error app that names another repository.
	SameRepo func(url string) bool
	// Branch is the branch of this repository kdrift reads, as its
	// upstream names it (main): a Flux GitRepository of this URL whose
	// spec.ref follows another branch, a tag or a commit reads other
	// content and is not this repository. Empty compares URLs alone.
	Branch string
	// Renderer renders apps to find the Applications and Kustomizations
	// they generate (app-of-apps); nil finds literal documents only.
	Renderer Renderer
	// Context bounds the renders; nil means context.Background.
	Context context.Context
	// Clusters are the kubeconfig's contexts with their cluster's server
	// URL, by context name: an Application's destination.server maps to
	// the context whose server it is. Nil maps none.
	Clusters map[string]string
	// ClustersErr is why Clusters is empty when the kubeconfig could not
	// be read; an app that names a server says it.
	ClustersErr error
	// Flux, when it names a cluster folder, limits the Flux declarations
	// to those reachable from that folder (see FluxCluster); nil follows
	// every one of the tree.
	Flux *FluxCluster
	// Children, when set (and fsys gives tree hashes), keeps what each
	// app's render yielded for discovery, by the tree hashes of the
	// folders it read: an app whose folders did not change is not
	// rendered again. Nil renders every built app.
	Children *ChildCache
}

// Discover is Load plus the Argo CD Applications and Flux Kustomizations of
// the repository tree fsys (rooted at the repository root): literal YAML
// documents anywhere in the tree, and the ones an app's render generates
// (app-of-apps), and the Applications Argo CD ApplicationSets generate
// (appset.go), each an App with an Origin. A declaration kdrift cannot
// follow (a source in another repository, a remote chart, a config management
// plugin...) is an Invalid entry that says what is unsupported; nothing is
// dropped silently. Names are metadata.name; when two declarations share
// one, each is named NAMESPACE/NAME (kdrift Apps keep their name).
//
// With Children and a tree that names its Git objects (source.Snapshot),
// the list found is kept with every read that found it, and a later tree
// in which each of them shows the same gets it again (listcache.go).
func Discover(fsys fs.FS, opts DiscoverOptions) LoadResult {
	// One cluster folder, however it is spelled, is one answer and one
	// key of the app list cache.
	opts.Flux = cleanCluster(opts.Flux)
	tree, ok := fsys.(versionedTree)
	if opts.Children == nil || !ok {
		res, _ := discover(fsys, nil, opts)
		return res
	}
	key := listOptsKey(opts)
	if res, ok := opts.Children.list(tree, key, opts.SameRepo); ok {
		return res
	}
	rec := &recorder{tree: tree, same: map[string]bool{}}
	if opts.SameRepo != nil {
		opts.SameRepo = rec.sameRepo(opts.SameRepo)
	}
	res, d := discover(rec, tree, opts)
	if d.limit == "" && d.opts.Context.Err() == nil {
		opts.Children.putList(tree, key, rec, d.files, d.bytes, res)
	}
	return res
}

// discover is Discover without the app list cache: fsys is what it
// reads (a recorder when its reads are recorded) and raw the tree
// itself, or nil when fsys is.
func discover(fsys fs.FS, raw fs.FS, opts DiscoverOptions) (LoadResult, *discovery) {
	res := load(fsys, ".", newKeptAppFiles(fsys, opts.Children))
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	opts.Flux = cleanCluster(opts.Flux)
	d := &discovery{fsys: fsys, raw: raw, opts: opts, repos: map[string]gitRepository{}, inputs: map[string][]string{}}
	d.rec, _ = fsys.(*recorder)
	d.walk()
	for i := range d.found {
		d.found[i].literal = true
	}
	// App-of-apps: render every app whose folder is built (kustomize or a
	// chart) and look for declarations in the output. Plain YAML folders
	// were read by the walk already.
	queue := make([]parent, 0, len(res.Apps)+len(d.found))
	for i := range res.Apps {
		if p, ok := ToolOf(res.Apps[i].Origin).follow(&res.Apps[i], 0); ok {
			queue = append(queue, p)
		}
	}
	for _, f := range d.found {
		if f.app == nil {
			continue
		}
		if p, ok := ToolOf(f.app.Origin).follow(f.app, 1); ok {
			queue = append(queue, p)
		}
	}
	d.renderChildren(queue)
	d.attachChartSources()
	for _, f := range d.found {
		if f.kind == "Kustomization" {
			d.kustomizations++
		}
	}
	d.candidates = d.clusterCandidates()
	d.followCluster()
	d.name(&res)
	d.checkClusterPath(&res)
	res.Flux = d.layout()
	return res, d
}

// parent is an app whose render may generate declarations.
type parent struct {
	name, path string
	helm       *render.Helm
	depth      int
	// flux says the parent is a Flux Kustomization: its plain folder is
	// rendered too when the tree holds HelmReleases, which are taken from
	// what a Kustomization applies only (see declaration).
	flux bool
	// artifact is the ExternalArtifact the parent reads instead of the
	// repository: its files are rebuilt and mounted for its render.
	artifact *Artifact
}

// found is one declaration: its App, or why it cannot be one.
type found struct {
	app     *App
	invalid *Invalid
	// kind, ns and name are the declaration's, for naming and
	// collisions.
	kind, ns, name string
	literal        bool
	// file is the file declaring it literally; from is the path of the
	// app whose render generates it. Set for Flux declarations, which a
	// cluster folder selects by them (followCluster).
	file, from string
}

// gitRepository is a Flux GitRepository document: its URL.
type gitRepository struct {
	url string
	// ref is the branch its spec.ref follows, or "tag NAME", "semver
	// RANGE", "commit SHA", "ref NAME" for a ref that is no branch; ""
	// when it names none (see gitRef).
	ref  string
	file string
	// self says the repository is this one without a URL to compare:
	// the bootstrap GitRepository of a chosen cluster folder.
	self bool
}

type discovery struct {
	fsys fs.FS
	// raw is the tree fsys records the reads of (nil when fsys is not
	// a recorder): the walk's folder hashes and the renders read it
	// directly, and record what they depend on themselves.
	raw   fs.FS
	rec   *recorder
	opts  DiscoverOptions
	found []found
	// repos are the Flux GitRepositories by NAMESPACE/NAME.
	repos map[string]gitRepository
	// inputs are the folders each rendered parent's render read, by the
	// parent's path, whether it was rendered now or taken from Children:
	// what a cluster folder reaches must not depend on the caches.
	inputs map[string][]string
	// patches are the files kustomization files list as patches, by
	// the folder of the kustomization file (fluxpatch.go).
	patches map[string]map[string]bool
	// kustomizations are Flux Kustomizations waiting for their
	// GitRepository, which may come later in the walk.
	pending []pendingKustomization
	files   int
	bytes   int64
	renders int
	// limit is the budget the walk ran into, if any.
	limit string
	// templates are Helm charts' templates folders: not YAML until
	// rendered, so only looked at for markers.
	templates []string
	// markers says some file mentions Argo CD or Flux; without one, no
	// render can yield a declaration and none is rendered.
	markers bool
	// helmReleases says some file mentions a Flux HelmRelease.
	helmReleases bool
	// kustomizations counts the Flux Kustomizations found, candidates
	// are the tree's cluster folders and left counts the declarations a
	// cluster folder left out (see FluxLayout).
	kustomizations, left int
	candidates           []string
	// appsets are the Argo CD ApplicationSets (appset.go).
	appsets *argoState
	// generators are the Flux ArtifactGenerators read (artifact.go).
	generators []pendingGenerator
	// chartSources are the Flux HelmRepositories and OCIRepositories
	// read, by "KIND/NAMESPACE/NAME", each declaration once
	// (fluxsource.go).
	chartSources map[string][]declaredSource
}

// pendingKustomization is a Flux Kustomization read before every
// GitRepository was.
type pendingKustomization struct {
	body              *yaml3.Node
	file              string
	doc, line         int
	generatedBy, from string
	// helm says the document is a HelmRelease.
	helm bool
}

// walk reads every YAML file of the tree outside .git and .kdrift, within
// the budgets, and collects the declarations in them; Helm charts'
// templates (not YAML until rendered) are only looked at for markers. A
// folder that Children knows, by its tree hash, to hold no file that
// mentions Argo CD or Flux is not read again: only its counts go to the
// budgets (when they fit; else it is read, so a budget ends the walk at
// the same file).
func (d *discovery) walk() {
	if _, _, err := d.walkDir("."); err != nil && d.limit == "" {
		d.limit = err.Error()
	}
	d.resolvePending()
}

// walkDir walks folder name as fs.WalkDir would (lexical order, folders
// whose entries cannot be read skipped) and returns what it counted;
// stop is set when a budget ended the walk.
func (d *discovery) walkDir(name string) (sum DirSummary, stop bool, err error) {
	hasher, _ := d.tree().(treeHasher)
	var hash string
	mark := d.rec.mark()
	if d.opts.Children != nil && hasher != nil {
		if h, herr := hasher.TreeHash(name); herr == nil {
			hash = h
			if c, ok := d.opts.Children.dir(hash); ok && d.files+c.Files <= MaxDiscoverFiles && d.bytes+c.Bytes <= MaxDiscoverBytes {
				d.files += c.Files
				d.bytes += c.Bytes
				d.rec.summary(mark, name, hash, c)
				return c, false, nil
			}
		}
	}
	base := path.Base(name)
	if name != "." && (base == ".git" || name == Dir) {
		return sum, false, nil
	}
	if base == "templates" {
		if _, err := fs.Stat(d.fsys, path.Join(path.Dir(name), "Chart.yaml")); err == nil {
			d.templates = append(d.templates, name+"/")
		}
	}
	entries, rerr := fs.ReadDir(d.fsys, name)
	if rerr != nil {
		return sum, false, nil // an unreadable folder holds nothing to discover
	}
	for _, e := range entries {
		child := path.Join(name, e.Name())
		if e.IsDir() {
			c, stop, err := d.walkDir(child)
			sum.Files, sum.Bytes = sum.Files+c.Files, sum.Bytes+c.Bytes
			sum.Markers = sum.Markers || c.Markers
			if stop || err != nil {
				return sum, stop, err
			}
			continue
		}
		files, bytes, markers, stop := d.walkFile(child, e)
		sum.Files, sum.Bytes = sum.Files+files, sum.Bytes+bytes
		sum.Markers = sum.Markers || markers
		if stop {
			return sum, true, nil
		}
	}
	if hash != "" && !sum.Markers {
		d.opts.Children.putDir(hash, sum)
		d.rec.summary(mark, name, hash, sum)
	}
	return sum, false, nil
}

// tree is the tree itself: raw when fsys records reads.
func (d *discovery) tree() fs.FS {
	if d.raw != nil {
		return d.raw
	}
	return d.fsys
}

// walkFile reads one file of the walk: what it adds to the budgets,
// whether it mentions Argo CD or Flux, and whether a budget ended the
// walk.
func (d *discovery) walkFile(name string, e fs.DirEntry) (files int, bytes int64, markers, stop bool) {
	if !e.Type().IsRegular() {
		return 0, 0, false, false
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
	default:
		return 0, 0, false, false
	}
	if d.files++; d.files > MaxDiscoverFiles {
		d.limit = fmt.Sprintf("the repository has more than %d YAML files", MaxDiscoverFiles)
		return 1, 0, false, true
	}
	info, err := e.Info()
	if err != nil || info.Size() > render.DefaultMaxFileBytes {
		return 1, 0, false, false // the render of the app that uses it says so
	}
	if d.bytes += info.Size(); d.bytes > MaxDiscoverBytes {
		d.limit = fmt.Sprintf("the repository's YAML files hold more than %d MiB", MaxDiscoverBytes>>20)
		return 1, info.Size(), false, true
	}
	data, err := fs.ReadFile(d.fsys, name)
	if err != nil || !mayDeclare(data) {
		return 1, info.Size(), false, false
	}
	d.markers = true
	if strings.Contains(string(data), fluxHelmGroup) {
		d.helmReleases = true
	}
	for _, t := range d.templates {
		if strings.HasPrefix(name, t) {
			return 1, info.Size(), true, false
		}
	}
	d.scanFile(name, data)
	render.AfterDecode(len(data))
	return 1, info.Size(), true, false
}

// scanFile looks for declarations in one file. A file that fails the YAML
// guard or does not parse is skipped: it is some app's content, and that
// app's render reports it.
func (d *discovery) scanFile(file string, data []byte) {
	if err := render.CheckYAML(file, data, render.DefaultOptions()); err != nil {
		return
	}
	docs, serr := splitDocuments(data)
	if serr != nil {
		return
	}
	for i, doc := range docs {
		var root yaml3.Node
		if yaml3.Unmarshal(doc.raw, &root) != nil || len(root.Content) == 0 {
			continue
		}
		body := root.Content[0]
		if body.Kind != yaml3.MappingNode {
			continue
		}
		d.declaration(body, file, i+1, doc.line, "", "")
	}
}

// mayDeclare is a cheap test that a file can hold a declaration: it
// holds a registered tool's marker.
func mayDeclare(data []byte) bool {
	s := string(data)
	for _, t := range Tools {
		if m := t.Marker(); m != "" && strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// declaration turns one document into a found declaration when one of
// the registered tools declares with it.
func (d *discovery) declaration(body *yaml3.Node, file string, doc, line int, generatedBy, from string) {
	at := docAt{file: file, doc: doc, line: line, generatedBy: generatedBy, from: from}
	for _, t := range Tools {
		if t.declare(d, body, at) {
			return
		}
	}
}

// resolvePending turns the declarations the tools held back until the
// documents they need were read (GitRepositories, cluster Secrets) into
// apps.
func (d *discovery) resolvePending() {
	for _, t := range Tools {
		t.resolve(d)
	}
}

// renderChildren renders each parent built by kustomize or Helm and adds
// the declarations its output holds that are not literal documents of
// the tree, following chains up to MaxDiscoverDepth.
func (d *discovery) renderChildren(queue []parent) {
	tree, ok := d.tree().(render.Tree)
	if d.opts.Renderer == nil || !ok || !d.markers {
		return
	}
	seen := map[string]bool{}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p.path] || p.depth > MaxDiscoverDepth || !(p.artifact != nil || built(d.fsys, p.path) || (p.flux && d.helmReleases)) {
			continue
		}
		seen[p.path] = true
		if d.renders++; d.renders > MaxDiscoverRenders {
			d.limit = fmt.Sprintf("more than %d apps render further apps", MaxDiscoverRenders)
			return
		}
		inputs, out, decls, ok := d.renderParent(tree, p)
		if !ok {
			continue // the app's own status shows its render error
		}
		d.inputs[p.path] = inputs
		d.dropBases(inputs, out)
		before := len(d.found)
		for _, n := range decls {
			if d.literal(n.obj) {
				continue
			}
			var node yaml3.Node
			if err := node.Encode(n.obj.Object); err != nil {
				continue
			}
			d.declaration(&node, "", n.doc, 0, p.name, p.path)
		}
		d.resolvePending()
		for _, f := range d.found[before:] {
			if f.app == nil {
				continue
			}
			if child, ok := ToolOf(f.app.Origin).follow(f.app, p.depth+1); ok {
				queue = append(queue, child)
			}
		}
	}
}

// renderParent renders p (or takes its render from Children while the
// folders it read are unchanged) and returns the folders it read, the
// names of what it put out (see dropBases) and its declarations; ok is
// false when it does not render.
func (d *discovery) renderParent(tree render.Tree, p parent) (inputs []string, out map[string]bool, decls []numbered, ok bool) {
	raw := d.tree()
	hasher, _ := raw.(treeHasher)
	cache := d.opts.Children
	if cache != nil && hasher != nil {
		e, hit := cache.get(hasher, p)
		if !hit {
			e, hit = cache.quiet(raw, p)
		}
		if hit {
			d.rec.render(p, e.Inputs, len(e.Declarations) == 0)
			out = map[string]bool{}
			for _, k := range e.Out {
				out[k] = true
			}
			return e.inputs(), out, e.declarations(), true
		}
	}
	if p.artifact != nil {
		// Rebuilt from what the recorder reads, so a kept list depends on
		// the files the artifact copies.
		files, id, err := BuildArtifact(d.fsys, p.artifact)
		if err != nil {
			return nil, nil, nil, false // the app's own status says why
		}
		tree = render.Mount(tree, p.artifact.Mount(), files, id)
	}
	objs, err := d.opts.Renderer.RenderApp(d.opts.Context, tree, p.path, p.helm)
	if err != nil {
		// A render may fail for a while (its time budget): a list
		// without what it generates is not kept.
		d.rec.fail()
		return nil, nil, nil, false
	}
	inputs = d.opts.Renderer.Inputs(p.path)
	out = map[string]bool{}
	for i, o := range objs {
		out[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = true
		out[o.GetKind()+"//"+o.GetName()] = true
		if isDeclaration(o) {
			decls = append(decls, numbered{doc: i + 1, obj: o})
		}
	}
	if hasher == nil {
		return inputs, out, decls, true
	}
	// The render read the tree itself: what it read is its inputs, by
	// tree hash ("" for a folder that does not exist).
	hashes := make(map[string]string, len(inputs))
	broken := len(inputs) == 0
	for _, in := range inputs {
		h, err := hasher.TreeHash(in)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			broken = true
		}
		hashes[in] = h
	}
	if d.rec != nil {
		if broken {
			d.rec.fail()
		}
		d.rec.render(p, hashes, len(decls) == 0)
	}
	if cache != nil && !broken {
		cache.put(p, hashes, decls)
	}
	return inputs, out, decls, true
}

// dropBases forgets literal declarations that are inputs of a render (the
// folders in inputs) but do not come out of it as they are (out names
// what it put out, as "KIND/NAMESPACE/NAME" and "KIND//NAME"): a
// kustomize base that the overlay renames or a chart's file is not a
// declaration of its own; what the render yields is.
func (d *discovery) dropBases(folders []string, out map[string]bool) {
	inputs := map[string]bool{}
	for _, in := range folders {
		inputs[in] = true
	}
	kept := d.found[:0]
	for _, f := range d.found {
		file := ""
		if f.app != nil {
			file = f.app.Origin.File
		} else if f.literal {
			file = f.invalid.File
		}
		if f.literal && file != "" && inputs[path.Dir(file)] && !out[f.kind+"/"+f.ns+"/"+f.name] && !out[f.kind+"//"+f.name] {
			continue
		}
		kept = append(kept, f)
	}
	d.found = kept
}

// built reports whether dir is rendered by a builder (a kustomization or a
// chart) rather than read as plain YAML, which the walk saw already.
func built(fsys fs.FS, dir string) bool {
	for _, n := range kustomizationFiles {
		if _, err := fs.Stat(fsys, path.Join(dir, n)); err == nil {
			return true
		}
	}
	_, err := fs.Stat(fsys, path.Join(dir, "Chart.yaml"))
	return err == nil
}

// isDeclaration reports whether a rendered object is a document a
// registered tool reads (Tool.Kinds).
func isDeclaration(o *unstructured.Unstructured) bool {
	return declaresKind(o.GroupVersionKind().GroupKind())
}

// literal reports whether a rendered declaration is one the walk found as
// a document of the tree, unchanged in name and namespace.
func (d *discovery) literal(o *unstructured.Unstructured) bool {
	ns := o.GetNamespace()
	for _, f := range d.found {
		if f.literal && f.name == o.GetName() && (f.ns == ns || ns == "") && f.kind == o.GetKind() {
			return true
		}
	}
	return false
}

// name gives every declaration its App name, adds them to res and sorts
// it again: metadata.name, or NAMESPACE/NAME for every declaration whose
// metadata.name another declaration or a kdrift App shares. Two
// declarations of one NAMESPACE/NAME are both invalid.
func (d *discovery) name(res *LoadResult) {
	count := map[string]int{}
	for _, a := range res.Apps {
		count[a.Metadata.Name]++
	}
	for _, in := range res.Invalid {
		if in.Name != "" {
			count[in.Name]++
		}
	}
	qualified := map[string][]string{}
	for _, f := range d.found {
		count[f.name]++
		q := f.ns + "/" + f.name
		qualified[q] = append(qualified[q], where(f))
	}
	for _, f := range d.found {
		name := f.name
		if count[f.name] > 1 {
			name = f.ns + "/" + f.name
		}
		if places := qualified[f.ns+"/"+f.name]; len(places) > 1 {
			err := &Error{File: where(f), App: name, Field: "metadata.name",
				Problem: fmt.Sprintf("%s is declared %d times (%s)", f.ns+"/"+f.name, len(places), strings.Join(places, ", ")),
				Fix:     d.duplicateFix(f)}
			res.Invalid = append(res.Invalid, Invalid{Name: name, File: where(f), Err: err})
			continue
		}
		if f.invalid != nil {
			in := *f.invalid
			in.Name = name
			var e *Error
			if errors.As(in.Err, &e) {
				e.App = name
			}
			res.Invalid = append(res.Invalid, in)
			continue
		}
		a := *f.app
		a.Metadata.Name = name
		res.Apps = append(res.Apps, a)
	}
	if d.limit != "" {
		res.Invalid = append(res.Invalid, Invalid{File: ".", Err: &Error{File: ".", Problem: "Argo CD and Flux discovery stopped: " + d.limit, Fix: "declare the apps in " + Dir + "/ instead"}})
	}
	sort.SliceStable(res.Apps, func(i, j int) bool { return res.Apps[i].Metadata.Name < res.Apps[j].Metadata.Name })
	sort.SliceStable(res.Invalid, func(i, j int) bool {
		if res.Invalid[i].Name != res.Invalid[j].Name {
			return res.Invalid[i].Name < res.Invalid[j].Name
		}
		return res.Invalid[i].File < res.Invalid[j].File
	})
}

// where is a declaration's file, or the app that generates it.
func where(f found) string {
	if f.app != nil {
		return f.app.Origin.Where()
	}
	return f.invalid.File
}

// scalar is a scalar node's value; "" for anything else.
func scalar(n *yaml3.Node) string {
	if n == nil || n.Kind != yaml3.ScalarNode {
		return ""
	}
	return n.Value
}

// metaOf is a document's metadata.namespace (def when absent) and name.
func metaOf(body *yaml3.Node, def string) (string, string) {
	ns := scalar(lookupPath(body, "metadata.namespace"))
	if ns == "" {
		ns = def
	}
	return ns, scalar(lookupPath(body, "metadata.name"))
}
