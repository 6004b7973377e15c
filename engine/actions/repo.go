package actions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gitfs"
)

// RepoOptions says which repository and branch to act on, and as whom.
type RepoOptions struct {
	// Repo is a local path or a URL. Empty means the repository enclosing
	// the current folder. For a URL kdrift works in a cache clone under
	// os.UserCacheDir()/kdrift/repos.
	Repo string
	// Branch to commit to; empty means the checked-out branch (or the
	// remote's default branch for a URL).
	Branch string
	// Author is "Name <email>"; empty means KDRIFT_AUTHOR, then the
	// repository's git config user.name and user.email.
	Author string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Now gives the time; nil means time.Now.
	Now func() time.Time
	// MaxPushTries bounds fetch-reapply-push rounds after a rejected push;
	// 0 means 5.
	MaxPushTries int
	// CacheDir overrides the folder that holds cache clones of URLs; empty
	// means os.UserCacheDir()/kdrift/repos.
	CacheDir string
	// GitTimeout bounds each fetch, push and clone; 0 means
	// $KDRIFT_GIT_TIMEOUT, then 30s (source.GitTimeout). A timed-out push
	// leaves the commit local and says so.
	GitTimeout time.Duration
	// Propose, when set (the upstream branch is known to be protected),
	// makes a committing action leave its commit local without trying to
	// push it to the upstream branch: the caller proposes it on a branch
	// of its own (Repo.Propose).
	Propose bool
	// ClusterPath is the Flux cluster folder discovery follows, as the
	// engine's (engine.Options.ClusterPath): with it, a Kustomization
	// declared in every cluster folder names the one of that folder.
	ClusterPath string
	// DiscoverCacheDir, when set, keeps between processes what finding
	// the Argo CD and Flux apps walked and rendered (app.ChildCache), as
	// the engine's one-shot commands do: an action that reads the apps
	// (a freeze, an ignore) then reads again only the folders that
	// changed. Empty reads every folder each time.
	DiscoverCacheDir string
	// Resolved, when set, is how the engine (`status`) found the apps:
	// actions then find them the same way (AppResolution).
	Resolved *AppResolution
}

// AppResolution is what the engine knows about which apps exist beyond
// Git alone, so that an action takes every app `status` lists.
type AppResolution struct {
	// Flux is the Flux cluster folder discovery follows, as the engine
	// chose it (from the live bootstrap Kustomization); nil when none.
	Flux *app.FluxCluster
	// Live are the apps only live objects declare (an Argo CD
	// Application or Flux Kustomization in no file of the repository):
	// an action on one is refused, saying why, never "not found".
	Live []app.App
}

// Repo is an opened repository and branch that actions commit to.
type Repo struct {
	git      *git.Repository
	opts     RepoOptions
	branch   string
	location string // the path or URL the person gave, for messages
	cache    bool   // a cache clone of a URL
	// dir is a local repository's folder: its working tree's root, or
	// the bare repository's absolute path.
	dir string
	// urlAuth are the credentials the URL given held, if any: they are
	// sent with each fetch and push and never written to disk.
	urlAuth transport.AuthMethod
	// heldIndex is index.lock taken ahead of a commit that lost a race
	// with a git command in this clone (see commit); advance uses it.
	// Guarded by mu.
	heldIndex *indexLock
	// beforePush, when set (by tests), runs just before each push so a
	// race with another writer can be staged deterministically.
	beforePush func()
	// crashPoint, when set (by tests), runs at each step of a commit
	// into the working tree, so a kill there can be staged.
	crashPoint func(step string)
	// mu serializes this Repo's operations: the UI may run them from
	// several goroutines.
	mu sync.Mutex
	// children is discoverCache's, made once.
	childrenOnce sync.Once
	children     *app.ChildCache
}

// Open opens the repository named by opts (cloning a URL into the cache on
// first use) and settles the branch.
func Open(ctx context.Context, opts RepoOptions) (*Repo, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxPushTries <= 0 {
		opts.MaxPushTries = 5
	}
	timeout, err := source.GitTimeout(opts.GitTimeout, opts.Getenv)
	if err != nil {
		return nil, err
	}
	opts.GitTimeout = timeout
	r := &Repo{opts: opts, location: redact.URL(opts.Repo)}
	if isURL(opts.Repo) {
		// A token in the URL stays in memory (urlAuth), never in the
		// cache clone's config.
		opts.Repo, r.urlAuth = source.SplitCredentials(opts.Repo)
		r.opts.Repo = opts.Repo
		r.cache = true
		r.git, err = openCache(ctx, opts, r.urlAuth)
	} else {
		p := opts.Repo
		if p == "" {
			if p, err = os.Getwd(); err != nil {
				return nil, fmt.Errorf("repository: cannot read the current folder: %w", err)
			}
			r.location = p
		}
		r.git, err = gitfs.PlainOpen(p, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return nil, fmt.Errorf("repository %s: not a Git repository (or any parent up to /); pass --repo PATH or URL", p)
		}
		if err == nil {
			r.dir = p
			if wt, wtErr := r.git.Worktree(); wtErr == nil { // a bare repository has none
				r.dir = wt.Filesystem.Root()
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("repository %s: open failed: %w", r.location, err)
	}
	r.branch = opts.Branch
	if r.branch == "" {
		head, err := r.git.Storer.Reference(plumbing.HEAD)
		if err != nil {
			return nil, fmt.Errorf("repository %s: cannot read HEAD: %w", r.location, err)
		}
		if head.Type() != plumbing.SymbolicReference || !head.Target().IsBranch() {
			return nil, fmt.Errorf("repository %s: HEAD is detached; check out a branch or pass --branch", r.location)
		}
		r.branch = head.Target().Short()
	}
	if r.cache {
		if err := r.ensureCacheBranch(); err != nil {
			return nil, err
		}
	}
	if _, err := r.head(); err != nil {
		return nil, err
	}
	if err := r.recoverAdvance(); err != nil {
		return nil, err
	}
	return r, nil
}

// Branch is the branch actions commit to.
func (r *Repo) Branch() string { return r.branch }

// Git is the underlying go-git repository, for readers such as the UI.
func (r *Repo) Git() *git.Repository { return r.git }

func isURL(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	// scp-like ssh: user@host:path
	if i := strings.Index(s, ":"); i > 0 && strings.Contains(s[:i], "@") && !strings.Contains(s[:i], "/") {
		return true
	}
	return false
}

func openCache(ctx context.Context, opts RepoOptions, urlAuth transport.AuthMethod) (*git.Repository, error) {
	// The engine's own clone: what an action commits and cannot push yet
	// is what the engine reads (source.Repo.Head).
	dir, err := source.ClonePath(opts.CacheDir, opts.Repo)
	if err != nil {
		return nil, err
	}
	if g, err := gitfs.PlainOpen(dir, nil); err == nil {
		return g, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("cache folder %s: %w", dir, err)
	}
	auth, err := authFor(opts.Repo, opts.Getenv)
	if err != nil {
		return nil, err
	}
	if urlAuth != nil {
		auth = urlAuth
	}
	co := &git.CloneOptions{URL: opts.Repo, Auth: auth}
	if opts.Branch != "" {
		co.ReferenceName = plumbing.NewBranchReferenceName(opts.Branch)
	}
	var g *git.Repository
	err = source.WithTimeout(ctx, opts.GitTimeout, "clone", func(ctx context.Context) error {
		var err error
		g, err = gitfs.PlainCloneBare(ctx, dir, co)
		return err
	})
	if err != nil {
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			return nil, fmt.Errorf("clone failed: %w (and removing the partial clone %s failed: %v)", err, dir, rmErr)
		}
		return nil, fmt.Errorf("clone failed: %w", err)
	}
	return g, nil
}

// ensureCacheBranch makes the cache clone's branch exist and track origin.
func (r *Repo) ensureCacheBranch() error {
	cfg, err := r.git.Config()
	if err != nil {
		return fmt.Errorf("repository %s: config read failed: %w", r.location, err)
	}
	if b, ok := cfg.Branches[r.branch]; ok && b.Remote != "" {
		return nil
	}
	cfg.Branches[r.branch] = &config.Branch{Name: r.branch, Remote: git.DefaultRemoteName, Merge: plumbing.NewBranchReferenceName(r.branch)}
	if err := r.git.SetConfig(cfg); err != nil {
		return fmt.Errorf("repository %s: config write failed: %w", r.location, err)
	}
	local := plumbing.NewBranchReferenceName(r.branch)
	if _, err := r.git.Storer.Reference(local); err == nil {
		return nil
	}
	remoteRef := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, r.branch)
	ref, err := r.git.Storer.Reference(remoteRef)
	if err != nil {
		return fmt.Errorf("branch %s: not found on %s: %w", r.branch, r.location, err)
	}
	return r.git.Storer.SetReference(plumbing.NewHashReference(local, ref.Hash()))
}

// head is the branch's current commit.
func (r *Repo) head() (plumbing.Hash, error) {
	ref, err := r.git.Storer.Reference(plumbing.NewBranchReferenceName(r.branch))
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("branch %s in %s: cannot read it (%v); it needs at least one commit", r.branch, r.location, err)
	}
	return ref.Hash(), nil
}

// upstream is the remote and the remote's branch the branch tracks; ok is
// false when it tracks none.
func (r *Repo) upstream() (remote string, branch plumbing.ReferenceName, ok bool, err error) {
	cfg, err := r.git.Config()
	if err != nil {
		return "", "", false, fmt.Errorf("repository %s: config read failed: %w", r.location, err)
	}
	b, found := cfg.Branches[r.branch]
	if !found || b.Remote == "" || b.Remote == "." || b.Merge == "" {
		return "", "", false, nil
	}
	if _, known := cfg.Remotes[b.Remote]; !known {
		return "", "", false, nil
	}
	return b.Remote, b.Merge, true, nil
}

func (r *Repo) remoteURL(remote string) string {
	rem, err := r.git.Remote(remote)
	if err != nil || len(rem.Config().URLs) == 0 {
		return ""
	}
	return rem.Config().URLs[0]
}
