package engine

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/restmapper"

	"kdrift.dev/kdrift/engine/live"
)

var listTrackedOpts = metav1.ListOptions{LabelSelector: live.TrackedSelector}

// newMapper is a resettable RESTMapper over the context's cached discovery,
// for the apply step (it resets when a CRD becomes Established).
func newMapper(cs *live.ClientSet) meta.RESTMapper {
	return restmapper.NewDeferredDiscoveryRESTMapper(cs.Discovery)
}

// isNoMatch reports a kind the cluster does not serve (yet).
func isNoMatch(err error) bool {
	return meta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for kind") || strings.Contains(err.Error(), "is not served")
}
