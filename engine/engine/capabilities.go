package engine

import (
	"context"

	"kdrift.dev/kdrift/engine/render"
)

// withCapabilities sets h's Kubernetes version and API versions to what
// is known of c (the last version check, the last discovery), as Argo CD
// renders a chart for its destination; what is not known yet keeps the
// renderer's default. It asks the cluster nothing.
func (c *cluster) withCapabilities(h *render.Helm) *render.Helm {
	h.KubeVersion, h.APIVersions = c.cs.Capabilities()
	return h
}

// awaitDiscovery waits until the cluster's first discovery has ended (it
// was started by the first version check), or ctx ends.
func (c *cluster) awaitDiscovery(ctx context.Context) {
	select {
	case <-c.discovered:
	case <-ctx.Done():
	}
}
