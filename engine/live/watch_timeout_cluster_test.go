package live_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/live"
)

// TestWatchKeepsAnInformerStillListing: a Watch that times out while the
// informer's first list is still running (a kind of 100,000 objects on a
// busy apiserver) leaves the informer running, so the next Watch waits
// for that list instead of starting it over, which at that size never
// ends.
func TestWatchKeepsAnInformerStillListing(t *testing.T) {
	cs := clientSet(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := cs.NewWatcher(ctx, make(chan live.Change, 64))
	w.SyncTimeout = time.Nanosecond
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	err := w.WatchTracked(ctx, cm)
	if err == nil || !strings.Contains(err.Error(), "still listing") {
		t.Fatalf("a Watch shorter than the list: %v, want the list still running", err)
	}
	if n := w.Informers(); n != 1 {
		t.Fatalf("after the timeout %d informers run, want the one still listing", n)
	}
	w.SyncTimeout = time.Minute
	if err := w.WatchTracked(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if n := w.Informers(); n != 1 {
		t.Fatalf("%d informers, want 1", n)
	}
}
