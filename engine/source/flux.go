package source

import "kdrift.dev/kdrift/engine/app"

// SetFlux sets the Flux cluster folder discovery follows (nil: every
// Flux declaration of the tree) and forgets the snapshots kept so far, so
// that the next Snapshot discovers the apps with it.
func (r *Repo) SetFlux(fc *app.FluxCluster) {
	r.flux.Store(fc)
	r.snapMu.Lock()
	r.snaps = nil
	r.snapMu.Unlock()
}

// Flux is the Flux cluster folder discovery follows; nil when none.
func (r *Repo) Flux() *app.FluxCluster { return r.flux.Load() }

// SameRepo reports whether a URL names this repository (one of its
// remotes, or its own folder), as discovery compares an Argo CD
// repoURL or a Flux GitRepository's URL.
func (r *Repo) SameRepo(url string) bool { return r.handle().sameRepo()(url) }

// fluxCluster is the cluster folder the handle's snapshots discover with.
func (h *handle) fluxCluster() *app.FluxCluster {
	if h.flux == nil {
		return nil
	}
	return h.flux.Load()
}
