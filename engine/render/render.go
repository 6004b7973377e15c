// Package render turns an App's folder at one Git revision into Kubernetes
// objects: kustomize (krusty) for folders with a kustomization, the Helm
// v4 library for chart folders (and a kustomization's helmCharts), plain
// YAML otherwise. It reads from a Tree (a commit snapshot), never from a
// working tree or the local disk, and caches results by the Git tree
// hashes of every folder a build read.
//
// It must never run a program, open a connection or read outside the
// tree: remote bases, remote files, exec and KRM function plugins and
// charts from chart repositories are refused before kustomize or Helm
// sees them, charts render offline with no cluster, and every render
// stays within the budgets of Options.
package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"

	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/sops"
)

// Tree is a read-only repository tree at one commit, rooted at the
// repository root; *source.Snapshot is one.
type Tree interface {
	fs.FS
	// TreeHash is the Git tree hash of folder dir; a missing folder is an
	// error wrapping fs.ErrNotExist.
	TreeHash(dir string) (string, error)
}

// Error is a failed render: the App path and the renderer's own message
// (kustomize's, or the file and document of a broken plain YAML file).
type Error struct {
	// Path is the App's spec.path.
	Path string
	// Err is the underlying error.
	Err error
}

// Error renders `PATH: MESSAGE`.
func (e *Error) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Stats counts what a Renderer did, for tests, benchmarks and metrics.
type Stats struct {
	// Builds is how many renders ran (kustomize or plain YAML).
	Builds int
	// Hits is how many renders were answered from the cache.
	Hits int
	// DiskHits is how many renders were answered from the disk cache (a
	// render of an earlier process; see SetDiskCache).
	DiskHits int
}

// DefaultCacheVersions is how many results per path a Renderer keeps: the
// current revision and the one before, so that comparing the two (a
// rollback preview) stays cached while memory stays bounded.
const DefaultCacheVersions = 2

// Renderer renders App folders, caching each result by the App path and
// the tree hashes of every folder the build read: an unchanged input is
// never rendered twice, and a change anywhere a build looked (an overlay's
// ../../base) renders again. It is safe for concurrent use; kustomize
// builds run one at a time because kustomize keeps global state.
//
// A repository is untrusted: a render reads nothing but the tree, runs no
// program and opens no connection (see CheckYAML and RefusedError), and
// stays within Options; a panic in it is that render's error.
type Renderer struct {
	// Options are the budgets of every render. Set them before the first
	// Render; zero fields take the defaults of DefaultOptions.
	Options Options

	kbuild chan struct{} // holds a token while an in-process build runs

	// inProcess builds kustomizations, renders charts and evaluates
	// Jsonnet in this process instead of a render worker: for the
	// benchmarks that measure the worker's cost.
	inProcess bool
	// noGuard skips the guard of kustomizations, so that a test proves
	// the render worker holds on its own.
	noGuard bool
	// testHook names, per App folder, the misbehaviour a test binary's
	// worker shows before it builds (see sandbox.Limits.TestHook).
	testHook func(dir string) string
	warm     sync.Once // Warm's build

	mu   sync.Mutex
	keys *sops.Keyring // decrypts SOPS files; see SetKeys
	// appKeys are keyrings scoped to App folders; see SetAppKeys.
	appKeys map[string]*sops.Keyring
	cache   map[string][]*cacheEntry // by cleaned App path, newest first
	disk    *diskCache               // see SetDiskCache; nil: memory only
	paths   map[string]chan struct{} // one render of a path at a time
	stats   Stats
}

// cacheEntry is one render result and the inputs it came from.
type cacheEntry struct {
	inputs map[string]string // folder -> tree hash; "" when absent
	objs   []*unstructured.Unstructured
	err    error
	// sealed are SOPS values no identity decrypted, and why.
	sealed map[string]*sops.NoKeyError
	// secrets are the plaintexts decrypted from SOPS files (see Scrub).
	secrets []string
}

// NewRenderer returns a Renderer with an empty cache and the default
// budgets.
func NewRenderer() *Renderer {
	return &Renderer{Options: DefaultOptions(), kbuild: make(chan struct{}, 1), cache: map[string][]*cacheEntry{}, paths: map[string]chan struct{}{}}
}

// Stats returns the counts so far.
func (r *Renderer) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Render is RenderContext without a context of the caller's: the render
// still ends at Options.Timeout.
func (r *Renderer) Render(tree Tree, dir string) ([]*unstructured.Unstructured, error) {
	return r.RenderContext(context.Background(), tree, dir)
}

// RenderContext renders folder dir (an App's spec.path, relative to the
// repository root) of tree. A folder holding kustomization.yaml,
// kustomization.yml or Kustomization is built with kustomize; any other
// folder is read as plain YAML. Objects come back in a deterministic order
// (kustomize's legacy order, or the kustomization's sortOptions; plain
// YAML by file path then document) and are the caller's to modify. A
// failure is an *Error; it wraps a *RefusedError for an entry kdrift will
// not render, a *LimitError for a budget, a *PanicError for a panic.
//
// The render runs in a goroutine of its own: when ctx ends or
// Options.Timeout passes, RenderContext returns at once and the build is
// abandoned (it stops at its next read; its result is never cached).
func (r *Renderer) RenderContext(ctx context.Context, tree Tree, dir string) ([]*unstructured.Unstructured, error) {
	return r.RenderApp(ctx, tree, dir, nil)
}

// RenderApp is RenderContext for an App: a folder holding Chart.yaml (and
// no kustomization) is rendered as a Helm chart with h (nil: the chart's
// own values, released under the folder's name in "default"). Results
// are cached by folder and h.
func (r *Renderer) RenderApp(ctx context.Context, tree Tree, dir string, h *Helm) ([]*unstructured.Unstructured, error) {
	return r.renderApp(ctx, tree, dir, h, copyObjects)
}

// RenderAppShared is RenderApp without the copy: the objects are the
// cache's own, shared with every other caller, so they are read-only.
// A caller that must change one changes a copy (apply.CopyMetadata).
func (r *Renderer) RenderAppShared(ctx context.Context, tree Tree, dir string, h *Helm) ([]*unstructured.Unstructured, error) {
	return r.renderApp(ctx, tree, dir, h, slices.Clone[[]*unstructured.Unstructured])
}

// renderApp is RenderApp, handing the cached objects out through give.
func (r *Renderer) renderApp(ctx context.Context, tree Tree, dir string, h *Helm, give func([]*unstructured.Unstructured) []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	clean := path.Clean(strings.TrimPrefix(dir, "./"))
	if !fs.ValidPath(clean) {
		return nil, &Error{Path: dir, Err: fmt.Errorf("path %q is not a folder inside the repository", dir)}
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Path: dir, Err: context.Cause(ctx)}
	}
	opts := r.Options.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout,
		limitf("", "time", "the render took longer than %s", opts.Timeout))
	defer cancel()
	key := clean
	if hk := h.key(); hk != "" {
		key = clean + "\x00" + hk
	}
	// Two renders of one path wait for each other, so the second finds the
	// first one's result in the cache instead of building it again.
	r.mu.Lock()
	pathSem, ok := r.paths[key]
	if !ok {
		pathSem = make(chan struct{}, 1)
		r.paths[key] = pathSem
	}
	r.mu.Unlock()
	if err := acquire(ctx, pathSem, "another render of "+clean); err != nil {
		return nil, &Error{Path: dir, Err: err}
	}
	if e := r.lookup(tree, key); e != nil {
		<-pathSem
		return give(e.objs), e.err
	}
	r.mu.Lock()
	disk := r.disk
	r.mu.Unlock()
	if h != nil && h.Sensitive {
		// Its values hold what a Secret gave: never on disk.
		disk = nil
	}
	if disk != nil {
		if e := disk.load(tree, key, opts); e != nil {
			r.mu.Lock()
			r.stats.DiskHits++
			r.mu.Unlock()
			r.keep(key, e)
			<-pathSem
			return give(e.objs), nil
		}
	}
	done := make(chan *cacheEntry, 1)
	go func() {
		defer func() { <-pathSem }()
		e := r.buildSafe(ctx, tree, clean, opts, h)
		r.store(key, e)
		if disk != nil && ctx.Err() == nil {
			disk.store(key, opts, e)
		}
		done <- e
	}()
	select {
	case e := <-done:
		return give(e.objs), e.err
	case <-ctx.Done():
		return nil, &Error{Path: dir, Err: context.Cause(ctx)}
	}
}

// acquire takes sem's token, or gives up when ctx ends, naming what it
// waited for.
func acquire(ctx context.Context, sem chan struct{}, what string) error {
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waited for %s, which is still running: %w", what, context.Cause(ctx))
	}
}

// store counts a build and caches its result when it may be reused.
func (r *Renderer) store(dir string, e *cacheEntry) {
	r.mu.Lock()
	r.stats.Builds++
	r.mu.Unlock()
	r.keep(dir, e)
}

// keep caches e in memory when it may be reused.
func (r *Renderer) keep(dir string, e *cacheEntry) {
	if e.inputs == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list := append([]*cacheEntry{e}, r.cache[dir]...)
	if len(list) > DefaultCacheVersions {
		list = list[:DefaultCacheVersions]
	}
	r.cache[dir] = list
}

// buildSafe is build with any panic turned into this render's error.
func (r *Renderer) buildSafe(ctx context.Context, tree Tree, dir string, opts Options, h *Helm) (e *cacheEntry) {
	defer func() {
		if p := recover(); p != nil {
			e = &cacheEntry{err: &Error{Path: dir, Err: &PanicError{Value: p, Stack: debug.Stack()}}}
		}
	}()
	return r.build(ctx, tree, dir, opts, h)
}

// Inputs lists the folders the newest cached render of dir read (an
// overlay's own folder and its bases, components, patches' folders), sorted;
// nil when dir was not rendered yet. A commit that changes none of them
// cannot change what dir renders: it is how an app's history finds the
// commits to its bases too.
func (r *Renderer) Inputs(dir string) []string {
	clean := path.Clean(strings.TrimPrefix(dir, "./"))
	r.mu.Lock()
	defer r.mu.Unlock()
	// A chart rendered with several value sets has an entry for each.
	var out []string
	for key, entries := range r.cache {
		if len(entries) == 0 || (key != clean && !strings.HasPrefix(key, clean+"\x00")) {
			continue
		}
		for d := range entries[0].inputs {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// SameRender reports whether dir renders from after exactly as it does
// from before: its render from before succeeded (rendered now, or found
// in the caches) and every folder that render read has the same tree hash
// in after. A caller that would render both to compare them can skip
// both.
func (r *Renderer) SameRender(ctx context.Context, before, after Tree, dir string, h *Helm) bool {
	if _, err := r.RenderApp(ctx, before, dir, h); err != nil {
		return false
	}
	key := path.Clean(strings.TrimPrefix(dir, "./"))
	if hk := h.key(); hk != "" {
		key = key + "\x00" + hk
	}
	e := r.lookup(before, key)
	return e != nil && e.err == nil && e.inputs != nil && sameInputs(after, e.inputs)
}

// lookup returns a cache entry whose inputs all have the same tree hash in
// tree, or nil.
func (r *Renderer) lookup(tree Tree, dir string) *cacheEntry {
	r.mu.Lock()
	entries := append([]*cacheEntry(nil), r.cache[dir]...)
	r.mu.Unlock()
	for _, e := range entries {
		if sameInputs(tree, e.inputs) {
			r.mu.Lock()
			r.stats.Hits++
			r.mu.Unlock()
			return e
		}
	}
	return nil
}

func sameInputs(tree Tree, inputs map[string]string) bool {
	for dir, want := range inputs {
		got, err := tree.TreeHash(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
		if got != want {
			return false
		}
	}
	return true
}

// build renders dir and records its inputs; inputs is nil when the result
// must not be cached (the tree could not be read, a budget was hit).
func (r *Renderer) build(ctx context.Context, tree Tree, dir string, opts Options, h *Helm) *cacheEntry {
	kfile, err := kustomizationFile(tree, dir)
	if err != nil {
		return &cacheEntry{err: &Error{Path: dir, Err: err}}
	}
	var ov *Overlay
	if h != nil {
		ov = h.Overlay
	}
	if kfile == "" && IsChart(tree, dir) && ov == nil {
		return r.helm(ctx, tree, dir, opts, h)
	}
	if kfile == "" && ov == nil {
		hash, err := tree.TreeHash(dir)
		if err != nil {
			return &cacheEntry{err: &Error{Path: dir, Err: fmt.Errorf("folder does not exist in this revision: %w", err)}}
		}
		secrets := &redact.Secrets{}
		fsys := newTreeFS(ctx, tree, opts, secrets)
		fsys.sops = r.newSOPSReader(dir)
		r.sandboxFS(fsys, dir)
		var d *Directory
		if h != nil {
			d = h.Directory
		}
		objs, err := readPlain(fsys, dir, d)
		if err == nil {
			err = checkOutput(objs, opts)
		}
		// Jsonnet imports may read other folders (directory.jsonnet.libs).
		inputs := fsys.inputs()
		inputs[dir] = hash
		e := &cacheEntry{inputs: inputs, objs: objs, sealed: fsys.sops.undecrypted(), secrets: fsys.sops.secrets()}
		if err != nil {
			e.objs, e.err = nil, &Error{Path: dir, Err: scrubbed(fsys.sops.scrub(err), secrets)}
		}
		if fsys.failed() {
			e.inputs = nil
		}
		return e
	}
	return r.kustomize(ctx, tree, dir, opts, ov)
}

// kustomizationFile returns the name of dir's kustomization file, or "".
func kustomizationFile(tree Tree, dir string) (string, error) {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		st, err := fs.Stat(tree, path.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if !st.IsDir() {
			return name, nil
		}
	}
	return "", nil
}

func copyObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if objs == nil {
		return nil
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}
