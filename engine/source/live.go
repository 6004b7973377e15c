package source

import "kdrift.dev/kdrift/engine/app"

// WithLiveApplications is Apps plus the live Argo CD Applications of the
// cluster of kubeconfig context ("" the current one) that read this
// repository and that the commit does not declare (see
// app.LiveApplications), and how many were added. Apps itself is left
// as it is.
func (s *Snapshot) WithLiveApplications(live []map[string]any, context string) (app.LoadResult, int) {
	return app.LiveApplications(s.Apps(), s, live, context, app.DiscoverOptions{SameRepo: s.h.sameRepo(), Branch: s.h.upstreamBranch(), Renderer: s.h.discoverRenderer(), Clusters: s.h.clusters, ClustersErr: s.h.clustersErr})
}

// WithLiveKustomizations is res (Apps, or what WithLiveApplications made
// of them) plus the live Flux Kustomizations of the cluster of kubeconfig
// context that read this repository and that the commit does not declare
// (see app.LiveKustomizations; repos holds the cluster's live
// GitRepositories' URLs and refs by NAMESPACE/NAME, nil when not read),
// and how many were added.
func (s *Snapshot) WithLiveKustomizations(res app.LoadResult, live []map[string]any, repos *app.FluxCluster, context string) (app.LoadResult, int) {
	return app.LiveKustomizations(res, s, live, liveRepos(repos), context, app.DiscoverOptions{SameRepo: s.h.sameRepo(), Branch: s.h.upstreamBranch(), Flux: repos})
}

// WithLiveHelmReleases is res (what WithLiveKustomizations made) plus the
// live Flux HelmReleases of the cluster of kubeconfig context that come
// from this repository and that the commit does not declare (see
// app.LiveHelmReleases), and how many were added.
func (s *Snapshot) WithLiveHelmReleases(res app.LoadResult, live []map[string]any, repos *app.FluxCluster, context string) (app.LoadResult, int) {
	return app.LiveHelmReleases(res, s, live, liveRepos(repos), context, app.DiscoverOptions{SameRepo: s.h.sameRepo(), Branch: s.h.upstreamBranch(), Flux: repos})
}

// liveRepos are the live GitRepositories' URLs of fc; nil when not read.
func liveRepos(fc *app.FluxCluster) map[string]string {
	if fc == nil {
		return nil
	}
	return fc.Repos
}
