package actions

import (
	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
)

// snapshotOf is the Snapshot of commit, discovering the Flux apps of the
// cluster folder RepoOptions.ClusterPath names, as the engine does.
func (r *Repo) snapshotOf(commit plumbing.Hash) (*source.Snapshot, error) {
	var fc *app.FluxCluster
	if r.opts.ClusterPath != "" {
		fc = &app.FluxCluster{Path: r.opts.ClusterPath, From: "--cluster-path"}
	}
	return source.SnapshotOfCluster(r.git, commit, fc)
}
