package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// lists caches, for one-shot passes (no informers), one List per kind and
// namespace, so comparing many objects costs a few requests instead of one
// Get each. It is dropped whenever kdrift changes the cluster.
type lists struct {
	mu      sync.Mutex
	entries map[listKey]*listEntry
}

type listKey struct {
	gvk       schema.GroupVersionKind
	namespace string
	tracked   bool
	// app, with tracked, is the AppLabel value (apply.AppLabelValue) of
	// the one App whose tracked objects are listed: the apiserver then
	// sends that App's objects (and any applied before kdrift labelled
	// by App), not every tracked object of the kind.
	app string
}

type listEntry struct {
	once  sync.Once
	items []*unstructured.Unstructured
	byKey map[string]*unstructured.Unstructured
	err   error
	// byApp groups a fleet's tracked List by App (ofApp), once.
	appOnce sync.Once
	byApp   map[string][]*unstructured.Unstructured
}

func (l *lists) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// get lists a kind in a namespace (all namespaces when tracked, with the
// tracking selector) once.
func (l *lists) get(ctx context.Context, cs *live.ClientSet, k listKey) *listEntry {
	l.mu.Lock()
	if l.entries == nil {
		l.entries = map[listKey]*listEntry{}
	}
	e := l.entries[k]
	if e == nil {
		e = &listEntry{}
		l.entries[k] = e
	}
	l.mu.Unlock()
	e.once.Do(func() {
		m, err := cs.Mapping(ctx, k.gvk)
		if err != nil {
			e.err = err
			return
		}
		selectors := []string{""}
		switch {
		case k.tracked && k.app != "":
			selectors = live.AppSelectors(k.app)
		case k.tracked:
			selectors = []string{live.TrackedSelector}
		}
		lists := make([]*unstructured.UnstructuredList, len(selectors))
		errs := make([]error, len(selectors))
		var wg sync.WaitGroup
		for i, sel := range selectors {
			wg.Go(func() { lists[i], errs[i] = listSelected(ctx, cs, m, k, sel) })
		}
		wg.Wait()
		for _, err := range errs {
			// The first failure says it: both lists ask the same
			// apiserver for the same kind.
			if err != nil {
				e.err = fmt.Errorf("list %s in %q (context %s): %w", k.gvk.Kind, k.namespace, cs.Context, err)
				return
			}
		}
		e.byKey = map[string]*unstructured.Unstructured{}
		for _, list := range lists {
			for i := range list.Items {
				o := &list.Items[i]
				key := o.GetNamespace() + "/" + o.GetName()
				if e.byKey[key] != nil {
					// Relabelled between the two lists: one copy.
					continue
				}
				o.SetGroupVersionKind(k.gvk)
				e.items = append(e.items, o)
				e.byKey[key] = o
			}
		}
	})
	return e
}

// prefetch starts, for a one-shot pass (no informers), every List the
// comparison will read at once: each kind in each namespace the app
// renders, and each kind's tracked objects. The comparisons then wait only
// for the List they need, not for one another's.
func (p *pass) prefetch(ctx context.Context) {
	if p.cl.watcher != nil {
		return
	}
	keys := map[listKey]bool{}
	fleet := p.cl.fleet.Load()
	for _, d := range p.desired {
		if _, ok := p.encrypted[refKey(live.RefOf(d))]; ok {
			continue
		}
		gvk := d.GroupVersionKind()
		if !fleet {
			// A fleet's objects are read from the kind's tracked List
			// first; a namespace is listed only for one not in it.
			keys[listKey{gvk: gvk, namespace: d.GetNamespace()}] = true
		}
		keys[p.cl.trackedKey(gvk, p.name)] = true
	}
	for k := range keys {
		go p.cl.lists.get(ctx, p.cl.cs, k)
	}
}

// listSelected lists k with the label selector sel, asking discovery
// again once when the resource is gone although discovery (perhaps kept
// on disk) named it.
func listSelected(ctx context.Context, cs *live.ClientSet, m *meta.RESTMapping, k listKey, sel string) (*unstructured.UnstructuredList, error) {
	opts := metav1.ListOptions{LabelSelector: sel}
	list, err := listOnce(ctx, cs, m, k, opts)
	if apierrors.IsNotFound(err) {
		if m, err = cs.Rediscover(ctx, k.gvk); err != nil {
			return nil, err
		}
		list, err = listOnce(ctx, cs, m, k, opts)
	}
	return list, err
}

// listOnce sends one List for k.
func listOnce(ctx context.Context, cs *live.ClientSet, m *meta.RESTMapping, k listKey, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	ri := cs.Dynamic.Resource(m.Resource)
	if k.namespace != "" && !k.tracked {
		return ri.Namespace(k.namespace).List(ctx, opts)
	}
	return ri.List(ctx, opts)
}

// getListed reads one object through the list cache; nil when absent.
func (c *cluster) getListed(ctx context.Context, ref status.ObjectRef) (*unstructured.Unstructured, error) {
	if o := c.fleetListed(ctx, ref); o != nil {
		return o.DeepCopy(), nil
	}
	e := c.lists.get(ctx, c.cs, listKey{gvk: live.GVK(ref), namespace: ref.Namespace})
	if e.err != nil {
		return nil, e.err
	}
	if o := e.byKey[ref.Namespace+"/"+ref.Name]; o != nil {
		return o.DeepCopy(), nil
	}
	return nil, nil
}

// check says whether the cluster answered a version check recently, so
// passes do not ask again for every app. The first check also loads
// discovery, in parallel with the version request.
func (c *cluster) check(ctx context.Context) error {
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	if time.Since(c.checkedAt) < checkTTL {
		return nil
	}
	// A caller that waited for a check which just failed (Warm's,
	// then the pass's) gets its answer instead of waiting as long again.
	if c.checkErr != nil && time.Since(c.failedAt) < checkFailTTL {
		return c.checkErr
	}
	if c.checkedAt.IsZero() {
		// Its failure is the version check's to report; a kind looked up
		// later asks again.
		go func() {
			start := time.Now()
			err := c.cs.Discover(ctx)
			c.observer.Timed(PhaseCluster, "", time.Since(start), err)
			c.discoveredOnce.Do(func() { close(c.discovered) })
		}()
	}
	start := time.Now()
	err := c.cs.Check(ctx)
	c.observer.Timed(PhaseCluster, "", time.Since(start), err)
	if err != nil {
		c.checkErr, c.failedAt = err, time.Now()
		return err
	}
	c.checkedAt, c.checkErr = time.Now(), nil
	return nil
}

// checkTTL is how long a successful version check counts.
const checkTTL = 10 * time.Second

// checkFailTTL is how long a failed version check counts: long enough
// for the callers that queued behind it, short enough that the next pass
// asks again.
const checkFailTTL = time.Second
