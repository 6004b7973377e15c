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

// Engine is what a healer asks of the engine it makes a candidate: its
// passes and events (Refresh, SubscribeAll, SetMarks), the statuses it
// publishes (Declared, App) and the repository identity its Lease and
// AppStatuses are named by.
type Engine interface {
	engine.Runner
	engine.Reader
	engine.RepoInfo
}

// Options configure Run.
type Options struct {
	// Engine is the engine whose Options.MayWrite is Gate.Open.
	Engine Engine
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
	// Shards, when 2 or more, makes this one replica of a sharded
	// controller (leader.Sharder): it heals and publishes the Apps of the
	// shards it holds. The engine's Options.Serves must then be
	// Gate.Serves, which Start points at the replica's shards.
	Shards int
}

// Healer is a running candidate.
type Healer struct {
	opts    Options
	elector *leader.Elector
	sharder *leader.Sharder
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
	sharded := opts.Shards >= 2
	if sharded {
		if opts.Holder == "" {
			opts.Holder = leader.DefaultHolder()
		}
		s, err := leader.NewSharder(leader.ShardOptions{
			Client: opts.Client, Namespace: opts.Namespace, Identity: id, Holder: opts.Holder, Shards: opts.Shards, Settings: opts.Settings, KeepOnStop: opts.KeepOnStop,
			OnChanged: func(held []int) {
				opts.Log.Info("shards held changed: healing and publishing their Apps", "shards", held, "of", opts.Shards, "replicas", h.sharder.Members())
				// Compare (and heal) the Apps of a shard just taken; the
				// engine forgets those of a shard lost at its next look.
				e.Refresh()
				select {
				case started <- struct{}{}:
				default:
				}
			},
			OnError: func(err error) { opts.Log.Warn("shard leases", "err", err) },
		})
		if err != nil {
			return nil, err
		}
		h.sharder = s
	}
	el, err := leader.New(leader.Options{
		Client: opts.Client, Namespace: opts.Namespace, Identity: id, Holder: opts.Holder, Settings: opts.Settings, KeepOnStop: opts.KeepOnStop, Shards: opts.Shards,
		OnStarted: func() {
			if sharded {
				opts.Log.Info("holding the repository's Lease: this replica removes the statuses of Apps that left Git; shards can be taken", "lease", opts.Namespace+"/"+leader.LeaseName(id), "holder", h.elector.Holder(), "shards", opts.Shards)
				h.sharder.Poke()
			} else {
				opts.Log.Info("leading: this kdrift heals and publishes", "lease", opts.Namespace+"/"+leader.LeaseName(id), "holder", h.elector.Holder())
			}
			select {
			case started <- struct{}{}:
			default:
			}
			if !sharded {
				// Heal what drifted while nobody led.
				e.Refresh()
			}
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
	if sharded {
		opts.Gate.SetSharder(h.sharder)
	}
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
	if sharded {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.sharder.Run(elCtx)
		}()
	}
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

// Leading reports whether this process holds the Lease now; for a
// sharded replica, whether it holds a shard.
func (h *Healer) Leading() bool {
	if h.sharder != nil {
		return len(h.sharder.Held()) > 0
	}
	return h.elector.Leading()
}

// Sharder is the replica's shard table (nil unless sharded).
func (h *Healer) Sharder() *leader.Sharder { return h.sharder }

// mayPublish reports whether this process publishes App name's status:
// the leader, or the replica holding its shard.
func (h *Healer) mayPublish(name string) bool {
	if h.sharder != nil {
		return h.sharder.Serves(name)
	}
	return h.elector.Leading()
}

// Holder is this process's name in the Lease.
func (h *Healer) Holder() string { return h.elector.Holder() }

// Publisher is the AppStatus writer (for its write count).
func (h *Healer) Publisher() *publish.Publisher { return h.pub }

// changed sees AppStatus changes: a person's fetch request makes the
// leader fetch Git now.
func (h *Healer) changed(ch publish.Change) {
	if ch.FetchChanged && h.Leading() {
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
		rev, names := e.Declared()
		if all {
			h.pub.Seed(h.watcher.Hashes())
			for _, n := range names {
				if !h.mayPublish(n) {
					continue
				}
				if st, ok := e.App(n); ok {
					h.publish(ctx, st)
				}
			}
		}
		// Only the holder of the repository's Lease removes statuses
		// (every App's, sharded or not).
		if !h.elector.Leading() {
			return
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
			if !isStatus || !h.mayPublish(sc.App) {
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
