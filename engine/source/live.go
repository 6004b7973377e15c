package source

import "kdrift.dev/kdrift/engine/app"

// WithLiveApplications is Apps plus the live Argo CD Applications of the
// cluster of kubeconfig context ("" the current one) that read this
// repository and that the commit does not declare (see
// app.LiveApplications), and how many were added. Apps itself is left
// as it is.
func (s *Snapshot) WithLiveApplications(live []map[string]any, context string) (app.LoadResult, int) {
	return app.LiveApplications(s.Apps(), s, live, context, app.DiscoverOptions{SameRepo: s.h.sameRepo(), Renderer: s.h.discoverRenderer(), Clusters: s.h.clusters, ClustersErr: s.h.clustersErr})
}

// WithLiveKustomizations is res (Apps, or what WithLiveApplications made
// of them) plus the live Flux Kustomizations of the cluster of kubeconfig
// context that read this repository and that the commit does not declare
// (see app.LiveKustomizations; repos are the cluster's live
// GitRepositories' URLs by NAMESPACE/NAME, nil when not read), and how
// many were added.
func (s *Snapshot) WithLiveKustomizations(res app.LoadResult, live []map[string]any, repos map[string]string, context string) (app.LoadResult, int) {
	return app.LiveKustomizations(res, s, live, repos, context, app.DiscoverOptions{SameRepo: s.h.sameRepo()})
}

// WithLiveHelmReleases is res (what WithLiveKustomizations made) plus the
// live Flux HelmReleases of the cluster of kubeconfig context that come
// from this repository and that the commit does not declare (see
// app.LiveHelmReleases), and how many were added.
func (s *Snapshot) WithLiveHelmReleases(res app.LoadResult, live []map[string]any, repos map[string]string, context string) (app.LoadResult, int) {
	return app.LiveHelmReleases(res, s, live, repos, context, app.DiscoverOptions{SameRepo: s.h.sameRepo()})
}
