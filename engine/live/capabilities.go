package live

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// Capabilities returns what this cluster is known to be, for Helm charts'
// .Capabilities, as Argo CD renders them: the apiserver's version from the
// last version check, and the group/versions and group/version/kinds
// discovery served when it was last loaded. It asks the apiserver nothing:
// either is empty until a check or a discovery has answered.
func (s *ClientSet) Capabilities() (kubeVersion string, apiVersions []string) {
	s.capsMu.Lock()
	defer s.capsMu.Unlock()
	return s.kubeVersion, s.apiVersions
}

// noteAPIVersions records the API versions of the discovery just loaded:
// right after the mapper loaded it, the cached client answers from
// memory (or the disk cache).
func (s *ClientSet) noteAPIVersions() {
	_, lists, err := s.Discovery.ServerGroupsAndResources()
	// A partial answer (one aggregated API down) still names the rest.
	if (err != nil && !discovery.IsGroupDiscoveryFailedError(err)) || len(lists) == 0 {
		return
	}
	vs := apiVersionsOf(lists)
	s.capsMu.Lock()
	s.apiVersions = vs
	s.capsMu.Unlock()
}

// apiVersionsOf lists "group/version" and "group/version/Kind" ("v1" and
// "v1/Pod" for the core group) for every resource served, subresources
// left out, sorted: Helm's and Argo CD's form.
func apiVersionsOf(lists []*metav1.APIResourceList) []string {
	seen := map[string]bool{}
	for _, l := range lists {
		if l == nil || l.GroupVersion == "" {
			continue
		}
		seen[l.GroupVersion] = true
		for _, r := range l.APIResources {
			if r.Kind == "" || strings.Contains(r.Name, "/") {
				continue
			}
			seen[l.GroupVersion+"/"+r.Kind] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}
