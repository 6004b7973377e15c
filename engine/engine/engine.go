// Package engine is kdrift's reconcile engine: it keeps comparing Git (the
// desired state) with the clusters (the facts), heals drift when an App
// asks for it and is not frozen, prunes what left Git, and publishes typed
// events for the UI, the CLI and the controller.
//
// A pass over one app runs as named phases, each in its own file: source
// (the App at the current revision), render, compare, heal and prune; one
// deferred block always records the app's status and publishes it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/fight"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/engine/status"
)

// Options configure an Engine. Zero fields take the documented defaults.
type Options struct {
	// Repo is the Git repository: a path or URL (default: the repository
	// enclosing the current folder).
	Repo string
	// Branch is the branch to read (default: the repository's current
	// branch, or the remote's HEAD branch).
	Branch string
	// CacheDir holds clones of remote repositories (default: the user
	// cache folder).
	CacheDir string
	// Kubeconfig is the kubeconfig file (default: $KUBECONFIG, then
	// ~/.kube/config).
	Kubeconfig string
	// Context, when set, overrides every App's destination context.
	Context string
	// Apps limits the engine to these App names (default: all).
	Apps []string
	// ReadOnly never heals, releases or prunes, whatever the Apps say:
	// `kdrift diff` and `kdrift status` compare only.
	ReadOnly bool
	// FetchInterval is how often Run fetches Git (default 30s).
	FetchInterval time.Duration
	// Resync is how often Run re-compares every app as a safety net
	// behind the event-driven passes (default 5m).
	Resync time.Duration
	// Debounce is how long Run waits after a live change before it
	// re-compares the app, so a burst of changes is one pass (default
	// 50ms).
	Debounce time.Duration
	// Workers is how many apps are reconciled at once (default 4).
	Workers int
	// EventBuffer is each subscriber's channel capacity (default 1024).
	EventBuffer int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Live, Diff, Apply and Fight tune the parts (defaults: their
	// DefaultOptions, except Live's rate limit: 300 QPS, burst 600).
	Live  live.Options
	Diff  diff.Options
	Apply apply.Options
	Fight fight.Options
	// Observer is told step timings, request outcomes and Run's
	// heartbeat (default: nobody).
	Observer Observer
}

func (o *Options) defaults() {
	if o.FetchInterval <= 0 {
		o.FetchInterval = source.DefaultInterval
	}
	if o.Resync <= 0 {
		o.Resync = 5 * time.Minute
	}
	if o.Debounce <= 0 {
		o.Debounce = 50 * time.Millisecond
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.EventBuffer <= 0 {
		o.EventBuffer = 1024
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Live == (live.Options{}) {
		o.Live = live.DefaultOptions()
		// One dry-run per object: a 1,000-object fleet at the client
		// default of 50 QPS would take 20 s per cold pass.
		o.Live.QPS, o.Live.Burst = 300, 600
	}
	if len(o.Diff.KdriftManagers) == 0 {
		o.Diff = diff.DefaultOptions()
	}
	if o.Fight.Now == nil {
		o.Fight.Now = o.Now
	}
	if o.Observer == nil {
		o.Observer = noObserver{}
	}
}

// Stats counts what the engine did since it started.
type Stats struct {
	// Passes is how many app passes ran.
	Passes int64
	// DryRuns is how many server-side dry-run applies were sent; a pass
	// with nothing changed sends none.
	DryRuns int64
	// Applies counts objects applied (heal and sync).
	Applies int64
	// DroppedEvents counts events a slow subscriber did not take.
	DroppedEvents int64
}

// Engine compares Git with the clusters and heals. Its methods are safe
// for concurrent use.
type Engine struct {
	opts     Options
	repo     *source.Repo
	renderer *render.Renderer
	clients  *live.Clients
	fights   *fight.Detector
	bus      *bus

	mu       sync.Mutex
	head     source.Revision
	snap     *source.Snapshot
	apps     app.LoadResult
	states   map[string]*appState
	clusters map[string]*cluster
	// watchCtx is Run's context: informers live as long as it; nil
	// outside Run (one-shot commands read the apiserver directly).
	watchCtx context.Context
	changes  chan live.Change
	kick     func(names ...string)

	passes, dryRuns, applies atomic.Int64

	// reachDown says, per "target/context", whether it was last seen
	// unreachable (see reach).
	reachMu   sync.Mutex
	reachDown map[string]bool
}

// New opens the repository and prepares the engine; it does not contact
// any cluster yet. A remote that cannot be reached while a cached clone
// exists is not an error: the engine works from the clone and reports the
// remote's failure in app statuses.
func New(opts Options) (*Engine, error) {
	opts.defaults()
	repo, err := source.Open(context.Background(), source.Options{Location: opts.Repo, Branch: opts.Branch, CacheDir: opts.CacheDir, OnFetch: func(took time.Duration, err error) {
		opts.Observer.Timed(StepFetch, "", took, err)
	}})
	var remote *source.RemoteError
	if err != nil && !(errors.As(err, &remote) && repo != nil) {
		return nil, err
	}
	e := &Engine{
		opts:     opts,
		repo:     repo,
		renderer: render.NewRenderer(),
		clients:  live.NewClients(opts.Kubeconfig, opts.Live),
		fights:   fight.New(opts.Fight),
		bus:      newBus(opts.EventBuffer),
		states:   map[string]*appState{},
		clusters: map[string]*cluster{},
	}
	return e, nil
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	return Stats{Passes: e.passes.Load(), DryRuns: e.dryRuns.Load(), Applies: e.applies.Load(), DroppedEvents: e.bus.dropped.Load()}
}

// Apps returns the status of every app, sorted by name. An app not
// compared yet has Sync Unknown.
func (e *Engine) Apps() []status.AppStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]status.AppStatus, 0, len(e.states))
	for _, st := range e.states {
		out = append(out, st.status)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// App returns one app's status.
func (e *Engine) App(name string) (status.AppStatus, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.states[name]
	if !ok {
		return status.AppStatus{}, false
	}
	return st.status, true
}

// Inputs lists the repository folders app's last render read: its path
// and, for an overlay, its bases and components. Empty until the app was
// rendered.
func (e *Engine) Inputs(app string) []string {
	e.mu.Lock()
	st := e.states[app]
	var p string
	if st != nil {
		p = st.status.Path
	}
	e.mu.Unlock()
	if p == "" {
		return nil
	}
	return e.renderer.Inputs(p)
}

// Repo is the Git repository the engine reads.
func (e *Engine) Repo() *source.Repo { return e.repo }

// Refresh asks Run to fetch Git now and re-compare every app. It never
// blocks; outside Run it does nothing.
func (e *Engine) Refresh() {
	e.repo.Refresh()
	e.mu.Lock()
	kick := e.kick
	e.mu.Unlock()
	if kick != nil {
		kick()
	}
}

// Reconcile fetches Git and runs one pass over every app (or the named
// ones) right now, waiting for it. Unknown names are an error. Per-app
// failures are in the statuses, not the error.
func (e *Engine) Reconcile(ctx context.Context, names ...string) error {
	e.freshReads()
	if err := e.loadHead(ctx, true); err != nil {
		return err
	}
	if len(names) == 0 {
		names = e.appNames()
	} else {
		for _, n := range names {
			if !e.known(n) {
				return e.unknownApp(n)
			}
		}
	}
	var g errgroup.Group
	g.SetLimit(e.opts.Workers)
	for _, n := range names {
		g.Go(func() error {
			e.reconcileApp(ctx, n, passOptions{heal: !e.opts.ReadOnly, prune: !e.opts.ReadOnly})
			return nil
		})
	}
	_ = g.Wait() // per-app failures are in the statuses
	return ctx.Err()
}

// known reports whether name is a declared App (valid or not).
func (e *Engine) known(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.apps.Find(name); ok {
		return true
	}
	_, ok := e.apps.FindInvalid(name)
	return ok
}

func (e *Engine) headShort() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.head.Short()
}

// unknownApp is the error for a name no App file at the head declares: it
// lists the apps that are, or says how to declare one when there are none.
func (e *Engine) unknownApp(name string) error {
	names := e.appNames()
	if len(names) == 0 {
		return fmt.Errorf("app %q is not declared: no App file in %s/ at %s; add .kdrift/%s.yaml (kind App, see README \"The App\") and commit it", name, app.Dir, e.headShort(), name)
	}
	return fmt.Errorf("app %q is not declared in %s/ at %s; known apps: %s", name, app.Dir, e.headShort(), strings.Join(names, ", "))
}

// appNames lists the apps the engine looks after at the current head.
func (e *Engine) appNames() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	add := func(n string) {
		if n != "" && e.wanted(n) {
			out = append(out, n)
		}
	}
	for _, a := range e.apps.Apps {
		add(a.Metadata.Name)
	}
	for _, inv := range e.apps.Invalid {
		add(inv.Name)
	}
	sort.Strings(out)
	return out
}

// wanted reports whether Options.Apps lets the engine look after name.
func (e *Engine) wanted(name string) bool {
	if len(e.opts.Apps) == 0 {
		return true
	}
	for _, n := range e.opts.Apps {
		if n == name {
			return true
		}
	}
	return false
}

// freshReads drops the one-shot list caches, so the next pass reads the
// cluster as it is now.
func (e *Engine) freshReads() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.clusters {
		c.lists.reset()
	}
}
