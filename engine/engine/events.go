package engine

import (
	"sync"
	"sync/atomic"

	"kdrift.dev/kdrift/engine/status"
)

// bus fans events out to subscribers without ever blocking the engine:
// a buffered subscriber that falls behind loses events (counted); a
// lossless one queues them without bound.
type bus struct {
	size    int
	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	dropped atomic.Int64
}

type subscriber struct {
	ch chan status.Event
	// lossless subscribers queue in pending and a goroutine drains it.
	lossless bool
	mu       sync.Mutex
	pending  []status.Event
	wake     chan struct{}
	// flush, closed by cancel, tells the drain goroutine to deliver
	// what is queued and close ch.
	flush chan struct{}
}

func newBus(size int) *bus {
	return &bus{size: size, subs: map[*subscriber]struct{}{}}
}

// Subscribe returns a channel of every event from now on and a function
// that ends the subscription and closes the channel. A subscriber that
// does not keep up loses events rather than slowing the engine;
// Stats().DroppedEvents counts them.
func (e *core) Subscribe() (<-chan status.Event, func()) {
	return e.bus.subscribe(false)
}

// SubscribeAll is Subscribe for a listener that must see every event (the
// controller's JSON log): events queue in memory while it is slow; the
// engine still never waits for it. After cancel, the channel delivers
// what was queued and then closes: keep reading until it does.
func (e *core) SubscribeAll() (<-chan status.Event, func()) {
	return e.bus.subscribe(true)
}

func (b *bus) subscribe(lossless bool) (<-chan status.Event, func()) {
	s := &subscriber{ch: make(chan status.Event, b.size), lossless: lossless, wake: make(chan struct{}, 1), flush: make(chan struct{})}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	if lossless {
		go s.drain()
	}
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, s)
			b.mu.Unlock()
			if lossless {
				close(s.flush)
			} else {
				close(s.ch)
			}
		})
	}
	return s.ch, cancel
}

// drain moves queued events to the channel in order; after flush it
// delivers the rest and closes the channel.
func (s *subscriber) drain() {
	for {
		s.mu.Lock()
		batch := s.pending
		s.pending = nil
		s.mu.Unlock()
		for _, ev := range batch {
			s.ch <- ev
		}
		select {
		case <-s.wake:
		case <-s.flush:
			s.mu.Lock()
			batch := s.pending
			s.pending = nil
			s.mu.Unlock()
			for _, ev := range batch {
				s.ch <- ev
			}
			close(s.ch)
			return
		}
	}
}

// publish hands ev to every subscriber without blocking.
func (b *bus) publish(ev status.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.lossless {
			s.mu.Lock()
			s.pending = append(s.pending, ev)
			s.mu.Unlock()
			select {
			case s.wake <- struct{}{}:
			default:
			}
			continue
		}
		select {
		case s.ch <- ev:
		default:
			b.dropped.Add(1)
		}
	}
}
