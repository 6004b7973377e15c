package engine

import (
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/status"
)

func ev(i int) status.Event {
	return status.Pruned{Base: status.Base{App: "a", Time: time.Unix(int64(i), 0)}}
}

// TestBusNeverBlocks: a subscriber nobody reads loses events (counted); a
// lossless one gets every event in order, even after cancel.
func TestBusNeverBlocks(t *testing.T) {
	b := newBus(2)
	slow, stopSlow := b.subscribe(false)
	all, stopAll := b.subscribe(true)
	for i := 0; i < 100; i++ {
		b.publish(ev(i)) // must not block with nobody reading
	}
	if got := b.dropped.Load(); got != 98 {
		t.Fatalf("dropped = %d, want 98", got)
	}
	stopAll()
	n := 0
	for e := range all {
		if e.When().Unix() != int64(n) {
			t.Fatalf("event %d out of order: %v", n, e.When())
		}
		n++
	}
	if n != 100 {
		t.Fatalf("lossless subscriber got %d events, want 100", n)
	}
	stopSlow()
	if got := len(drain(slow)); got != 2 {
		t.Fatalf("lossy subscriber kept %d, want its buffer of 2", got)
	}
	b.publish(ev(101)) // after cancel: no panic, nobody gets it
}

func drain(ch <-chan status.Event) []status.Event {
	var out []status.Event
	for e := range ch {
		out = append(out, e)
	}
	return out
}
