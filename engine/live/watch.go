package live

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"kdrift.dev/kdrift/engine/status"
)

// TrackingLabel and TrackingValue mark every object kdrift applies.
const (
	TrackingLabel = "app.kubernetes.io/managed-by"
	TrackingValue = "kdrift"
	// AppAnnotation names the App an object belongs to.
	AppAnnotation = "kdrift.dev/app"
)

// TrackedSelector is the label selector of objects kdrift applied.
const TrackedSelector = TrackingLabel + "=" + TrackingValue

// AppLabel is the label naming, in a label's form, the App that applied
// an object (apply.LabelApp, apply.AppLabelValue).
const AppLabel = "kdrift.dev/app"

// AppSelectors are the label selectors whose union holds every object
// tracked as the App whose AppLabel value is value: those labelled with
// it, and those kdrift applied before it wrote the label (or whose label
// a person removed). Both still need AppAnnotation checked: the label
// narrows what the apiserver sends, it does not decide.
func AppSelectors(value string) []string {
	return []string{TrackedSelector + "," + AppLabel + "=" + value, TrackedSelector + ",!" + AppLabel}
}

// ChangeType says what happened to a live object.
type ChangeType string

// ChangeType values.
const (
	Added   ChangeType = "Added"
	Updated ChangeType = "Updated"
	Deleted ChangeType = "Deleted"
	// Resynced says a kind's informer works again after its list or
	// watch failed; the Change names the kind (and namespace) only, not
	// an object: every app with objects of that kind is compared again.
	Resynced ChangeType = "Resynced"
)

// Change is a notification that a live object changed; the engine re-reads
// and re-compares it.
type Change struct {
	// Context is the kubeconfig context the object lives in.
	Context string
	Ref     status.ObjectRef
	Type    ChangeType
	// StatusOnly marks an update that changed nothing but status (and
	// the status subresource's managedFields entry): health may have
	// changed, drift cannot have, so a cached comparison with fresh
	// health is enough; no dry-run is needed.
	StatusOnly bool
}

// Watcher runs dynamic informers for one cluster context, started on
// demand, and sends a Change for every add, update and delete after the
// initial list. All informers stop when the context given to NewWatcher
// ends. It is safe for concurrent use.
type Watcher struct {
	set *ClientSet
	ctx context.Context
	out chan<- Change
	// SyncTimeout bounds how long Watch waits for an informer's first
	// list. Default 20s.
	SyncTimeout time.Duration

	mu        sync.Mutex
	informers map[watchKey]*watched
	// compact keeps one compact copy of each object across the informers
	// (compact.go).
	compact *compactor
}

type watchKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	tracked   bool
}

type watched struct {
	gvk      schema.GroupVersionKind
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	synced   chan struct{} // closed once the first list is in
	mu       sync.Mutex
	// lastErr is the informer's last list or watch failure; it is cleared
	// by the next list or watch that succeeds. While it is set the cache
	// may be stale and is not read (see stale).
	lastErr error
	since   time.Time
}

// failed records a list or watch failure.
func (wd *watched) failed(err error) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.lastErr == nil {
		wd.since = time.Now()
	}
	wd.lastErr = err
}

// recovered clears the failure after a list or watch succeeded; it
// reports whether there was one.
func (wd *watched) recovered() bool {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	was := wd.lastErr != nil
	wd.lastErr = nil
	return was
}

// stale is the error to give instead of the cache's content while its
// list or watch is failing; nil when the cache is current.
func (wd *watched) stale(gvr schema.GroupVersionResource, context string) error {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.lastErr == nil {
		return nil
	}
	return fmt.Errorf("live cache of %s on context %q is not current: list or watch failing since %s: %w", gvr, context, wd.since.Format(time.TimeOnly), wd.lastErr)
}

// newInformer is dynamicinformer's informer with a list-watch that tells
// wd when listing or watching fails and when it works again: a cache
// whose watch broke (403 after an RBAC change, 429, 5xx, a timeout) must
// not answer as if it were current, and when it is current again the
// apps that use it are told (a Change with no object name) so the next
// pass compares them.
func (w *Watcher) newInformer(key watchKey, indexers cache.Indexers, tweak dynamicinformer.TweakListOptionsFunc, wd *watched) cache.SharedIndexInformer {
	ri := w.set.watch.Resource(key.gvr).Namespace(key.namespace)
	opts := func(o metav1.ListOptions) metav1.ListOptions {
		if tweak != nil {
			tweak(&o)
		}
		return o
	}
	ok := func(err error) {
		if err != nil {
			wd.failed(err)
			return
		}
		if wd.recovered() && isClosed(wd.synced) {
			select {
			case w.out <- Change{Context: w.set.Context, Ref: status.ObjectRef{Group: wd.gvk.Group, Version: wd.gvk.Version, Kind: wd.gvk.Kind, Namespace: key.namespace}, Type: Resynced}:
			case <-w.ctx.Done():
			}
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := ri.List(ctx, opts(o))
			ok(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := ri.Watch(ctx, opts(o))
			ok(err)
			return wi, err
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, w.set.watch), &unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{Indexers: indexers, ObjectDescription: key.gvr.String()})
	// Fails only once started; this informer is new.
	_ = inf.SetTransform(w.compact.transform(key.gvr))
	return inf
}

// NewWatcher returns a watcher for the client set's context that sends
// changes on out until ctx ends.
func (s *ClientSet) NewWatcher(ctx context.Context, out chan<- Change) *Watcher {
	return &Watcher{set: s, ctx: ctx, out: out, SyncTimeout: 20 * time.Second, informers: map[watchKey]*watched{}, compact: newCompactor()}
}

// IgnoreAnnotations tells the watcher which annotations comparisons
// ignore. Those among them kdrift never reads (LastAppliedAnnotation) are
// left out of the objects it caches, unless a kdrift manager owns them.
// Call it before the first Watch.
func (w *Watcher) IgnoreAnnotations(annotations []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.compact.drop = compactAnnotations(annotations)
}

// Watch makes sure an informer runs for every object of a kind in a
// namespace ("" = all namespaces, and always "" for cluster-scoped kinds),
// and waits until its cache is filled. Changes in the initial list are not
// sent: the caller compares after Watch returns.
func (w *Watcher) Watch(ctx context.Context, gvk schema.GroupVersionKind, namespace string) error {
	return w.ensure(ctx, gvk, namespace, false)
}

// WatchTracked makes sure an informer runs for the objects of a kind that
// carry kdrift's tracking label, in all namespaces, and waits for its
// cache; it is how tracked objects that left Git are seen.
func (w *Watcher) WatchTracked(ctx context.Context, gvk schema.GroupVersionKind) error {
	return w.ensure(ctx, gvk, "", true)
}

func (w *Watcher) ensure(ctx context.Context, gvk schema.GroupVersionKind, namespace string, tracked bool) error {
	m, err := w.set.Mapping(ctx, gvk)
	if err != nil {
		return err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace || tracked {
		namespace = ""
	}
	key := watchKey{gvr: m.Resource, namespace: namespace, tracked: tracked}
	w.mu.Lock()
	wd, ok := w.informers[key]
	if !ok {
		wd = w.start(key, m.GroupVersionKind)
		w.informers[key] = wd
	}
	w.mu.Unlock()

	timeout := w.SyncTimeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// A list the apiserver refuses (403, 401) will not succeed by waiting.
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-wd.synced:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-w.ctx.Done():
			return fmt.Errorf("watch %s on context %q: watcher stopped", m.Resource, w.set.Context)
		case <-poll.C:
			wd.mu.Lock()
			last := wd.lastErr
			wd.mu.Unlock()
			if last != nil && (apierrors.IsForbidden(last) || apierrors.IsUnauthorized(last)) {
				w.stop(key)
				return w.set.clusterError("watch "+m.Resource.String(), last)
			}
		case <-timer.C:
			wd.mu.Lock()
			last := wd.lastErr
			wd.mu.Unlock()
			if last == nil {
				// Still listing, with nothing failed: a kind of 100,000
				// objects on a busy apiserver takes longer than the
				// timeout. The informer is kept, so the next caller waits
				// for the same list instead of starting it over (and
				// never finishing).
				return w.set.clusterError("watch "+m.Resource.String(), fmt.Errorf("no list within %s; still listing", timeout))
			}
			w.stop(key)
			return w.set.clusterError("watch "+m.Resource.String(), last)
		}
	}
}

func (w *Watcher) start(key watchKey, gvk schema.GroupVersionKind) *watched {
	ctx, cancel := context.WithCancel(w.ctx)
	var tweak dynamicinformer.TweakListOptionsFunc
	if key.tracked {
		tweak = func(o *metav1.ListOptions) { o.LabelSelector = TrackedSelector }
	}
	indexers := cache.Indexers{}
	if key.tracked {
		indexers[appIndex] = indexByApp
	}
	wd := &watched{gvk: gvk, cancel: cancel, synced: make(chan struct{})}
	wd.informer = w.newInformer(key, indexers, tweak, wd)
	if err := wd.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		wd.failed(err)
	}); err != nil {
		// Only fails once started; this informer is new.
		wd.lastErr = err
	}
	send := func(obj any, t ChangeType, statusOnly bool) {
		u := objectOf(obj)
		if u == nil {
			return
		}
		ref := RefOf(u)
		if ref.Kind == "" {
			ref.Group, ref.Version, ref.Kind = gvk.Group, gvk.Version, gvk.Kind
		}
		if ctx.Err() != nil {
			return // stopped: a select below could still pick the send
		}
		select {
		case w.out <- Change{Context: w.set.Context, Ref: ref, Type: t, StatusOnly: statusOnly}:
		case <-ctx.Done():
		}
	}
	_, err := wd.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				send(obj, Added, false)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, n := objectOf(oldObj), objectOf(newObj)
			if o != nil && n != nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync, nothing new
			}
			send(newObj, Updated, o != nil && n != nil && !meaningfulChange(o, n))
		},
		DeleteFunc: func(obj any) { send(obj, Deleted, false) },
	})
	if err != nil {
		wd.lastErr = err
	}
	go wd.informer.RunWithContext(ctx)
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), wd.informer.HasSynced) {
			close(wd.synced)
		}
	}()
	return wd
}

func (w *Watcher) stop(key watchKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wd, ok := w.informers[key]; ok {
		wd.cancel()
		delete(w.informers, key)
	}
}

// Stop ends the informer of a kind in a namespace started by Watch.
func (w *Watcher) Stop(ctx context.Context, gvk schema.GroupVersionKind, namespace string) error {
	m, err := w.set.Mapping(ctx, gvk)
	if err != nil {
		return err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	w.stop(watchKey{gvr: m.Resource, namespace: namespace})
	return nil
}

// Get implements Getter: from a synced informer cache that covers the
// object when there is one, from the apiserver otherwise. A tracked-only
// cache answers only when it holds the object (an untracked object of the
// same name may exist); when it lacks it, the kind's informer in the
// object's namespace is started and answers. The object is the caller's
// to change.
func (w *Watcher) Get(ctx context.Context, ref status.ObjectRef) (*unstructured.Unstructured, error) {
	u, shared, err := w.lookup(ctx, ref)
	if shared {
		u = u.DeepCopy()
	}
	return u, err
}

// Peek is Get without the copy: an object from the cache is shared with
// it, to read only. A pass that compares many unchanged objects would
// otherwise copy each of them every time.
func (w *Watcher) Peek(ctx context.Context, ref status.ObjectRef) (*unstructured.Unstructured, error) {
	u, _, err := w.lookup(ctx, ref)
	return u, err
}

// lookup finds ref as Get describes; shared says the object is the
// cache's own.
func (w *Watcher) lookup(ctx context.Context, ref status.ObjectRef) (*unstructured.Unstructured, bool, error) {
	m, err := w.set.Mapping(ctx, GVK(ref))
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", ref, err)
	}
	ns := ref.Namespace
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	cacheKey := ref.Name
	if ns != "" {
		cacheKey = ns + "/" + ref.Name
	}
	w.mu.Lock()
	candidates := []*watched{w.informers[watchKey{gvr: m.Resource, namespace: ns}], w.informers[watchKey{gvr: m.Resource}], w.informers[watchKey{gvr: m.Resource, tracked: true}]}
	w.mu.Unlock()
	for i, wd := range candidates {
		if wd == nil || !isClosed(wd.synced) {
			continue
		}
		if err := wd.stale(m.Resource, w.set.Context); err != nil {
			return nil, false, fmt.Errorf("%s: %w", ref, err)
		}
		item, exists, err := wd.informer.GetStore().GetByKey(cacheKey)
		if err != nil {
			continue
		}
		if exists {
			if u := objectOf(item); u != nil {
				return u, true, nil
			}
		}
		if i < 2 {
			return nil, false, nil // a full cache that lacks it: not there
		}
	}
	if candidates[0] == nil && candidates[1] == nil && candidates[2] != nil && isClosed(candidates[2].synced) {
		return w.lookupUntracked(ctx, ref, m.Resource, ns, cacheKey)
	}
	u, err := w.set.Get(ctx, ref)
	return u, false, err
}

// lookupUntracked finds an object the kind's tracked cache lacks (not
// applied by kdrift yet, or its label removed) in the kind's informer in
// its namespace, started for it: a fleet kdrift has synced is watched by
// one informer per kind (its tracked objects, all namespaces), and only
// a namespace that holds such an object costs a second, which then also
// sees the object appear or change.
func (w *Watcher) lookupUntracked(ctx context.Context, ref status.ObjectRef, gvr schema.GroupVersionResource, ns, cacheKey string) (*unstructured.Unstructured, bool, error) {
	if err := w.Watch(ctx, GVK(ref), ns); err != nil {
		return nil, false, fmt.Errorf("%s: %w", ref, err)
	}
	w.mu.Lock()
	wd := w.informers[watchKey{gvr: gvr, namespace: ns}]
	w.mu.Unlock()
	if wd == nil {
		u, err := w.set.Get(ctx, ref)
		return u, false, err
	}
	if err := wd.stale(gvr, w.set.Context); err != nil {
		return nil, false, fmt.Errorf("%s: %w", ref, err)
	}
	item, exists, err := wd.informer.GetStore().GetByKey(cacheKey)
	if err != nil || !exists {
		return nil, false, nil
	}
	if u := objectOf(item); u != nil {
		return u, true, nil
	}
	return nil, false, nil
}

// List returns every object of a kind in a namespace ("" = all
// namespaces, and always "" for cluster-scoped kinds) from the informer
// Watch runs for it, starting it when needed. The objects are shared
// with the cache: read them, copy before changing one.
func (w *Watcher) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]*unstructured.Unstructured, error) {
	if err := w.Watch(ctx, gvk, namespace); err != nil {
		return nil, err
	}
	m, err := w.set.Mapping(ctx, gvk)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	w.mu.Lock()
	wd := w.informers[watchKey{gvr: m.Resource, namespace: namespace}]
	w.mu.Unlock()
	if wd == nil {
		return nil, fmt.Errorf("%s in %q on context %q: informer stopped", m.Resource, namespace, w.set.Context)
	}
	items := wd.informer.GetStore().List()
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		if u := objectOf(item); u != nil {
			out = append(out, u)
		}
	}
	return out, nil
}

// ListTracked returns the tracked objects of a kind, shared with the
// cache WatchTracked filled (read them; copy before changing one),
// optionally only those of one app (by the
// kdrift.dev/app annotation; "" = all).
func (w *Watcher) ListTracked(ctx context.Context, gvk schema.GroupVersionKind, appName string) ([]*unstructured.Unstructured, error) {
	if err := w.WatchTracked(ctx, gvk); err != nil {
		return nil, err
	}
	m, err := w.set.Mapping(ctx, gvk)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	wd := w.informers[watchKey{gvr: m.Resource, tracked: true}]
	w.mu.Unlock()
	if wd == nil {
		return nil, fmt.Errorf("tracked %s on context %q: informer stopped", m.Resource, w.set.Context)
	}
	if err := wd.stale(m.Resource, w.set.Context); err != nil {
		return nil, err
	}
	// One app's objects come from the app index, so a pass over many apps
	// does not scan every tracked object once per app.
	items := wd.informer.GetStore().List()
	if appName != "" {
		if items, err = wd.informer.GetIndexer().ByIndex(appIndex, appName); err != nil {
			return nil, err
		}
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		if u := objectOf(item); u != nil {
			out = append(out, u)
		}
	}
	return out, nil
}

// appIndex names the tracked informers' index by owning app.
const appIndex = "kdrift-app"

// indexByApp indexes a tracked object by its AppAnnotation.
func indexByApp(obj any) ([]string, error) {
	u := objectOf(obj)
	if u == nil {
		return nil, nil
	}
	// Read the one annotation without copying the whole map.
	app, found, _ := unstructured.NestedString(u.Object, "metadata", "annotations", AppAnnotation)
	if !found || app == "" {
		return nil, nil
	}
	return []string{app}, nil
}

func objectOf(obj any) *unstructured.Unstructured {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// meaningfulChange reports whether an update can change a comparison:
// anything but status, resourceVersion, generation and the managedFields
// entries of the status subresource. Controllers rewrite status all the
// time; each such update need not cost the engine a dry-run.
func meaningfulChange(o, n *unstructured.Unstructured) bool {
	if o.GetResourceVersion() == n.GetResourceVersion() {
		return false
	}
	if !reflect.DeepEqual(strip(o.Object), strip(n.Object)) {
		return true
	}
	return !reflect.DeepEqual(ownership(o), ownership(n))
}

// strip returns a shallow view of obj without status and the metadata
// bookkeeping, sharing everything else.
func strip(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "status":
		case "metadata":
			md, ok := v.(map[string]any)
			if !ok {
				out[k] = v
				continue
			}
			m := make(map[string]any, len(md))
			for mk, mv := range md {
				switch mk {
				case "resourceVersion", "generation", "managedFields":
				default:
					m[mk] = mv
				}
			}
			out[k] = m
		default:
			out[k] = v
		}
	}
	return out
}

type entryKey struct{ manager, operation, subresource, fields string }

// ownership lists who owns what, without times and without the status
// subresource's entries.
func ownership(obj *unstructured.Unstructured) []entryKey {
	var out []entryKey
	for _, e := range obj.GetManagedFields() {
		if e.Subresource == "status" {
			continue
		}
		k := entryKey{manager: e.Manager, operation: string(e.Operation), subresource: e.Subresource}
		if e.FieldsV1 != nil {
			k.fields = e.FieldsV1.GetRawString()
		}
		out = append(out, k)
	}
	return out
}
