package actions

import (
	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
)

// snapshotOf is the Snapshot of commit, discovering the Flux apps of the
// cluster folder RepoOptions.ClusterPath names, or the engine followed
// (RepoOptions.Resolved), as the engine does.
func (r *Repo) snapshotOf(commit plumbing.Hash) (*source.Snapshot, error) {
	var fc *app.FluxCluster
	switch {
	case r.opts.ClusterPath != "":
		fc = &app.FluxCluster{Path: r.opts.ClusterPath, From: "--cluster-path"}
	case r.opts.Resolved != nil:
		fc = r.opts.Resolved.Flux
	}
	return source.SnapshotOfCached(r.git, commit, fc, r.discoverCache(), source.UpstreamBranch(r.git, r.branch))
}

// discoverCache is the cache of discovery's walk and renders
// (RepoOptions.DiscoverCacheDir), made once; nil without a folder.
func (r *Repo) discoverCache() *app.ChildCache {
	if r.opts.DiscoverCacheDir == "" {
		return nil
	}
	r.childrenOnce.Do(func() {
		// One file per clone (its git folder); the scope is kdrift's
		// own, no URL or credentials.
		dir, err := r.gitDir()
		if err != nil {
			return
		}
		r.children = app.NewChildCache(r.opts.DiscoverCacheDir, dir, "actions")
	})
	return r.children
}
