// Package healer makes an engine one candidate for its repository's
// healer: it takes part in the Lease election (engine/leader), opens the
// engine's write gate only while it leads, publishes the Apps' statuses as
// AppStatus objects while it leads (engine/publish), and fetches Git at
// once when a person's action asks for it.
//
// The package never prints; it logs to the slog.Logger it is given.
package healer

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/engine/status"
)

// Options configure Run.
type Options struct {
	// Engine is the engine whose Options.MayWrite is Gate.Open.
	Engine *engine.Engine
	// Gate is the engine's write gate; Run sets it to its Elector.
	Gate *leader.Gate
	// Client and Dynamic reach the cluster that holds the Lease and the
	// AppStatuses.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Namespace holds them (default leader.DefaultNamespace).
	Namespace string
	// Settings are the Lease's timings (default leader.DefaultSettings).
	Settings leader.Settings
	// Holder names this process in the Lease (default
	// leader.DefaultHolder).
	Holder string
	// Log is told when leading starts and stops, and what failed.
	Log *slog.Logger
	// KeepOnStop leaves the Lease held when ctx ends (leader.Options).
	KeepOnStop bool
}

// Healer is a running candidate.
type Healer struct {
	opts    Options
	elector *leader.Elector
	pub     *publish.Publisher
	watcher *publish.Watcher

	done chan struct{}
}

// Start takes part in the election and publishes while leading, until ctx
// ends; Wait then waits for the Lease to be released. Call it after the
// engine is made; the engine may Run before or after.
func Start(ctx context.Context, opts Options) (*Healer, error) {
	if opts.Namespace == "" {
		opts.Namespace = leader.DefaultNamespace
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	e := opts.Engine
	id := e.RepoIdentity()
	h := &Healer{opts: opts, done: make(chan struct{}),
		pub:     publish.NewPublisher(opts.Dynamic, opts.Namespace, id),
		watcher: publish.NewWatcher(opts.Dynamic, opts.Namespace, id),
	}
	started := make(chan struct{}, 1)
	el, err := leader.New(leader.Options{
		Client: opts.Client, Namespace: opts.Namespace, Identity: id, Holder: opts.Holder, Settings: opts.Settings, KeepOnStop: opts.KeepOnStop,
		OnStarted: func() {
			opts.Log.Info("leading: this kdrift heals and publishes", "lease", opts.Namespace+"/"+leader.LeaseName(id), "holder", h.elector.Holder())
			select {
			case started <- struct{}{}:
			default:
			}
			// Heal what drifted while nobody led.
			e.Refresh()
		},
		OnStopped: func() {
			opts.Log.Info("stopped leading: healing stops, comparing goes on", "lease", opts.Namespace+"/"+leader.LeaseName(id))
		},
		OnError: func(err error) { opts.Log.Warn("leader election", "err", err) },
	})
	if err != nil {
		return nil, err
	}
	h.elector = el
	opts.Gate.Set(el)
	// Each App's newest applied revision lives on its AppStatus, so that
	// a restarted or new leader never applies older state.
	e.SetMarks(publish.NewMarks(opts.Dynamic, opts.Namespace, id))
	// The watch first: a new leader seeds the publisher from it and
	// rewrites nothing that is already as it would write it.
	if !h.watcher.Run(ctx, h.changed) {
		return nil, ctx.Err()
	}
	events, stop := e.SubscribeAll()
	elCtx, cancelEl := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		el.Run(elCtx)
	}()
	go func() {
		defer wg.Done()
		h.publishLoop(ctx, events, started)
	}()
	go func() {
		<-ctx.Done()
		stop()
		for range events {
		}
		// Release only once nothing publishes any more.
		cancelEl()
		wg.Wait()
		close(h.done)
	}()
	return h, nil
}

// Wait waits, after Start's ctx ended, until the Lease is released.
func (h *Healer) Wait() { <-h.done }

// Leading reports whether this process holds the Lease now.
func (h *Healer) Leading() bool { return h.elector.Leading() }

// Holder is this process's name in the Lease.
func (h *Healer) Holder() string { return h.elector.Holder() }

// Publisher is the AppStatus writer (for its write count).
func (h *Healer) Publisher() *publish.Publisher { return h.pub }

// changed sees AppStatus changes: a person's fetch request makes the
// leader fetch Git now.
func (h *Healer) changed(ch publish.Change) {
	if ch.FetchChanged && h.elector.Leading() {
		h.opts.Log.Info("fetching Git now: a person pushed", "app", ch.App, "commit", ch.Fetch)
		h.opts.Engine.Refresh()
	}
}

// publishLoop writes each App's status when it changes, while leading; on
// taking the Lease it publishes every App and removes the statuses of
// Apps that left Git.
func (h *Healer) publishLoop(ctx context.Context, events <-chan status.Event, started <-chan struct{}) {
	e := h.opts.Engine
	lastRev := ""
	sweep := func(all bool) {
		if !h.elector.Leading() {
			return
		}
		rev, names := e.Declared()
		if all {
			h.pub.Seed(h.watcher.Hashes())
			for _, n := range names {
				if st, ok := e.App(n); ok {
					h.publish(ctx, st)
				}
			}
		}
		if rev != "" && (all || rev != lastRev) {
			lastRev = rev
			if n, err := h.pub.Prune(ctx, names); err != nil && ctx.Err() == nil {
				h.opts.Log.Warn("removing the statuses of Apps that left Git", "err", err)
			} else if n > 0 {
				h.opts.Log.Info("removed the statuses of Apps that left Git", "count", n)
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-started:
			sweep(true)
		case ev, ok := <-events:
			if !ok {
				return
			}
			sc, isStatus := ev.(status.AppStatusChanged)
			if !isStatus || !h.elector.Leading() {
				continue
			}
			if _, names := e.Declared(); slices.Contains(names, sc.App) {
				h.publish(ctx, sc.Status)
			}
			sweep(false)
		}
	}
}

func (h *Healer) publish(ctx context.Context, st status.AppStatus) {
	if _, err := h.pub.Publish(ctx, st); err != nil && ctx.Err() == nil {
		h.opts.Log.Warn("publishing an App's status", "app", st.Name, "err", err)
	}
}
