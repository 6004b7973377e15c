package source

import (
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
)

// discoverRenderer is the Renderer that renders apps to find the
// Applications and Kustomizations they generate, one per repository so
// that a parent app's render is cached between snapshots.
func (h *handle) discoverRenderer() *render.Renderer {
	h.discOnce.Do(func() { h.disc = render.NewRenderer() })
	return h.disc
}

// sameRepo reports whether a URL names this repository: one of its
// remotes, or its own folder, compared as NormalizeURL forms.
func (h *handle) sameRepo() func(string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return SameRepoFunc(h.repo)
}

// upstreamBranch is the branch discovery compares Flux GitRepositories'
// refs with (app.DiscoverOptions.Branch); "" when not known.
func (h *handle) upstreamBranch() string {
	if h.branch == nil {
		return ""
	}
	return *h.branch
}

// SameRepoFunc reports whether a URL names the repository g: the URL of
// one of its remotes (as configured, and as url.<base>.insteadOf rewrites
// it) or the folder of its work tree, compared as NormalizeURL forms
// (scheme, user, ".git", trailing "/" and host case do not matter).
func SameRepoFunc(g *git.Repository) func(string) bool {
	names := map[string]bool{}
	if cfg, err := g.Config(); err == nil {
		global, gerr := config.LoadConfig(config.GlobalScope)
		if gerr != nil {
			global = nil // an unreadable ~/.gitconfig rewrites nothing
		}
		for _, u := range remoteURLs(cfg, global) {
			names[NormalizeURL(u)] = true
		}
	}
	if wt, err := g.Worktree(); err == nil {
		names[NormalizeURL(filepath.Clean(wt.Filesystem.Root()))] = true
	}
	return func(u string) bool { return u != "" && names[NormalizeURL(u)] }
}

// SnapshotOf is the Snapshot of commit in g, for callers that hold a
// go-git repository of their own (the Git actions) and need the Apps the
// engine sees at that commit, Argo CD and Flux declarations included.
// Callers must not use g from another goroutine meanwhile.
func SnapshotOf(g *git.Repository, commit plumbing.Hash) (*Snapshot, error) {
	c, err := readCommit(g, commit)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of commit %s: %w", commit, err)
	}
	return newSnapshot(&handle{repo: g}, c.Hash.String(), tree), nil
}

// SnapshotOfCached is SnapshotOfCluster whose discovery keeps what it
// walked and rendered in children (app.ChildCache; nil keeps nothing), as
// a Repo's snapshots do: a folder whose tree hash it knows is not read
// again.
//
// branch is the branch of g the commit is read from (see
// UpstreamBranch): a Flux GitRepository that follows another branch of
// this URL is not this repository.
func SnapshotOfCached(g *git.Repository, commit plumbing.Hash, fc *app.FluxCluster, children *app.ChildCache, branch string) (*Snapshot, error) {
	s, err := SnapshotOfCluster(g, commit, fc)
	if err != nil {
		return nil, err
	}
	s.h.children = children
	s.h.branch = &branch
	return s, nil
}

// SnapshotOfCluster is SnapshotOf whose discovery follows the Flux
// cluster folder fc (nil: every Flux declaration).
func SnapshotOfCluster(g *git.Repository, commit plumbing.Hash, fc *app.FluxCluster) (*Snapshot, error) {
	s, err := SnapshotOf(g, commit)
	if err != nil || fc == nil {
		return s, err
	}
	s.h.flux = &atomic.Pointer[app.FluxCluster]{}
	s.h.flux.Store(fc)
	return s, nil
}
