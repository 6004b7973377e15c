package live

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"kdrift.dev/kdrift/engine/status"
)

// resetEvery is the least time between two discovery resets.
const resetEvery = time.Second

// Mapping returns the REST mapping of a kind. When discovery does not know
// the kind (a CRD installed after the mapper was built), the cached
// discovery is reset (at most once a second) and the lookup retried once.
func (s *ClientSet) Mapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	s.mapMu.Lock()
	m, ok := s.mappings[gvk]
	s.mapMu.Unlock()
	if ok {
		return m, nil
	}
	gk := gvk.GroupKind()
	m, err := s.mapper.RESTMappingWithContext(ctx, gk, gvk.Version)
	if err == nil {
		s.remember(gvk, m)
		return m, nil
	}
	if !meta.IsNoMatchError(err) {
		return nil, s.clusterError("discovery", err)
	}
	s.mapMu.Lock()
	// Many objects of a kind not installed yet (custom resources applied
	// before their CRD) would each redo discovery; a reset younger than
	// resetEvery is fresh enough for all of them.
	if time.Since(s.lastReset) >= resetEvery {
		s.mapper.ResetWithContext(ctx)
		s.lastReset = time.Now()
		s.mappings = nil
	}
	s.mapMu.Unlock()
	m, err = s.mapper.RESTMappingWithContext(ctx, gk, gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("kind %s is not served by context %q (server %s): install its CustomResourceDefinition or fix apiVersion: %w", gvkString(gvk), s.Context, s.Server, err)
		}
		return nil, s.clusterError("discovery", err)
	}
	s.remember(gvk, m)
	s.noteAPIVersions()
	return m, nil
}

// Rediscover forgets what discovery said (in memory and, for this
// process, on disk) and returns the kind's mapping as the apiserver gives
// it now: for a resource that answered 404 to a List, which a discovery
// cache written before its CRD was removed still names.
func (s *ClientSet) Rediscover(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	s.mapMu.Lock()
	s.mapper.ResetWithContext(ctx)
	s.lastReset = time.Now()
	s.mappings = nil
	s.mapMu.Unlock()
	m, err := s.Mapping(ctx, gvk)
	if err == nil {
		s.noteAPIVersions()
	}
	return m, err
}

// Discover loads the mapper's discovery (from the disk cache when there is
// one) so the first Mapping does not wait for it.
func (s *ClientSet) Discover(ctx context.Context) error {
	_, err := s.Mapping(ctx, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	if err == nil {
		s.noteAPIVersions()
	}
	return err
}

// remember memoizes a mapping the mapper gave.
func (s *ClientSet) remember(gvk schema.GroupVersionKind, m *meta.RESTMapping) {
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	if s.mappings == nil {
		s.mappings = map[schema.GroupVersionKind]*meta.RESTMapping{}
	}
	s.mappings[gvk] = m
}

// Resource returns the dynamic client for an object, scoped to its
// namespace when its kind is namespaced, with the mapping used.
func (s *ClientSet) Resource(ctx context.Context, obj *unstructured.Unstructured) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	return s.resourceFor(ctx, s.Dynamic, obj.GroupVersionKind(), obj.GetNamespace(), RefOf(obj))
}

func (s *ClientSet) resourceFor(ctx context.Context, client dynamic.Interface, gvk schema.GroupVersionKind, namespace string, ref status.ObjectRef) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	m, err := s.Mapping(ctx, gvk)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", ref, err)
	}
	nri := client.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if namespace == "" {
			return nil, nil, fmt.Errorf("%s: %s is namespaced but the object names no namespace; set destination.namespace on the App or metadata.namespace", ref, gvk.Kind)
		}
		return nri.Namespace(namespace), m, nil
	}
	return nri, m, nil
}

// RefOf returns the ObjectRef of an object.
func RefOf(obj *unstructured.Unstructured) status.ObjectRef {
	gvk := obj.GroupVersionKind()
	return status.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// GVK returns the GroupVersionKind of a reference.
func GVK(ref status.ObjectRef) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}
}

func gvkString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Version + "/" + gvk.Kind
	}
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

// RESTMapper returns the context's discovery-backed mapper, the one
// Mapping uses, for code that needs a meta.RESTMapper (apply ordering, a
// kind's scope). Sharing it keeps one discovery cache per context; call
// its Reset when a CRD becomes established, or use Mapping, which resets
// by itself.
func (s *ClientSet) RESTMapper() *restmapper.DeferredDiscoveryRESTMapper { return s.mapper }
