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
