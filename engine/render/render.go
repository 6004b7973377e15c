// Package render turns an App's folder at one Git revision into Kubernetes
// objects: kustomize (krusty) for folders with a kustomization, plain YAML
// otherwise. It reads from a Tree (a commit snapshot), never from a working
// tree, and caches results by the Git tree hashes of every folder a build
// read. Remote bases are the exception: kustomize clones them with the git
// command, and their builds are cached for a limited time (RemoteTTL).
package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"

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
type Renderer struct {
	// RemoteTTL is how long a build that read a remote base (a URL in
	// resources, cloned by kustomize) stays cached, since no Git tree hash
	// says whether the remote changed; 0 or less never caches such builds.
	// Set it before the first Render. Default DefaultRemoteTTL.
	RemoteTTL time.Duration

	buildMu sync.Mutex // serializes kustomize builds

	mu    sync.Mutex
	keys  *sops.Keyring            // decrypts SOPS files; see SetKeys
	cache map[string][]*cacheEntry // by cleaned App path, newest first
	paths map[string]*sync.Mutex   // one render of a path at a time
	stats Stats
}

// DefaultRemoteTTL is the default Renderer.RemoteTTL.
const DefaultRemoteTTL = 5 * time.Minute

// cacheEntry is one render result and the inputs it came from.
type cacheEntry struct {
	inputs  map[string]string // folder -> tree hash; "" when absent
	expires time.Time         // set when a remote base was read
	objs    []*unstructured.Unstructured
	err     error
	// sealed are SOPS values no identity decrypted, and why.
	sealed map[string]*sops.NoKeyError
	// secrets are the plaintexts decrypted from SOPS files (see Scrub).
	secrets []string
}

// NewRenderer returns a Renderer with an empty cache.
func NewRenderer() *Renderer {
	return &Renderer{RemoteTTL: DefaultRemoteTTL, cache: map[string][]*cacheEntry{}, paths: map[string]*sync.Mutex{}}
}

// Stats returns the counts so far.
func (r *Renderer) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Render renders folder dir (an App's spec.path, relative to the repository
// root) of tree. A folder holding kustomization.yaml, kustomization.yml or
// Kustomization is built with kustomize; any other folder is read as plain
// YAML. Objects come back in a deterministic order (kustomize's legacy
// order, or the kustomization's sortOptions; plain YAML by file path then
// document) and are the caller's to modify. A failure is an *Error.
func (r *Renderer) Render(tree Tree, dir string) ([]*unstructured.Unstructured, error) {
	clean := path.Clean(strings.TrimPrefix(dir, "./"))
	if !fs.ValidPath(clean) {
		return nil, &Error{Path: dir, Err: fmt.Errorf("path %q is not a folder inside the repository", dir)}
	}
	// Two renders of one path wait for each other, so the second finds the
	// first one's result in the cache instead of building it again.
	r.mu.Lock()
	pathMu, ok := r.paths[clean]
	if !ok {
		pathMu = &sync.Mutex{}
		r.paths[clean] = pathMu
	}
	r.mu.Unlock()
	pathMu.Lock()
	defer pathMu.Unlock()
	if e := r.lookup(tree, clean); e != nil {
		return copyObjects(e.objs), e.err
	}
	e := r.build(tree, clean)
	r.mu.Lock()
	r.stats.Builds++
	if e.inputs != nil {
		list := append([]*cacheEntry{e}, r.cache[clean]...)
		if len(list) > DefaultCacheVersions {
			list = list[:DefaultCacheVersions]
		}
		r.cache[clean] = list
	}
	r.mu.Unlock()
	return copyObjects(e.objs), e.err
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
	entries := r.cache[clean]
	if len(entries) == 0 {
		return nil
	}
	out := make([]string, 0, len(entries[0].inputs))
	for d := range entries[0].inputs {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// lookup returns a cache entry whose inputs all have the same tree hash in
// tree, or nil.
func (r *Renderer) lookup(tree Tree, dir string) *cacheEntry {
	r.mu.Lock()
	entries := append([]*cacheEntry(nil), r.cache[dir]...)
	r.mu.Unlock()
	now := time.Now()
	for _, e := range entries {
		if !e.expires.IsZero() && now.After(e.expires) {
			continue
		}
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
// must not be cached (the tree could not be read).
func (r *Renderer) build(tree Tree, dir string) *cacheEntry {
	kfile, err := kustomizationFile(tree, dir)
	if err != nil {
		return &cacheEntry{err: &Error{Path: dir, Err: err}}
	}
	if kfile == "" {
		hash, err := tree.TreeHash(dir)
		if err != nil {
			return &cacheEntry{err: &Error{Path: dir, Err: fmt.Errorf("folder does not exist in this revision: %w", err)}}
		}
		sr := r.newSOPSReader()
		objs, err := readPlain(tree, dir, sr)
		if err != nil {
			err = &Error{Path: dir, Err: sr.scrub(err)}
		}
		return &cacheEntry{inputs: map[string]string{dir: hash}, objs: objs, err: err, sealed: sr.undecrypted(), secrets: sr.secrets()}
	}
	return r.kustomize(tree, dir)
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
