package publish

import (
	"context"
	"fmt"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/status"
)

// Change is one AppStatus that was added, changed or deleted.
type Change struct {
	// App is the App's name.
	App string
	// Status is the published status; nil when the object was deleted.
	Status *Published
	// Fetch is the object's AnnotationFetch (a pushed commit); FetchChanged
	// says it differs from the object's previous one.
	Fetch        string
	FetchChanged bool
}

// Watcher follows a repository's AppStatuses with one watch (a LIST, then
// a WATCH), keeping the latest of each.
type Watcher struct {
	client   dynamic.NamespaceableResourceInterface
	ns       string
	identity string

	mu     sync.Mutex
	apps   map[string]Published // by App name
	hashes map[string]string    // content hash by object name
}

// NewWatcher prepares a watch on repository identity's AppStatuses in
// namespace; Run starts it.
func NewWatcher(dyn dynamic.Interface, namespace, identity string) *Watcher {
	return &Watcher{client: dyn.Resource(GVR), ns: namespace, identity: identity, apps: map[string]Published{}, hashes: map[string]string{}}
}

// Run watches until ctx ends, calling changed (from one goroutine) for
// each change; it returns once the first LIST is in (false when ctx ended
// first), the watch going on in the background.
func (w *Watcher) Run(ctx context.Context, changed func(Change)) bool {
	sel := labels.SelectorFromSet(labels.Set{leader.LabelRepo: leader.Hash(w.identity)}).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return w.client.Namespace(w.ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return w.client.Namespace(w.ns).Watch(ctx, o)
		},
	}
	handle := func(old, obj *unstructured.Unstructured) {
		if obj.GetAnnotations()[leader.AnnotationRepo] != w.identity {
			return // a hash collision or a forged label: not ours
		}
		pub, err := Decode(obj)
		fetch := obj.GetAnnotations()[AnnotationFetch]
		ch := Change{App: pub.Name, Fetch: fetch, FetchChanged: fetch != "" && (old == nil || old.GetAnnotations()[AnnotationFetch] != fetch)}
		w.mu.Lock()
		if err == nil && pub.Name != "" {
			w.apps[pub.Name] = pub
			ch.Status = &pub
		}
		w.hashes[obj.GetName()] = trustedHash(obj, pub, err)
		w.mu.Unlock()
		if ch.App != "" && changed != nil {
			changed(ch)
		}
	}
	_, inf := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &unstructured.Unstructured{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { handle(nil, obj.(*unstructured.Unstructured)) },
			UpdateFunc: func(old, obj any) {
				handle(old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured))
			},
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				u, ok := obj.(*unstructured.Unstructured)
				if !ok {
					return
				}
				pub, _ := Decode(u)
				w.mu.Lock()
				delete(w.hashes, u.GetName())
				if pub.Name != "" {
					delete(w.apps, pub.Name)
				}
				w.mu.Unlock()
				if pub.Name != "" && changed != nil {
					changed(Change{App: pub.Name})
				}
			},
		},
	})
	go inf.RunWithContext(ctx)
	return cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
}

// Decode reads an AppStatus's published status.
func Decode(obj *unstructured.Unstructured) (Published, error) {
	var p Published
	raw, ok := obj.Object["status"].(map[string]any)
	if !ok {
		return p, fmt.Errorf("AppStatus %s/%s has no status", obj.GetNamespace(), obj.GetName())
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &p); err != nil {
		return p, fmt.Errorf("AppStatus %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return p, nil
}

// Apps is every published App's status, sorted by name.
func (w *Watcher) Apps() []status.AppStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]status.AppStatus, 0, len(w.apps))
	for _, p := range w.apps {
		out = append(out, p.AppStatus)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// App is one App's published status.
func (w *Watcher) App(name string) (Published, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.apps[name]
	return p, ok
}

// Hashes are the content hashes of the objects, by object name (for
// Publisher.Seed).
func (w *Watcher) Hashes() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.hashes))
	for k, v := range w.hashes {
		out[k] = v
	}
	return out
}

// trustedHash is the content hash obj's annotation claims, when its status
// (pub, decoded with err) has that content; "" otherwise. A leader writes
// the annotation with the metadata and the status through its subresource,
// in two writes: one killed between them leaves the new hash over the old
// status, and a new leader that trusted the annotation would never write
// that App's status again.
func trustedHash(obj *unstructured.Unstructured, pub Published, err error) string {
	claimed := obj.GetAnnotations()[AnnotationContent]
	if err != nil || claimed == "" {
		return ""
	}
	if real, _, herr := contentHash(pub); herr != nil || real != claimed {
		return ""
	}
	return claimed
}
