package charts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"
	"strings"
	"time"

	"kdrift.dev/kdrift/internal/privfile"
)

// Served is a chart archive a cluster already holds and serves: the
// artifact of a live Flux source (status.artifact), which
// source-controller fetched with the source's own credentials. Open reads
// it (the caller decides how: kdrift goes through the apiserver's service
// proxy); FetchServed bounds and verifies what it reads.
type Served struct {
	// Ref is the chart the archive is, for messages and the Chart.
	Ref Ref
	// Digest is the archive's "sha256:<64 hex>", as the source's status
	// gives it: what is read must have it.
	Digest string
	// Size is the archive's size as the status gives it (0: not given).
	Size int64
	// By says who serves it, for the Chart and messages.
	By string
	// Open starts reading the archive.
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// FetchServed returns s's archive: from the content-addressed cache when
// it holds s.Digest (no request), else read through s.Open within the
// Fetcher's time limit and archive budget, verified by its digest and
// kept. No Location is checked: Open reaches no host a repository names.
func (f *Fetcher) FetchServed(ctx context.Context, s Served) (*Chart, error) {
	hexsum, ok := strings.CutPrefix(s.Digest, "sha256:")
	if !ok || !sha256Digest.MatchString(s.Digest) {
		return nil, fail(s.Ref, nil, "fetch it from its repository instead", "%s gives the digest %q, not sha256:<64 hex>", s.By, s.Digest)
	}
	max := limit(f.MaxArchive, defaultMaxArchive)
	if s.Size > max {
		return nil, fail(s.Ref, nil, "raise the chart budget, or fetch it from its repository", "%s is %d bytes, over the chart budget of %d", s.By, s.Size, max)
	}
	c := f.cache()
	if ch := c.chart(s.Ref, s.Digest); ch != nil {
		ch.By, ch.FromCache = s.By, false // a digest's content never changes
		return ch, nil
	}
	fctx, cancel, timeout := f.bounded(ctx)
	defer cancel()
	body, err := s.Open(fctx)
	if err != nil {
		e := fail(s.Ref, err, "check that kdrift may read it (services/proxy on source-controller), or fetch it from its repository", "%s could not be read: %v", s.By, err)
		e.Offline = fctx.Err() != nil && ctx.Err() == nil
		return nil, e
	}
	defer body.Close()
	data, err := readBounded(body, max)
	switch {
	case err != nil && fctx.Err() != nil && ctx.Err() == nil:
		e := fail(s.Ref, err, "check the network, or raise the fetch timeout", "%s did not answer within %s", s.By, timeout)
		e.Offline = true
		return nil, e
	case err != nil:
		return nil, fail(s.Ref, err, "try again", "%s could not be read: %v", s.By, err)
	case data == nil:
		return nil, fail(s.Ref, nil, "raise the chart budget, or fetch it from its repository", "%s sent more than the chart budget of %d bytes", s.By, max)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != hexsum {
		return nil, fail(s.Ref, nil, "the source's artifact changed while it was read, or it is not what its status says: fetch it from its repository",
			"%s sent content whose digest sha256:%s is not the status's %s", s.By, got, s.Digest)
	}
	c.keep(hexsum, data)
	return &Chart{Ref: s.Ref, Digest: s.Digest, Archive: data, By: s.By}, nil
}

// keep writes a verified archive under its digest, then prunes. A cache
// that cannot be written only costs the next fetch a read.
func (c *cache) keep(hexsum string, data []byte) {
	if c == nil {
		return
	}
	if c.writeArchive(hexsum, data) == nil {
		c.prune(time.Now())
	}
}

// writeArchive writes a verified archive under its digest's hex.
func (c *cache) writeArchive(hexsum string, data []byte) error {
	return privfile.WriteAtomic(filepath.Join(c.dir, "sha256", hexsum+".tgz"), data)
}
