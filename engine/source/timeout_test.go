package source_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestHangingRemoteTimesOut: a remote that accepts the connection and
// never answers makes a clone fail, and a fetch of an existing cache
// clone fail, after the Git timeout with a *TimeoutError; the last fetched
// revision stays readable and LastFetchError says why.
func TestHangingRemoteTimesOut(t *testing.T) {
	ctx := context.Background()
	hole := gittest.BlackHole(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := source.Open(ctx, source.Options{Location: hole, CacheDir: t.TempDir(), Timeout: time.Second})
		var te *source.TimeoutError
		if !errors.As(err, &te) || te.Op != "clone" {
			t.Errorf("clone of a hanging remote: err = %v, want a clone *TimeoutError", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("clone of a hanging remote did not return: no timeout")
	}

	bare, work := remote(t)
	cache := t.TempDir()
	r, err := source.Open(ctx, source.Options{Location: bare.URL(), CacheDir: cache, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The remote starts hanging: point the cache clone's origin at the hole.
	cfg, err := r.Git().Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Remotes[source.RemoteName].URLs = []string{hole}
	if err := r.Git().SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	err = r.Fetch(ctx)
	var te *source.TimeoutError
	var re *source.RemoteError
	if !errors.As(err, &te) || !errors.As(err, &re) {
		t.Fatalf("fetch from a hanging remote: err = %v, want a *RemoteError wrapping a *TimeoutError", err)
	}
	if r.LastFetchError() == nil {
		t.Fatal("LastFetchError must say the remote hangs")
	}
	rev, err := r.Head(ctx)
	if err != nil || rev.Hash != work.Git("rev-parse", "HEAD") {
		t.Fatalf("the last fetched revision must stay readable: %+v %v", rev, err)
	}
}
