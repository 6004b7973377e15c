// Package source reads desired state from Git with go-git: it opens a local
// repository or clones a remote one into a cache folder, fetches on demand
// and on an interval, and gives read-only snapshots of a commit's tree.
//
// kdrift compares committed Git, never uncommitted edits: a Snapshot reads a
// commit from the object store and never looks at, or touches, a working tree.
package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/gitfs"
)

// RemoteName is the name of the remote in a cache clone.
const RemoteName = "origin"

// Options says which repository to open and how.
type Options struct {
	// Location is a local path (a working copy, a folder inside one, or a
	// bare repository) or a remote URL: file://, https://, ssh:// or
	// scp-like user@host:path. Empty means the current folder.
	Location string
	// Branch is the branch to read. Default: for a local repository the
	// checked-out branch, for a remote the remote's HEAD branch.
	Branch string
	// CacheDir holds clones of remote repositories, one folder per URL,
	// reused across runs. Default: os.UserCacheDir()/kdrift/repos.
	CacheDir string
	// Auth overrides the credentials taken from the environment (see
	// AuthFromEnv).
	Auth transport.AuthMethod
	// Timeout bounds each clone and fetch (default: EnvGitTimeout, then
	// DefaultGitTimeout; see GitTimeout).
	Timeout time.Duration
	// OnFetch, when set, is told how long each Fetch took and how it
	// ended (nil on success): the controller's metrics.
	OnFetch func(took time.Duration, err error)
	// Clusters are the kubeconfig's contexts with their cluster's server
	// URL, by context name, so that an Argo CD Application's
	// destination.server maps to a context (app.DiscoverOptions.Clusters).
	Clusters map[string]string
	// ClustersErr is why Clusters could not be read, if so.
	ClustersErr error
	// Flux, when it names a cluster folder, limits Flux discovery to it
	// (app.DiscoverOptions.Flux); SetFlux replaces it later.
	Flux *app.FluxCluster
	// DiscoverCacheDir, when set, keeps between processes what discovery
	// rendered to find generated apps (app.ChildCache), in one file per
	// repository there; empty keeps it for the Repo's life only.
	DiscoverCacheDir string
	// FetchFresh, when > 0, skips a Fetch when a fetch of the same
	// remote into the same repository finished less than FetchFresh ago,
	// in this process or another (FetchStampDir); FetchSkipped says so.
	// Zero fetches every time.
	FetchFresh time.Duration
	// FetchStampDir is where the time of each repository's last
	// successful fetch is kept for other processes (default: the user
	// cache folder's kdrift/fetched).
	FetchStampDir string
}

// Repo is an opened repository. Its methods are safe for concurrent use.
type Repo struct {
	location string
	remote   bool
	dir      string
	branch   string
	auth     transport.AuthMethod
	timeout  time.Duration
	usable   bool // the branch can be read, even if the last fetch failed
	// upstream is the remote-tracking ref the desired state is read from
	// (empty: the branch has no upstream, the local branch is the truth);
	// upRemote and upURL name its remote for a local repository's fetch.
	upstream plumbing.ReferenceName
	upRemote string
	upURL    string
	// upBranch is the branch's name where the desired state is read
	// (UpstreamBranch), set once by Open; handles point at it.
	upBranch string
	onFetch  func(time.Duration, error)

	clusters    map[string]string // see Options.Clusters
	clustersErr error
	// flux is the cluster folder discovery follows (see SetFlux); every
	// handle shares it.
	flux *atomic.Pointer[app.FluxCluster]

	// children keeps discovery's renders across handles (see
	// Options.DiscoverCacheDir); made with the first handle.
	childrenOnce sync.Once
	children     *app.ChildCache
	discoverDir  string

	// fresh and stampDir: see Options.FetchFresh; skipped describes the
	// last Fetch when it did not go to the remote (guarded by mu).
	fresh    time.Duration
	stampDir string
	skipped  FetchSkip

	mu      sync.Mutex
	h       *handle // the read handle; replaced after every fetch
	lastErr error   // the last fetch error, nil after a success
	channel string  // the incident channel Watch watches (SetChannel)
	// failSince is when the current run of failed fetches began.
	failSince time.Time

	fetchMu sync.Mutex // one fetch at a time

	refreshMu sync.Mutex
	refresh   chan struct{} // closed and replaced by Refresh

	snapMu sync.Mutex
	snaps  []*Snapshot // the most recent snapshots, newest first
}

// keptSnapshots is how many snapshots a Repo hands out again for the same
// commit, so a reconcile pass over an unchanged head re-reads nothing.
const keptSnapshots = 4

// handle is one go-git repository object with a lock around its object
// store, which go-git does not guard against concurrent readers.
type handle struct {
	mu   sync.Mutex
	repo *git.Repository

	discOnce sync.Once
	disc     *render.Renderer // see discoverRenderer

	clusters    map[string]string // see Options.Clusters
	clustersErr error
	flux        *atomic.Pointer[app.FluxCluster] // see Repo.flux; nil: none
	children    *app.ChildCache                  // see Options.DiscoverCacheDir
	branch      *string                          // see Repo.upBranch; nil: not known
}

// newHandle is a read handle of repo that discovers with r's clusters and
// its cache of discovery's renders.
func (r *Repo) newHandle(repo *git.Repository) *handle {
	r.childrenOnce.Do(func() { r.children = app.NewChildCache(r.discoverDir, r.dir, r.location) })
	return &handle{repo: repo, clusters: r.clusters, clustersErr: r.clustersErr, flux: r.flux, children: r.children, branch: &r.upBranch}
}

// Open opens the repository named by opts.Location. A remote repository is
// cloned into the cache on first use and fetched when the cache exists.
//
// On error the Repo is nil, with one exception: when a cached clone exists
// but the remote cannot be reached, Open returns the usable Repo (reading
// the last fetched revision) together with a *RemoteError; callers that want
// to keep working offline check for a non-nil Repo.
func Open(ctx context.Context, opts Options) (*Repo, error) {
	loc := opts.Location
	if loc == "" {
		loc = "."
	}
	timeout, err := GitTimeout(opts.Timeout, nil)
	if err != nil {
		return nil, err
	}
	r := &Repo{location: loc, timeout: timeout, refresh: make(chan struct{}), onFetch: opts.OnFetch, clusters: opts.Clusters, clustersErr: opts.ClustersErr, flux: &atomic.Pointer[app.FluxCluster]{}, discoverDir: opts.DiscoverCacheDir, fresh: opts.FetchFresh, stampDir: opts.FetchStampDir}
	r.flux.Store(opts.Flux)
	if !isRemote(loc) {
		if err := r.openLocal(opts); err != nil {
			return nil, err
		}
		return r, nil
	}
	err = r.openRemote(ctx, opts)
	if err != nil && !r.usable {
		return nil, err
	}
	return r, err
}

// ClonePath is the folder of the cache clone of a remote repository:
// under cacheDir (default os.UserCacheDir()/kdrift/repos), one per URL. The
// engine reads it and the Git actions commit into it, so a commit an
// action could not push yet is still what the engine reads.
func ClonePath(cacheDir, location string) (string, error) {
	if cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("repository %s: no cache folder: %w; set $XDG_CACHE_HOME or HOME", redact.URL(location), err)
		}
		cacheDir = filepath.Join(base, "kdrift", "repos")
	}
	sum := sha256.Sum256([]byte(location))
	return filepath.Join(cacheDir, hex.EncodeToString(sum[:])[:20]), nil
}

// isRemote says whether loc is a URL (including file://) or scp-like
// address rather than a local path.
func isRemote(loc string) bool {
	if strings.Contains(loc, "://") {
		return true
	}
	if _, err := os.Stat(loc); err == nil {
		return false
	}
	ep, err := transport.NewEndpoint(loc)
	return err == nil && ep.Protocol == "ssh"
}

func (r *Repo) openLocal(opts Options) error {
	abs, err := filepath.Abs(r.location)
	if err != nil {
		return fmt.Errorf("repository %s: %w", r.shown(), err)
	}
	// A bare repository is opened as is; a path inside a working copy finds
	// the enclosing repository.
	repo, err := gitfs.PlainOpen(abs, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = gitfs.PlainOpen(abs, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	}
	if err != nil {
		return fmt.Errorf("repository %s: cannot open: %w; pass --repo with a Git repository path or URL", r.shown(), err)
	}
	r.dir = abs
	if wt, err := repo.Worktree(); err == nil { // a bare repository has none: keep abs
		r.dir = wt.Filesystem.Root()
	}
	r.h = r.newHandle(repo)
	r.branch = opts.Branch
	if r.branch == "" {
		head, err := repo.Reference(plumbing.HEAD, false)
		if err != nil {
			return fmt.Errorf("repository %s: cannot read HEAD: %w", r.shown(), err)
		}
		if head.Type() != plumbing.SymbolicReference || !head.Target().IsBranch() {
			return fmt.Errorf("repository %s: HEAD is detached; pass --branch to say which branch to read", r.shown())
		}
		r.branch = head.Target().Short()
	}
	if _, err := repo.Reference(r.LocalRef(), true); err != nil {
		return fmt.Errorf("repository %s: branch %q: %w", r.shown(), r.branch, err)
	}
	r.upBranch = UpstreamBranch(repo, r.branch)
	return r.findUpstream(repo)
}

func (r *Repo) openRemote(ctx context.Context, opts Options) error {
	r.remote = true
	// A token in the URL is kept in memory only: the clone, its config and
	// every message get the URL without it.
	loc, urlAuth := SplitCredentials(r.location)
	r.location = loc
	auth, err := opts.Auth, error(nil)
	if auth == nil {
		auth = urlAuth
	}
	if auth == nil {
		if auth, err = AuthFromEnv(r.location); err != nil {
			return &RemoteError{Remote: r.location, Op: "authenticate", Err: err}
		}
	}
	r.auth = auth
	if r.dir, err = ClonePath(opts.CacheDir, r.location); err != nil {
		return err
	}
	cache := filepath.Dir(r.dir)

	var fetchErr error
	if _, err := os.Stat(r.dir); err == nil {
		// A controller killed mid-write left its locks in the clone
		// (an emptyDir that outlives the container).
		r.clearStaleLocks()
	}
	repo, err := gitfs.PlainOpen(r.dir, nil)
	switch {
	case errors.Is(err, git.ErrRepositoryNotExists):
		if repo, err = r.clone(ctx, cache); err != nil {
			return err
		}
		r.h = r.newHandle(repo)
		r.stampFetch()
	case err != nil:
		return fmt.Errorf("repository %s: cache %s is damaged: %w; delete that folder and retry", r.shown(), r.dir, err)
	default:
		r.h = r.newHandle(repo)
		fetchErr = r.Fetch(ctx)
	}
	r.branch = opts.Branch
	if r.branch == "" {
		head, err := repo.Reference(plumbing.HEAD, false)
		if err != nil || head.Type() != plumbing.SymbolicReference {
			return errors.Join(fetchErr, fmt.Errorf("repository %s: cannot tell the remote's default branch; pass --branch", r.shown()))
		}
		r.branch = head.Target().Short()
	}
	r.upstream = plumbing.NewRemoteReferenceName(RemoteName, r.branch)
	r.upBranch = r.branch
	if _, err := r.handle().repo.Reference(r.BranchRef(), true); err != nil {
		if fetchErr != nil {
			return fetchErr
		}
		return fmt.Errorf("repository %s: branch %q not found on the remote: %w", r.shown(), r.branch, err)
	}
	r.usable = true
	return fetchErr
}

// clone makes a bare clone in a temporary folder next to the cache entry and
// renames it into place, so an interrupted clone never leaves a broken cache.
func (r *Repo) clone(ctx context.Context, cache string) (*git.Repository, error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, fmt.Errorf("repository %s: cannot create cache folder: %w", r.shown(), err)
	}
	tmp, err := os.MkdirTemp(cache, ".clone-*")
	if err != nil {
		return nil, fmt.Errorf("repository %s: cannot create cache folder: %w", r.shown(), err)
	}
	err = WithTimeout(ctx, r.timeout, "clone", func(ctx context.Context) error {
		_, err := gitfs.PlainCloneBare(ctx, tmp, &git.CloneOptions{
			URL:        r.location,
			Auth:       r.auth,
			RemoteName: RemoteName,
			Tags:       git.NoTags,
		})
		return err
	})
	if err != nil {
		rmErr := os.RemoveAll(tmp)
		return nil, errors.Join(&RemoteError{Remote: r.location, Op: "clone", Err: err}, rmErr)
	}
	if err := os.Rename(tmp, r.dir); err != nil {
		rmErr := os.RemoveAll(tmp)
		// Another kdrift process may have cloned the same URL meanwhile:
		// use its clone.
		repo, openErr := gitfs.PlainOpen(r.dir, nil)
		if openErr == nil {
			return repo, rmErr
		}
		return nil, errors.Join(fmt.Errorf("repository %s: cannot move the clone into %s: %w", r.shown(), r.dir, err), rmErr)
	}
	repo, err := gitfs.PlainOpen(r.dir, nil)
	if err != nil {
		return nil, fmt.Errorf("repository %s: cannot open fresh clone %s: %w", r.shown(), r.dir, err)
	}
	return repo, nil
}

// Location is the path or URL the Repo was opened from, with any password
// or token redacted: it is for showing.
func (r *Repo) Location() string { return r.shown() }

// shown is the location with its credentials redacted, for messages.
func (r *Repo) shown() string { return redact.URL(r.location) }

// IsRemote reports whether the Repo is a cache clone of a remote URL.
func (r *Repo) IsRemote() bool { return r.remote }

// Dir is the repository folder: the working copy for a local repository,
// the bare cache clone for a remote.
func (r *Repo) Dir() string { return r.dir }

// Branch is the branch the Repo reads.
func (r *Repo) Branch() string { return r.branch }

// BranchRef is the reference Head reads: the branch's upstream as last
// fetched (refs/remotes/origin/BRANCH for a remote URL, the configured
// upstream of a local branch), or refs/heads/BRANCH for a local branch
// with no upstream.
func (r *Repo) BranchRef() plumbing.ReferenceName {
	if r.upstream != "" {
		return r.upstream
	}
	return r.LocalRef()
}

// Auth is the credentials used for the remote (nil for local repositories
// and file://), for callers that push.
func (r *Repo) Auth() transport.AuthMethod { return r.auth }

// Git is the underlying go-git repository, for callers that commit and push.
// Reads through it are not serialized with the Repo's own.
func (r *Repo) Git() *git.Repository { return r.handle().repo }

// LastFetchError is the error of the last fetch, nil after a successful one.
// While it is set, Head keeps returning the last fetched revision.
func (r *Repo) LastFetchError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

func (r *Repo) handle() *handle {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h
}
