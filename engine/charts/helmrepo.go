package charts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// index is the part of a Helm repository's index.yaml Fetch reads.
type index struct {
	Entries map[string][]indexEntry `json:"entries"`
}

// indexEntry is one chart version of an index.
type indexEntry struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// fetchHelmRepo fetches ref from the Helm HTTP repository at loc: the
// entry of exactly ref's version in its index.yaml (the answer the cache
// kept, while fresh: see indexFresh), and that entry's archive (from the
// content-addressed cache when the index gives its digest, else from the
// URL the entry names, which may be on another host under the hop rule;
// its content is verified either way).
func (f *Fetcher) fetchHelmRepo(ctx context.Context, client *http.Client, ref Ref, loc *url.URL, cr *creds) (*fetched, error) {
	c := f.cache()
	now := f.now()
	ans := c.answer(ref, loc)
	asked := ans == nil || !ans.fresh(now)
	if asked {
		var err error
		if ans, err = f.askIndex(ctx, client, ref, loc, ans, cr); err != nil {
			return nil, err
		}
		ans.At = now
	}
	// An answer is kept once it brought a verified archive.
	keep := func(got *fetched) *fetched {
		if asked {
			c.storeAnswer(ref, loc, ans)
		}
		return got
	}
	if ans.Digest != "" {
		if data := c.archive(ans.Digest); data != nil {
			if ref.Digest != "" && ref.Digest != ans.Digest {
				return nil, wrongDigest(ref, ans.Digest)
			}
			return keep(&fetched{archive: data, digest: ans.Digest, cached: true}), nil
		}
	}
	archiveURL, err := url.Parse(ans.ArchiveURL)
	if err != nil {
		return nil, fail(ref, err, "ask the repository's owner to fix its index", "the index gives %q, which is not an http(s) URL, for this version", display(ans.ArchiveURL))
	}
	resp, err := get(ctx, client, ref, archiveURL, limit(f.MaxArchive, defaultMaxArchive), "the chart archive", nil, cr)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(resp.data)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if ans.Digest != "" && ans.Digest != got {
		return nil, fail(ref, nil, "fetch again later; if it persists, the repository is serving other content than its index names: tell its owner",
			"the archive's digest %s is not the index's %s", got, ans.Digest)
	}
	if ref.Digest != "" && ref.Digest != got {
		return nil, wrongDigest(ref, got)
	}
	return keep(&fetched{archive: resp.data, digest: got}), nil
}

// wrongDigest is the Error of an archive whose digest is not the one the
// source pins.
func wrongDigest(ref Ref, got string) *Error {
	return fail(ref, nil, "check the digest the source pins, or the repository's content changed under this version: find out why before trusting it",
		"the archive's digest %s is not the expected %s", got, ref.Digest)
}

// askIndex reads the repository's index.yaml and returns its answer for
// ref: the archive URL and digest of exactly ref's version. With last (a
// kept answer that is no longer fresh) the request is conditional on the
// validators the index was served with, and a 304 keeps last's answer:
// an unchanged index costs no body.
func (f *Fetcher) askIndex(ctx context.Context, client *http.Client, ref Ref, loc *url.URL, last *answer, cr *creds) (*answer, error) {
	indexURL := loc.JoinPath("index.yaml")
	resp, err := get(ctx, client, ref, indexURL, limit(f.MaxIndex, defaultMaxIndex), "index.yaml", last, cr)
	if err != nil {
		return nil, err
	}
	if resp.notModified {
		a := *last
		return &a, nil
	}
	var idx index
	if err := yaml.Unmarshal(resp.data, &idx); err != nil {
		return nil, fail(ref, err, "check the repository URL: it should be the folder of a Helm repository's index.yaml", "%s is not a Helm repository index: %v", indexURL, err)
	}
	want := strings.TrimPrefix(ref.Version, "v")
	var entry *indexEntry
	for i, e := range idx.Entries[ref.Chart] {
		if strings.TrimPrefix(e.Version, "v") == want {
			entry = &idx.Entries[ref.Chart][i]
			break
		}
	}
	if entry == nil {
		if len(idx.Entries[ref.Chart]) == 0 {
			return nil, fail(ref, nil, "check the chart's name and repository", "the repository's index has no chart %s", ref.Chart)
		}
		return nil, fail(ref, nil, "check the version: the repository's index lists the versions it holds", "the repository's index has no version %s of chart %s", ref.Version, ref.Chart)
	}
	if len(entry.URLs) == 0 {
		return nil, fail(ref, nil, "ask the repository's owner to fix its index", "the index gives no URL for this version")
	}
	archiveURL, err := indexURL.Parse(entry.URLs[0])
	if err != nil || (archiveURL.Scheme != "http" && archiveURL.Scheme != "https") {
		return nil, fail(ref, err, "ask the repository's owner to fix its index", "the index gives %q, which is not an http(s) URL, for this version", display(entry.URLs[0]))
	}
	archiveURL.User = nil
	a := &answer{ArchiveURL: archiveURL.String(), ETag: resp.etag, LastModified: resp.lastModified}
	if d := strings.ToLower(strings.TrimPrefix(entry.Digest, "sha256:")); d != "" {
		a.Digest = "sha256:" + d
		if !sha256Digest.MatchString(a.Digest) {
			return nil, fail(ref, nil, "ask the repository's owner to fix its index", "the index gives %q, which is not a SHA-256 digest, for this version", entry.Digest)
		}
	}
	return a, nil
}

// limit is n, or def when n is not set.
func limit(n, def int64) int64 {
	if n <= 0 {
		return def
	}
	return n
}

// client is the HTTP client of one Fetch: a clone of Fetcher's transport
// whose connections follow h (hops.go), no retries, at most maxRedirects
// redirects, credentials only to the origin they were set for
// (stripCredentials). done closes its idle connections: a connection
// dialled under one fetch's allowed locations is never reused by
// another's.
func (f *Fetcher) client(h *hops) (client *http.Client, done func()) {
	base := f.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	t := base.Clone()
	t.Proxy = h.proxy(t.Proxy)
	t.DialContext = h.dial(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("a redirect to %s, which is not http(s)", req.URL.Scheme)
			}
			stripCredentials(req, via)
			return nil
		},
	}, t.CloseIdleConnections
}

// response is what get read: the body, the index's validators, and
// whether the server said it has not changed (304).
type response struct {
	data               []byte
	etag, lastModified string
	notModified        bool
}

// get reads u, at most max bytes, or returns the Error that says why not
// (what names the thing read, for messages). With cond, the request is
// conditional on cond's validators and a 304 is an answer. cr's
// credentials go with it when u is on their origin.
func get(ctx context.Context, client *http.Client, ref Ref, u *url.URL, max int64, what string, cond *answer, cr *creds) (*response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fail(ref, err, "check the repository URL", "%s: %v", u, err)
	}
	if cond != nil && cond.ETag != "" {
		req.Header.Set("If-None-Match", cond.ETag)
	}
	if cond != nil && cond.LastModified != "" {
		req.Header.Set("If-Modified-Since", cond.LastModified)
	}
	cr.apply(req)
	resp, err := client.Do(req)
	if err != nil {
		return nil, transportError(ref, err, what)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotModified && cond != nil && (cond.ETag != "" || cond.LastModified != ""):
		return &response{notModified: true}, nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		sent := resp.Request != nil && resp.Request.Header.Get("Authorization") != ""
		return nil, needsCredentials(ref, cr, sent, fmt.Errorf("GET %s: %s", u, resp.Status))
	case resp.StatusCode == http.StatusNotFound:
		return nil, fail(ref, nil, "check the repository URL, chart and version", "%s is not there (GET %s answered %s)", what, u, resp.Status)
	default:
		e := fail(ref, nil, "try again later, or ask the repository's owner", "GET %s answered %s", u, resp.Status)
		e.Offline = unreachableStatus(resp.StatusCode)
		return nil, e
	}
	if resp.ContentLength > max {
		return nil, tooBig(ref, what, max)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, transportError(ref, err, what)
	}
	if int64(len(data)) > max {
		return nil, tooBig(ref, what, max)
	}
	return &response{data: data, etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified")}, nil
}

// unreachableStatus says whether an HTTP status means the repository
// itself could not be reached (a proxy or gateway answered for it).
func unreachableStatus(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// tooBig is the Error of something over its size bound.
func tooBig(ref Ref, what string, max int64) *Error {
	return fail(ref, nil, "fetching is bounded so that no repository can exhaust memory or disk: raise the bound only for a repository you trust",
		"%s is larger than the limit of %d bytes", what, max)
}

// transportError is the Error of a request that got no answer; Offline
// when the repository could not be reached.
func transportError(ref Ref, err error, what string) *Error {
	var hop *HopError
	if errors.As(err, &hop) {
		origin := "https://" + hop.Addr
		var ue *url.Error
		if errors.As(err, &ue) {
			if u, perr := url.Parse(ue.URL); perr == nil {
				origin = originOf(u)
			}
		}
		return fail(ref, err, "if you trust that host, allow it: --chart-repo "+origin,
			"%s could not be read: the allowed repository sent kdrift to another host, and %v", what, hop)
	}
	e := fail(ref, err, "check the network and the repository's address", "%s could not be read: %v", what, err)
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &de), errors.As(err, &oe) && oe.Op == "dial",
		errors.As(err, &ne) && ne.Timeout():
		e.Offline = true
	}
	return e
}
