package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

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
}

type listEntry struct {
	once  sync.Once
	items []*unstructured.Unstructured
	byKey map[string]*unstructured.Unstructured
	err   error
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
		opts := metav1.ListOptions{}
		if k.tracked {
			opts.LabelSelector = live.TrackedSelector
		}
		ri := cs.Dynamic.Resource(m.Resource)
		var list *unstructured.UnstructuredList
		if k.namespace != "" && !k.tracked {
			list, err = ri.Namespace(k.namespace).List(ctx, opts)
		} else {
			list, err = ri.List(ctx, opts)
		}
		if err != nil {
			e.err = fmt.Errorf("list %s in %q (context %s): %w", k.gvk.Kind, k.namespace, cs.Context, err)
			return
		}
		e.byKey = make(map[string]*unstructured.Unstructured, len(list.Items))
		for i := range list.Items {
			o := &list.Items[i]
			o.SetGroupVersionKind(k.gvk)
			e.items = append(e.items, o)
			e.byKey[o.GetNamespace()+"/"+o.GetName()] = o
		}
	})
	return e
}

// getListed reads one object through the list cache; nil when absent.
func (c *cluster) getListed(ctx context.Context, ref status.ObjectRef) (*unstructured.Unstructured, error) {
	e := c.lists.get(ctx, c.cs, listKey{gvk: live.GVK(ref), namespace: ref.Namespace})
	if e.err != nil {
		return nil, e.err
	}
	if o := e.byKey[ref.Namespace+"/"+ref.Name]; o != nil {
		return o.DeepCopy(), nil
	}
	return nil, nil
}

// checked says whether the cluster answered a version check recently, so
// passes do not ask again for every app.
func (c *cluster) check(ctx context.Context) error {
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	if time.Since(c.checkedAt) < checkTTL {
		return nil
	}
	if err := c.cs.Check(ctx); err != nil {
		return err
	}
	c.checkedAt = time.Now()
	return nil
}

// checkTTL is how long a successful version check counts.
const checkTTL = 10 * time.Second
