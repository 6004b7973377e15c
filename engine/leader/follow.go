package leader

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Follower follows a repository's Lease for a viewer that shows what the
// holder publishes (an attached terminal), and says when the holder is
// gone.
type Follower struct {
	now  func() time.Time
	stop context.CancelFunc

	mu sync.Mutex
	// cur is the Lease as last seen, seen when this process last saw it
	// renewed or taken (its own clock).
	cur  Observation
	seen time.Time
	// went is the holder that is gone, at goneAt.
	went   Observation
	goneAt time.Time
	gone   chan struct{}
	poke   chan struct{}
}

// Follow watches a repository's Lease (one watch, as Watch) from first,
// an Observation of a live holder, until ctx ends. The holder is gone
// when the Lease is released or deleted, or when nobody renews it within
// its duration counted on this process's clock from when this process
// last saw it renewed (as client-go's election counts, so the holder's
// clock and this one need not agree; a watch cut off from the apiserver
// for that long counts as gone too). A new holder that takes the Lease
// before it expires is followed instead. A sharded controller's Lease
// (Observation.Shards) is given twice its duration, released or not: its
// replicas pass it on among themselves. Stop ends the watch sooner.
func Follow(ctx context.Context, client kubernetes.Interface, namespace, identity string, first Observation) *Follower {
	ctx, cancel := context.WithCancel(ctx)
	f := newFollower(ctx, first)
	f.stop = cancel
	go Watch(ctx, client, namespace, identity, f.observe)
	return f
}

// Stop ends the watch (once the holder is gone, nothing more is learnt
// from it).
func (f *Follower) Stop() {
	if f.stop != nil {
		f.stop()
	}
}

// newFollower follows first, fed by observe, until ctx ends.
func newFollower(ctx context.Context, first Observation) *Follower {
	f := &Follower{now: time.Now, cur: first, gone: make(chan struct{}), poke: make(chan struct{}, 1)}
	f.seen = f.now()
	go f.expire(ctx)
	return f
}

// observe takes a new state of the Lease.
func (f *Follower) observe(o Observation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isGone() {
		return
	}
	if o.Holder == "" {
		if f.cur.Shards > 1 {
			// A replica of a sharded controller released it: another
			// takes it at its next try, and the shards heal meanwhile.
			return
		}
		f.markGone()
		return
	}
	if o.Holder != f.cur.Holder || !o.Renewed.Equal(f.cur.Renewed) || o.Duration != f.cur.Duration {
		f.cur, f.seen = o, f.now()
		select {
		case f.poke <- struct{}{}:
		default:
		}
	}
}

// expire marks the holder gone when its Lease was not renewed in time.
func (f *Follower) expire(ctx context.Context) {
	for {
		f.mu.Lock()
		if f.isGone() {
			f.mu.Unlock()
			return
		}
		window := f.cur.Duration
		if f.cur.Shards > 1 {
			// Another replica takes the Lease of a dead one within its
			// duration; the shards' holders heal and publish meanwhile.
			window *= 2
		}
		left := f.seen.Add(window).Sub(f.now())
		if left <= 0 {
			f.markGone()
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-f.poke:
			t.Stop()
		case <-t.C:
		}
	}
}

// markGone is called with mu held.
func (f *Follower) markGone() {
	f.went, f.goneAt = f.cur, f.now()
	close(f.gone)
}

func (f *Follower) isGone() bool {
	select {
	case <-f.gone:
		return true
	default:
		return false
	}
}

// Current is the Lease as last seen.
func (f *Follower) Current() Observation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

// Gone is closed once the followed holder is gone.
func (f *Follower) Gone() <-chan struct{} { return f.gone }

// Went is the holder that is gone and when this process found out; zero
// before Gone is closed.
func (f *Follower) Went() (Observation, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.went, f.goneAt
}
