package controller

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// clusterSinks builds one Sink per kubeconfig context, with the clients
// the engine would use for it (same kubeconfig, same context override).
type clusterSinks struct {
	clients  *live.Clients
	override string

	mu    sync.Mutex
	sinks map[string]*clusterSink
}

func newClusterSinks(kubeconfig, contextOverride string) *clusterSinks {
	return &clusterSinks{clients: live.NewClients(kubeconfig, live.DefaultOptions()), override: contextOverride, sinks: map[string]*clusterSink{}}
}

func (c *clusterSinks) For(contextName string) (Sink, error) {
	if c.override != "" {
		contextName = c.override
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sinks[contextName]; ok {
		return s, nil
	}
	cs, err := c.clients.For(contextName)
	if err != nil {
		return nil, err
	}
	k, err := kubernetes.NewForConfig(cs.Config)
	if err != nil {
		return nil, fmt.Errorf("context %q (%s): events client: %w", cs.Context, cs.Server, err)
	}
	s := &clusterSink{EventSinkImpl: events.EventSinkImpl{Interface: k.EventsV1()}, cs: cs}
	c.sinks[contextName] = s
	return s, nil
}

// clusterSink is client-go's events sink for one cluster, plus UID reads.
type clusterSink struct {
	events.EventSinkImpl
	cs *live.ClientSet
}

// UID reads the object (one GET per new Event series); an object that is
// gone or unreadable gets an Event without a UID.
func (s *clusterSink) UID(ctx context.Context, ref status.ObjectRef) types.UID {
	m, err := s.cs.Mapping(ctx, schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind})
	if err != nil {
		return ""
	}
	o, err := s.cs.Dynamic.Resource(m.Resource).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return o.GetUID()
}
