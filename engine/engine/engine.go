// Package engine is kdrift's reconcile engine: it keeps comparing Git (the
// desired state) with the clusters (the facts), heals drift when an App
// asks for it and is not frozen, prunes what left Git, and publishes typed
// events for the UI, the CLI and the controller.
//
// A pass over one app runs as named phases, each in its own file: source
// (the App at the current revision), render, compare, heal and prune; one
// deferred block always records the app's status and publishes it.
//
// Callers see the engine through small interfaces (roles.go): Runner,
// Reader, Actor, Keys and RepoInfo; New's Engine is one of each.
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
	"kdrift.dev/kdrift/engine/sops"
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
	// RenderCacheDir, when set, keeps renders between processes there
	// (see render.Renderer.SetDiskCache and render.DefaultCacheDir): a
	// command run again on the same commit does not render again. Empty:
	// renders are kept in memory only.
	RenderCacheDir string
	// DiscoverCacheDir, when set, keeps between processes what finding
	// the apps rendered (the apps other apps generate), by Git tree hash
	// (source.Options.DiscoverCacheDir); empty keeps it in memory.
	DiscoverCacheDir string
	// FetchFresh, when > 0, skips the fetch of a pass when a fetch of the
	// same remote finished less than FetchFresh ago, in this process or
	// another (source.Options.FetchFresh); one-shot commands set it, a
	// long-running engine fetches every time.
	FetchFresh time.Duration
	// Kubeconfig is the kubeconfig file (default: $KUBECONFIG, then
	// ~/.kube/config).
	Kubeconfig string
	// Context, when set, selects: the engine looks after only the Apps
	// whose destination is that kubeconfig context (an App with no
	// destination context counts as the kubeconfig's current context). It
	// never redirects an App to another cluster.
	Context string
	// Apps limits the engine to these App names (default: all).
	Apps []string
	// ClusterPath is the Flux cluster folder to follow
	// (clusters/production): only the Kustomizations and HelmReleases it
	// reaches are apps. Empty: the destination cluster's live
	// flux-system Kustomization names it when Flux runs there and reads
	// this repository; else every Flux declaration of the tree is one.
	ClusterPath string
	// ChartRepos are Helm repositories and OCI locations kdrift may fetch
	// charts from beside those the cluster's live Flux sources name
	// (--chart-repo); a committed file never adds one.
	ChartRepos []string
	// ChartCacheDir keeps fetched chart archives between processes,
	// content-addressed (charts.Fetcher.CacheDir); empty keeps them in
	// memory only.
	ChartCacheDir string
	// ReadOnly is the one switch that keeps the engine from writing to a
	// cluster: no heal, hand-over (release), prune or apply from any path,
	// Sync included (it fails with ErrReadOnly unless it is a dry run),
	// whatever the Apps say. `kdrift diff` and `kdrift status` set it, and
	// so do the UI's --readonly flag and `readonly: true` in its config.
	ReadOnly bool
	// GitTimeout bounds each Git fetch and clone (default:
	// $KDRIFT_GIT_TIMEOUT, then source.DefaultGitTimeout, 30s).
	GitTimeout time.Duration
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
	// Keys are the age identities SOPS files are decrypted with (nil:
	// none; ui/cli loads them with sops.LoadKeyring, the controller from
	// its decryption Secret). See SetKeys.
	Keys *sops.Keyring
	// Clients, when set, are the clients per kubeconfig context the
	// engine uses (NewClients makes those it would make itself): a
	// command that reaches a cluster beside the engine shares their
	// connections. Nil: New makes them.
	Clients *live.Clients
	// Live, Diff, Apply and Fight tune the parts (defaults: their
	// DefaultOptions, except Live's rate limit: 300 QPS, burst 600).
	Live  live.Options
	Diff  diff.Options
	Apply apply.Options
	Fight fight.Options
	// Observer is told step timings, request outcomes and Run's
	// heartbeat (default: nobody).
	Observer Observer
	// MayWrite, when set, is asked right before every write of a pass the
	// engine started itself (self-heal, its hand-over, prune): false skips
	// the write and every later one of that pass, while comparing goes on.
	// The controller and the UI set it to their Lease (engine/leader), so
	// that only the Lease's holder heals and losing the Lease stops writes
	// at once; a sharded controller's gate answers per App (its shard).
	// A person's Sync is not asked (it is an explicit request). Nil:
	// always true.
	MayWrite func(app string) bool
	// Serves, when set, says which Apps Run looks after now (a sharded
	// controller's replica: the Apps of the shards it holds). Run passes
	// no other App and forgets what it knew of one it stopped serving, so
	// Apps lists only those served. Reconcile and Sync are not filtered.
	// Nil: every App.
	Serves func(app string) bool
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

// NewClients makes the clients per kubeconfig context New makes for opts
// when its Clients is nil, for a caller that gives them to the engine
// (Options.Clients) and reaches the same clusters beside it.
func NewClients(opts Options) *live.Clients {
	opts.defaults()
	return live.NewClients(opts.Kubeconfig, opts.Live)
}

// Stats counts what the engine did since it started.
type Stats struct {
	// Passes is how many app passes ran.
	Passes int64
	// DryRuns is how many server-side dry-run applies were sent; a pass
	// with nothing changed sends none.
	DryRuns int64
	// LocalCompares is how many comparisons were decided without a
	// request, from the live object's managedFields (status.DecidedLocal).
	LocalCompares int64
	// Applies counts objects applied (heal and sync).
	Applies int64
	// DroppedEvents counts events a slow subscriber did not take.
	DroppedEvents int64
}

// Engine is the engine New makes, as its roles: running (Runner),
// reading (Reader), acting on a person's request (Actor), decryption keys
// (Keys) and the repository it reads (RepoInfo). A caller hands on the
// role it needs (e.Reader) or the Engine, to a function that asks for an
// interface of the few it uses. Every role's methods are safe for
// concurrent use.
type Engine struct {
	Runner
	Reader
	Actor
	Keys
	RepoInfo
}

// core compares Git with the clusters and heals: the one value behind
// every role of an Engine.
type core struct {
	opts Options
	repo *source.Repo
	// repoID is the repository identity tracking annotations carry
	// (source.Repo.Identity).
	repoID   string
	renderer *render.Renderer
	clients  *live.Clients
	fights   *fight.Detector
	bus      *bus
	// charts fetches the remote charts of apps (remotechart.go).
	charts *remoteCharts

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
	// later queues one app again after the debounce; nil outside Run.
	later func(name string)
	// retry is Run's: another pass over an app after a delay.
	retry func(name string, d time.Duration)
	// localApps (guarded by mu) are the Apps of the local branch when it
	// is ahead of the upstream: only their freezes count.
	localApps app.LoadResult
	// appSource (guarded by mu) says where the app list came from (see
	// AppSource).
	appSource string
	// argoSeen (guarded by mu) sums up the live Argo CD Applications of
	// the last read; nil when none were read. noApps (guarded by mu) is
	// why the last read found no app (see NoApps).
	argoSeen *LiveElsewhere
	noApps   *NoApps
	// channel (guarded by mu) is the incident channel as last read, and
	// channelReported the problems with it already reported.
	channel         channelState
	channelReported map[string]bool
	// marks (guarded by mu), when set, keeps each App's newest applied
	// revision where a restarted healer reads it (see SetMarks).
	marks Marks

	passes, dryRuns, localCompares, applies atomic.Int64
	// fleetReads, once a one-shot Reconcile covered more than one app,
	// makes one-shot reads list each kind's tracked objects once for
	// every app (lists.go).
	fleetReads atomic.Bool

	// fluxOnce reads the live Flux objects once (resolveFlux);
	// fluxNote (guarded by mu) says why they were not used, if so;
	// fluxRepos (guarded by mu) are the URLs and refs of the live
	// GitRepositories that read found, by NAMESPACE/NAME (nil when not
	// read).
	fluxOnce  sync.Once
	fluxNote  string
	fluxRepos *app.FluxCluster
	// earlyApps (guarded by mu) is the live Argo CD Applications list
	// Warm started, for the first head load to take (nil once taken).
	earlyApps chan liveApps
	// applied (guarded by mu) is, by "KIND/NAMESPACE/NAME" of a live
	// Argo CD or Flux declaration, the revision its controller last
	// applied (app.AppliedReader), as read at the last head load.
	applied map[string]string
	// appliedAt (guarded by mu) is, by the same keys, when the
	// controller finished applying it, where the declaration says
	// (app.AppliedTimeReader).
	appliedAt map[string]time.Time

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
	// An unreadable kubeconfig maps no destination.server: the apps that
	// name one say why.
	clusters, clustersErr := live.ContextServers(opts.Kubeconfig)
	repo, err := source.Open(context.Background(), source.Options{Location: opts.Repo, Branch: opts.Branch, CacheDir: opts.CacheDir, Timeout: opts.GitTimeout, OnFetch: func(took time.Duration, err error) {
		opts.Observer.Timed(PhaseFetch, "", took, err)
	}, Clusters: clusters, ClustersErr: clustersErr, Flux: flagCluster(opts.ClusterPath), DiscoverCacheDir: opts.DiscoverCacheDir, FetchFresh: opts.FetchFresh})
	var remote *source.RemoteError
	if err != nil && !(errors.As(err, &remote) && repo != nil) {
		return nil, err
	}
	repoID, err := repo.Identity()
	if err != nil {
		return nil, err
	}
	if opts.Clients == nil {
		opts.Clients = NewClients(opts)
	}
	e := &core{
		opts:     opts,
		repo:     repo,
		repoID:   repoID,
		renderer: render.NewRenderer(),
		clients:  opts.Clients,
		fights:   fight.New(opts.Fight),
		bus:      newBus(opts.EventBuffer),
		charts:   newRemoteCharts(opts),
		states:   map[string]*appState{},
		clusters: map[string]*cluster{},
	}
	e.renderer.SetKeys(opts.Keys)
	e.renderer.SetDiskCache(opts.RenderCacheDir, repoID)
	return &Engine{Runner: e, Reader: e, Actor: e, Keys: e, RepoInfo: e}, nil
}

// SetKeys replaces the age identities SOPS files are decrypted with; the
// next pass of every app renders again with them.
func (e *core) SetKeys(keys *sops.Keyring) {
	e.renderer.SetKeys(keys)
}

// Stats returns the engine's counters.
func (e *core) Stats() Stats {
	return Stats{Passes: e.passes.Load(), DryRuns: e.dryRuns.Load(), LocalCompares: e.localCompares.Load(), Applies: e.applies.Load(), DroppedEvents: e.bus.dropped.Load()}
}

// Apps returns the status of every app, sorted by name. An app not
// compared yet has Sync Unknown.
func (e *core) Apps() []status.AppStatus {
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
func (e *core) App(name string) (status.AppStatus, bool) {
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
func (e *core) Inputs(app string) []string {
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

// ReadsFrom is the location of the repository the engine reads, with
// any password or token redacted (it is for showing), and its branch.
func (e *core) ReadsFrom() (location, branch string) {
	return e.repo.Location(), e.repo.Branch()
}

// FetchError is the error of the last Git fetch, nil after a successful
// one (source.Repo.LastFetchError).
func (e *core) FetchError() error { return e.repo.LastFetchError() }

// FetchSkipped describes the last fetch when it was skipped because a
// fetch of the same remote was fresh (Options.FetchFresh); the zero value
// when it went to the remote.
func (e *core) FetchSkipped() source.FetchSkip { return e.repo.FetchSkipped() }

// RepoIdentity is the repository identity the engine's tracking
// annotations carry (apply.AnnotationRepo).
func (e *core) RepoIdentity() string { return e.repoID }

// Refresh asks Run to fetch Git now and re-compare every app. It never
// blocks; outside Run it does nothing.
func (e *core) Refresh() {
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
func (e *core) Reconcile(ctx context.Context, names ...string) error {
	e.freshReads()
	if err := e.loadHead(ctx, true); err != nil {
		return err
	}
	if len(names) == 0 {
		if err := e.checkContext(); err != nil {
			return err
		}
		names = e.appNames()
	} else {
		for _, n := range names {
			if !e.known(n) {
				return e.unknownApp(n)
			}
			if err := e.selected(n); err != nil {
				return err
			}
		}
	}
	if len(names) > 1 {
		e.fleetReads.Store(true)
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
func (e *core) known(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.apps.Find(name); ok {
		return true
	}
	_, ok := e.apps.FindInvalid(name)
	return ok
}

// selected fails when --context leaves app name out.
func (e *core) selected(name string) error {
	if e.opts.Context == "" {
		return nil
	}
	e.mu.Lock()
	a, ok := e.apps.Find(name)
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("app %s is invalid, so --context %s cannot tell whether it is its destination; fix the App or drop --context", name, e.opts.Context)
	}
	if e.inContext(a.Spec.Destination.Context) {
		return nil
	}
	dest := a.Spec.Destination.Context
	if dest == "" {
		dest = e.currentContext() + " (the current context)"
	}
	return fmt.Errorf("app %s: its destination is context %s, not %s (--context selects Apps, it does not redirect them)", name, dest, e.opts.Context)
}

func (e *core) headShort() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.head.Short()
}

// unknownApp is the error for a name no App file at the head declares: it
// lists the apps that are, or says how to declare one when there are none.
func (e *core) unknownApp(name string) error {
	names := e.appNames()
	if len(names) == 0 {
		return fmt.Errorf("app %q is not declared: no App file in %s/ at %s; add .kdrift/%s.yaml (kind App, see README \"The App\") and commit it", name, app.Dir, e.headShort(), name)
	}
	return fmt.Errorf("app %q is not declared in %s/ at %s; known apps: %s", name, app.Dir, e.headShort(), strings.Join(names, ", "))
}

// appNames lists the apps the engine looks after at the current head.
func (e *core) appNames() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, a := range e.apps.Apps {
		if n := a.Metadata.Name; n != "" && e.wanted(n) && e.inContext(a.Spec.Destination.Context) {
			out = append(out, n)
		}
	}
	// An invalid App has no destination to select by: it is listed (with
	// its error) only when no context was asked for.
	if e.opts.Context == "" {
		for _, inv := range e.apps.Invalid {
			if inv.Name != "" && e.wanted(inv.Name) {
				out = append(out, inv.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// inContext reports whether an App whose destination context is dest is
// selected by Options.Context; an empty dest is the kubeconfig's current
// context.
func (e *core) inContext(dest string) bool {
	if e.opts.Context == "" || dest == e.opts.Context {
		return true
	}
	return dest == "" && e.currentContext() == e.opts.Context
}

// currentContext is the kubeconfig's current context; "" when the
// kubeconfig cannot be read (the pass then reports why).
func (e *core) currentContext() string {
	cs, err := e.clients.For("")
	if err != nil {
		return ""
	}
	return cs.Context
}

// NoAppsInContextError says that no App's destination is the context
// --context selected; Used lists the contexts the Apps do name ("" is the
// current context).
type NoAppsInContextError struct {
	Context string
	Used    []string
}

// Error names the context and the contexts the Apps use.
func (e *NoAppsInContextError) Error() string {
	used := make([]string, 0, len(e.Used))
	for _, c := range e.Used {
		if c == "" {
			c = "(the current context)"
		}
		used = append(used, c)
	}
	return fmt.Sprintf("context %s: no App has it as its destination (--context selects Apps, it does not redirect them); the Apps use: %s", e.Context, strings.Join(used, ", "))
}

// checkContext fails with a *NoAppsInContextError when Options.Context
// selects none of the declared Apps.
func (e *core) checkContext() error {
	if e.opts.Context == "" {
		return nil
	}
	e.mu.Lock()
	apps := e.apps.Apps
	e.mu.Unlock()
	if len(apps) == 0 {
		return nil
	}
	cur := e.currentContext()
	seen := map[string]bool{}
	var used []string
	for _, a := range apps {
		d := a.Spec.Destination.Context
		if d == e.opts.Context || (d == "" && cur == e.opts.Context) {
			return nil
		}
		if d == "" && cur != "" {
			d = cur
		}
		if !seen[d] {
			seen[d] = true
			used = append(used, d)
		}
	}
	sort.Strings(used)
	return &NoAppsInContextError{Context: e.opts.Context, Used: used}
}

// wanted reports whether Options.Apps lets the engine look after name.
func (e *core) wanted(name string) bool {
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
func (e *core) freshReads() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.clusters {
		c.lists.reset()
	}
}
