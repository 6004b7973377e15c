package live

import (
	"context"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// TrackedKinds finds, across every listable kind the apiserver serves,
// the kinds of the objects kdrift tracks, by app (the AppAnnotation). It
// is how a process that has not applied an app's objects itself (a CLI
// sync, the engine after a restart) still finds tracked objects of a kind
// that left Git entirely, to prune them. Only object metadata is read. A
// kind the credentials may not list is passed over: kdrift could not
// prune it either. On an error (discovery failing, a list that timed out)
// what was found is still returned; ask again later for the rest.
func (s *ClientSet) TrackedKinds(ctx context.Context) (map[string][]schema.GroupVersionKind, error) {
	lists, err := s.Discovery.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, s.clusterError("discovery", err)
	}
	// Listing every kind touches deprecated ones (v1 Endpoints): their
	// warnings say nothing about what kdrift applies.
	cfg := rest.CopyConfig(s.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	md, err := metadata.NewForConfigAndClient(cfg, s.HTTP)
	if err != nil {
		return nil, err
	}
	type kind struct {
		gvr schema.GroupVersionResource
		gvk schema.GroupVersionKind
	}
	var kinds []kind
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			// Subresources cannot be listed; events are many and never
			// applied from Git.
			if strings.Contains(r.Name, "/") || r.Name == "events" || !slices.Contains(r.Verbs, "list") {
				continue
			}
			kinds = append(kinds, kind{gv.WithResource(r.Name), gv.WithKind(r.Kind)})
		}
	}
	var (
		mu      sync.Mutex
		listErr error
		out     = map[string][]schema.GroupVersionKind{}
		g       errgroup.Group
	)
	g.SetLimit(8)
	for _, k := range kinds {
		g.Go(func() error {
			l, err := md.Resource(k.gvr).List(ctx, metav1.ListOptions{LabelSelector: TrackedSelector})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// Kept aside rather than returned: the other kinds' lists
				// still count.
				if !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) && listErr == nil {
					listErr = s.clusterError("list tracked "+k.gvr.String(), err)
				}
				return nil
			}
			for _, item := range l.Items {
				app := item.Annotations[AppAnnotation]
				if app != "" && !slices.Contains(out[app], k.gvk) {
					out[app] = append(out[app], k.gvk)
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, listErr
}
