package charts_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"kdrift.dev/kdrift/engine/charts"
	"kdrift.dev/kdrift/internal/charttest"
)

// TestFetchServed: an artifact a cluster serves is read once, verified
// by its digest and kept by it (the next fetch makes no read); a digest
// that does not match, an archive over the budget (said by the status or
// sent), a digest not in sha256 form and a read that fails are errors
// that say so, and nothing is kept of them.
func TestFetchServed(t *testing.T) {
	archive := charttest.Package(t, podinfo)
	sum := sha256.Sum256(archive)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	var reads atomic.Int64
	serve := func(data []byte) func(context.Context) (io.ReadCloser, error) {
		return func(context.Context) (io.ReadCloser, error) {
			reads.Add(1)
			return io.NopCloser(bytes.NewReader(data)), nil
		}
	}
	ref := charts.Ref{Repo: "https://charts.example.org", Chart: "podinfo", Version: podinfo.Version}
	by := "the artifact of HelmChart flux-system/podinfo"
	f := &charts.Fetcher{CacheDir: t.TempDir(), MaxArchive: int64(len(archive)) + 10}
	ctx := context.Background()

	c, err := f.FetchServed(ctx, charts.Served{Ref: ref, Digest: digest, By: by, Open: serve(archive)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Archive, archive) || c.Digest != digest || c.By != by || c.FromCache {
		t.Fatalf("served chart: digest %s by %q from cache %v", c.Digest, c.By, c.FromCache)
	}
	c, err = f.FetchServed(ctx, charts.Served{Ref: ref, Digest: digest, By: by, Open: serve(nil)})
	if err != nil || !bytes.Equal(c.Archive, archive) || reads.Load() != 1 {
		t.Fatalf("a kept digest must be served with no read: %v, %d reads", err, reads.Load())
	}

	other := charttest.Package(t, charttest.Chart{Name: "podinfo", Version: "6.5.3"})
	wrong := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, want string
		s          charts.Served
	}{
		{"digest mismatch", "is not the status's " + wrong, charts.Served{Digest: wrong, Open: serve(other)}},
		{"status over budget", "over the chart budget", charts.Served{Digest: wrong, Size: 1 << 30, Open: serve(other)}},
		{"sent over budget", "more than the chart budget", charts.Served{Digest: wrong, Open: serve(append(bytes.Repeat([]byte{0}, len(archive)), archive...))}},
		{"digest form", `gives the digest "md5:x"`, charts.Served{Digest: "md5:x", Open: serve(other)}},
		{"read fails", "could not be read: forbidden", charts.Served{Digest: wrong, Open: func(context.Context) (io.ReadCloser, error) { return nil, errors.New("forbidden") }}},
	} {
		tc.s.Ref, tc.s.By = ref, by
		_, err := f.FetchServed(ctx, tc.s)
		var ce *charts.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), by) {
			t.Errorf("%s: want an error saying %q and naming the source, got %v", tc.name, tc.want, err)
		}
	}
	if _, err := f.FetchServed(ctx, charts.Served{Ref: ref, Digest: wrong, By: by, Open: serve(nil)}); err == nil {
		t.Fatal("a mismatched archive was kept")
	}
}
