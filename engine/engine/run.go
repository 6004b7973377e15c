package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// Run keeps every app reconciled until ctx ends: a Git change re-compares
// all apps, a live change (from informers) re-compares the apps it
// touches after a short debounce, and a periodic resync catches anything
// missed. Apps heal and prune as their policies allow (never with
// ReadOnly). One failing app never stops the others. Every goroutine Run
// starts has stopped when it returns.
func (e *core) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Named, so client-go's workqueue metrics (when a provider is set)
	// report it as "kdrift".
	queue := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: "kdrift"})
	changes := make(chan live.Change, 1024)

	e.mu.Lock()
	if e.watchCtx != nil {
		e.mu.Unlock()
		return errors.New("engine: Run is already running")
	}
	e.watchCtx, e.changes = ctx, changes
	e.clusters = map[string]*cluster{} // rebuilt with informers
	e.kick = func(names ...string) {
		if len(names) == 0 {
			names = e.appNames()
		}
		for _, n := range names {
			queue.Add(n)
		}
	}
	// The queue has client-go's dirty-mark semantics: an app added while
	// its pass runs is passed again right after, never dropped.
	e.later = func(name string) { queue.AddAfter(name, e.opts.Debounce) }
	e.retry = func(name string, d time.Duration) { queue.AddAfter(name, d) }
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.watchCtx, e.changes, e.kick, e.later, e.retry = nil, nil, nil, nil, nil
		e.clusters = map[string]*cluster{}
		e.mu.Unlock()
	}()

	var wg sync.WaitGroup
	defer wg.Wait()
	defer queue.ShutDown()

	// Fetch first: the first pass compares with the upstream as it is now,
	// not as some earlier run left it. A failure is kept by the Repo and
	// shown per app ("Git unreachable since …"); the remote-tracking ref as
	// last fetched is used, never the local branch. The Repo bounds every
	// fetch by the Git timeout (KDRIFT_GIT_TIMEOUT).
	_ = e.repo.Fetch(ctx)

	// Git: every new head re-compares every app.
	revs := e.repo.Watch(ctx, e.opts.FetchInterval)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range revs {
			if err := e.loadHead(ctx, false); err != nil {
				if ctx.Err() != nil {
					continue // stopping: the read was cut short, Git is fine
				}
				e.bus.publish(status.ErrorEvent{Base: status.Base{Time: e.opts.Now()}, Message: err.Error()})
				continue
			}
			if err := e.checkContext(); err != nil {
				e.bus.publish(status.ErrorEvent{Base: status.Base{Time: e.opts.Now()}, Message: err.Error()})
			}
			e.kick()
		}
	}()

	// Live changes: the apps that render or track the object, debounced.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case ch := <-changes:
				for _, n := range e.appsTouching(ch) {
					queue.AddAfter(n, e.opts.Debounce)
				}
			}
		}
	}()

	// Safety net.
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(e.opts.Resync)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				e.kick()
			}
		}
	}()

	for i := 0; i < e.opts.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				name, shutdown := queue.Get()
				if shutdown {
					return
				}
				switch {
				case ctx.Err() != nil:
				case e.opts.Serves != nil && !e.opts.Serves(name):
					// Another replica's shard: what this one knew is stale.
					e.forget(name)
				default:
					e.reconcileApp(ctx, name, passOptions{heal: !e.opts.ReadOnly, prune: !e.opts.ReadOnly})
				}
				queue.Done(name)
			}
		}()
	}

	// The heartbeat proves the loop alive and the engine's lock free.
	beat := time.NewTicker(HeartbeatInterval)
	defer beat.Stop()
	e.opts.Observer.Heartbeat(e.opts.Now())
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-beat.C:
			// An empty critical section on purpose: a deadlock on the
			// engine's lock stops the heartbeat.
			e.mu.Lock()
			e.mu.Unlock() //nolint:staticcheck // SA2001: see above
			e.opts.Observer.Heartbeat(e.opts.Now())
		}
	}
}

// requeue asks Run (when it runs) for another pass over app name after
// the debounce.
func (e *core) requeue(name string) {
	e.mu.Lock()
	later := e.later
	e.mu.Unlock()
	if later != nil {
		later(name)
	}
}

// appsTouching lists the apps whose last pass rendered or tracked the
// object a change is about, in that context.
//
// A Resynced change names a kind (and namespace) only: it touches every
// app with an object of that kind there.
func (e *core) appsTouching(ch live.Change) []string {
	key := refKey(ch.Ref)
	kind := ch.Ref.Group + "/" + ch.Ref.Kind + "/"
	if ch.Ref.Namespace != "" {
		kind += ch.Ref.Namespace + "/"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for name, st := range e.states {
		if st.context != ch.Context {
			continue
		}
		if ch.Ref.Name != "" {
			if st.refs[key] {
				out = append(out, name)
			}
			continue
		}
		for k := range st.refs {
			if strings.HasPrefix(k, kind) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}
