package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// appState is what the engine remembers about one app between passes.
type appState struct {
	// run serializes passes of the app.
	run sync.Mutex

	// Guarded by core.mu.
	status  status.AppStatus
	context string
	// contextKey is the context name the App asked for ("" = current).
	contextKey string
	refs       map[string]bool

	// Guarded by run.
	cache   map[string]cacheEntry
	kinds   map[schema.GroupVersionKind]bool
	desired map[string]*unstructured.Unstructured
	results map[string]status.ResourceStatus
	// sensitive are the last render's strings from Secrets (see
	// pass.sensitive), masked in Detail too.
	sensitive []string
	// sensitiveObjs are the last render's objects shown as Secrets (see
	// pass.sensitiveObjs).
	sensitiveObjs []status.ObjectRef
	// pruneRefusal is the last prune refusal published, so a refusal is
	// reported once, not every pass.
	pruneRefusal string
	// expiring are the freezes already announced as ending soon
	// (FreezeExpiring), by freezeKey.
	expiring map[string]bool
	// rulesKey identifies the objects the app last rendered, with its
	// ignore rules; a change ends old fights (see phaseCompare).
	rulesKey string
	// ownerResumed is the last OwnerResumed reported as an event, so each
	// is reported once.
	ownerResumed string
	// requeued is set when a pass that healed asked for the follow-up
	// pass, until a pass changes nothing.
	requeued bool
	// unreached counts the passes in a row that could not reach the
	// cluster or read part of it (see retryUnreached).
	unreached int
	// mark is the newest revision applied to the app (see marks.go);
	// markRead says whether the persisted one was read; markAt is when
	// mark was last set here.
	mark     status.Mark
	markRead bool
	markAt   time.Time
}

// cacheEntry is one object's comparison, valid while the desired object
// and the live resourceVersion are the same.
type cacheEntry struct {
	desiredHash string
	liveRV      string
	result      status.ResourceStatus
}

// state returns (making it) the state of app name.
func (e *core) state(name string) *appState {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.states[name]
	if st == nil {
		st = newAppState(name)
		e.states[name] = st
	}
	return st
}

// forget drops what the engine knows of app name (it stopped serving it):
// it is no longer listed by Apps, and its next pass, if any, starts cold.
func (e *core) forget(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.states, name)
}

// newAppState is the state of an app no pass has seen.
func newAppState(name string) *appState {
	return &appState{
		status:  status.AppStatus{Name: name, Sync: status.SyncUnknown, Health: status.HealthUnknown, SelfHeal: status.SelfHealOff},
		cache:   map[string]cacheEntry{},
		kinds:   map[schema.GroupVersionKind]bool{},
		desired: map[string]*unstructured.Unstructured{},
		results: map[string]status.ResourceStatus{},
		refs:    map[string]bool{},
	}
}

// refKey names an object independent of its API version.
func refKey(r status.ObjectRef) string {
	return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// cluster is one kubeconfig context's clients.
type cluster struct {
	name    string
	cs      *live.ClientSet
	watcher *live.Watcher
	applier *apply.Applier
	// lists serves reads outside Run, one List per kind and namespace.
	lists lists
	// fleet is the engine's fleetReads: read one-shot lists by kind, not
	// by App.
	fleet *atomic.Bool
	// observer is the engine's (Options.Observer).
	observer Observer

	checkMu   sync.Mutex
	checkedAt time.Time
	checkErr  error     // the last check's failure, nil after a success
	failedAt  time.Time // when checkErr happened
	// discovered is closed when the first discovery ends, whether it
	// answered or not.
	discovered     chan struct{}
	discoveredOnce sync.Once

	// tracked is, by app, the kinds of tracked objects found live by one
	// scan of every kind (nil until a scan succeeds): what a prune must
	// look at beyond the kinds Git renders now.
	trackedMu sync.Mutex
	tracked   map[string][]schema.GroupVersionKind
}

// trackedKinds returns the kinds of app's tracked objects found live,
// scanning every kind once per process; a failed scan is retried by the
// next caller, and what it found is used meanwhile.
func (c *cluster) trackedKinds(ctx context.Context, app string) []schema.GroupVersionKind {
	c.trackedMu.Lock()
	defer c.trackedMu.Unlock()
	if c.tracked != nil {
		return c.tracked[app]
	}
	found, err := c.cs.TrackedKinds(ctx)
	if err == nil {
		c.tracked = found
	}
	return found[app]
}

// clusterFor returns the clients of a context, with informers when Run is
// running.
func (e *core) clusterFor(contextName string) (*cluster, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.clusters[contextName]; ok {
		return c, nil
	}
	cs, err := e.clients.For(contextName)
	if err != nil {
		return nil, err
	}
	aopts := e.opts.Apply
	aopts.Origin = e.renderer.Origin
	c := &cluster{name: cs.Context, cs: cs, applier: apply.New(cs.Dynamic, newMapper(cs), aopts), discovered: make(chan struct{}), observer: e.opts.Observer, fleet: &e.fleetReads}
	if e.watchCtx != nil {
		c.watcher = cs.NewWatcher(e.watchCtx, e.changes)
		// What comparisons ignore and nothing else reads need not be
		// cached (ARCHITECTURE.md "What the informer caches keep").
		c.watcher.IgnoreAnnotations(e.opts.Diff.IgnoredAnnotations)
	}
	e.clusters[contextName] = c
	return c, nil
}

// get reads one live object: from informers under Run, else directly.
func (c *cluster) get(ctx context.Context, ref status.ObjectRef) (*unstructured.Unstructured, error) {
	if c.watcher != nil {
		return c.watcher.Get(ctx, ref)
	}
	return c.getListed(ctx, ref)
}

// peek reads one live object like get, but an object from an informer
// cache is shared with it: read it, copy before changing it.
func (c *cluster) peek(ctx context.Context, ref status.ObjectRef) (*unstructured.Unstructured, error) {
	if c.watcher != nil {
		return c.watcher.Peek(ctx, ref)
	}
	return c.getListed(ctx, ref)
}

// watch makes sure informers cover a kind's tracked objects, in every
// namespace: one informer per kind for a fleet kdrift applied. An object
// that informer lacks starts the kind's informer in its namespace when it
// is read (live.Watcher.Get), so ns is not watched on its own.
func (c *cluster) watch(ctx context.Context, gvk schema.GroupVersionKind, _ string) error {
	if c.watcher == nil {
		return nil
	}
	return c.watcher.WatchTracked(ctx, gvk)
}

// listTracked lists the live objects of a kind tracked as app's. They may
// be shared with a cache: read them, copy before changing one.
func (c *cluster) listTracked(ctx context.Context, gvk schema.GroupVersionKind, appName string) ([]*unstructured.Unstructured, error) {
	if c.watcher != nil {
		if err := c.watcher.WatchTracked(ctx, gvk); err != nil {
			return nil, err
		}
		return c.watcher.ListTracked(ctx, gvk, appName)
	}
	// The apiserver sends this App's labelled objects and the unlabelled
	// ones (or, for a fleet, every tracked object of the kind); the
	// annotation decides among them, as the informers' do.
	e := c.lists.get(ctx, c.cs, c.trackedKey(gvk, appName))
	if e.err != nil {
		return nil, e.err
	}
	var out []*unstructured.Unstructured
	for _, o := range e.ofApp(appName) {
		if apply.TrackedAsApp(o, appName) {
			out = append(out, o)
		}
	}
	return out, nil
}
