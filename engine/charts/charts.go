// Package charts is kdrift's one fetcher of remote Helm charts: from a Helm
// HTTP repository (index.yaml) or an OCI registry, in the parent process,
// never in a render. A chart is fetched only from a location the caller
// allows (ARCHITECTURE.md, "Remote Helm charts"): the check comes before any
// connection. Sizes and time are bounded, digests verified, and archives
// kept in a content-addressed cache (cache.go).
package charts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"kdrift.dev/kdrift/engine/redact"
)

// Ref names one chart version in one repository.
type Ref struct {
	// Repo is the repository: an http(s) Helm repository URL (its index.yaml is Repo+"/index.yaml"),
	// or an OCI location "oci://HOST[:PORT]/PATH" under which the chart is PATH/CHART.
	Repo string
	// Chart is the chart's name.
	Chart string
	// Version is the exact version to fetch (never a range; Fetch refuses one that is not an exact semver, "v" prefix allowed);
	// "" only for an OCI chart that Digest pins, whose version is what its Chart.yaml says.
	Version string
	// Digest, when set ("sha256:<64 hex>"), is what the fetched content must match:
	// for a Helm repository the chart archive's SHA-256; for OCI the manifest digest
	// (the form Flux writes in an OCIRepository's status.artifact.revision "1.2.3@sha256:…").
	Digest string
	// Artifact, when set (OCI only): the full OCI artifact location "oci://HOST/PATH" that
	// holds the chart itself (a Flux OCIRepository's spec.url), used instead of Repo+"/"+Chart.
	Artifact string
}

// Location is one place charts may be fetched from, who named it ("HelmRepository flux-system/podinfo (live)", "--chart-repo"),
// and the credentials to fetch it with (nil: anonymous; see Auth).
type Location struct {
	URL, By string
	Auth    *Auth `json:"-"`
}

// Chart is a fetched chart archive.
type Chart struct {
	Ref       Ref
	Digest    string // "sha256:<hex>" of Archive
	Archive   []byte // the .tgz
	FromCache bool   // the archive came from the cache: the repository could not be reached, or a kept (or unchanged) index answer named a kept archive
	By        string // the Location.By that allowed it
}

// Fetcher fetches chart archives within budgets, verifies digests, and keeps them in a content-addressed cache.
type Fetcher struct {
	CacheDir   string           // "" keeps nothing on disk
	Timeout    time.Duration    // for one Fetch, default 30s
	MaxArchive int64            // default 20 MiB
	MaxIndex   int64            // default 16 MiB (index.yaml)
	Transport  *http.Transport  // nil: http.DefaultTransport's (proxy from environment); each Fetch dials through a clone that checks hops (hops.go)
	Now        func() time.Time // nil: time.Now; decides whether a kept index answer is fresh
}

// now is f's clock.
func (f *Fetcher) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// The defaults of Fetcher's zero fields, and the bounds that are not
// settable.
const (
	defaultTimeout    = 30 * time.Second
	defaultMaxArchive = 20 << 20
	defaultMaxIndex   = 16 << 20
	// maxManifest bounds an OCI manifest.
	maxManifest = 4 << 20
	// maxRedirects is how many redirects one request follows.
	maxRedirects = 3
)

// Error is a chart that could not be fetched: what, why and what to do; Offline says the repository could not be reached (and the cache had nothing).
type Error struct {
	Ref          Ref
	Problem, Fix string
	Offline      bool
	Err          error
}

// Error says "chart CHART VERSION from REPO: PROBLEM; FIX", with any
// credential of a URL removed.
func (e *Error) Error() string {
	msg := strings.Join(strings.Fields(fmt.Sprintf("chart %s %s", e.Ref.Chart, e.Ref.Version)), " ")
	msg += fmt.Sprintf(" from %s: %s", display(e.Ref.location()), e.Problem)
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return redact.Text(msg)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// location is where ref is fetched from: Artifact when set, else Repo.
func (r Ref) location() string {
	if r.Artifact != "" {
		return r.Artifact
	}
	return r.Repo
}

// fail makes ref's Error.
func fail(ref Ref, err error, fix, problem string, args ...any) *Error {
	return &Error{Ref: ref, Problem: redact.Text(fmt.Sprintf(problem, args...)), Fix: fix, Err: err}
}

// exactVersion is an exact semantic version, with an optional "v" before it.
var exactVersion = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

// Exact says whether v names one semantic version ("v" before it
// allowed), not a range: the only versions Fetch takes.
func Exact(v string) bool { return exactVersion.MatchString(v) }

// Allows says whether one of allowed permits ref's location, by the rule
// Fetch checks before any connection; it opens none.
func Allows(ref Ref, allowed []Location) bool {
	_, _, err := permit(ref, allowed)
	return err == nil
}

// sha256Digest is a digest as Ref.Digest and Chart.Digest spell it.
var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Fetch returns the chart ref names, from the cache when it can, else from ref's repository when one of allowed permits it.
//
// The allowed check comes first, cache or not: a chart whose location no
// longer is allowed is not served from the cache either.
func (f *Fetcher) Fetch(ctx context.Context, ref Ref, allowed []Location) (*Chart, error) {
	loc, chosen, err := permit(ref, allowed)
	if err != nil {
		return nil, err
	}
	if err := check(ref, loc); err != nil {
		return nil, err
	}
	by := chosen.By
	c := f.cache()
	if ref.Digest != "" {
		if ch := c.pinned(ref, loc); ch != nil {
			ch.By = by
			return ch, nil
		}
	}
	fctx, cancel, timeout := f.bounded(ctx)
	defer cancel()
	client, done := f.client(newHops(allowed))
	defer done()
	cr := newCreds(loc, chosen.Auth)
	var got *fetched
	if loc.Scheme == "oci" {
		got, err = f.fetchOCI(fctx, client, ref, loc, cr)
	} else {
		got, err = f.fetchHelmRepo(fctx, client, ref, loc, cr)
	}
	if err != nil {
		var ce *Error
		if !errors.As(err, &ce) {
			ce = fail(ref, err, "try again; if it persists, check the repository", "%v", err)
		}
		cr.scrub(ce)
		if ctx.Err() == nil && fctx.Err() != nil {
			ce.Offline = true
			ce.Problem = fmt.Sprintf("the repository did not answer within %s", timeout)
			ce.Fix = "check the network and the repository, or raise the fetch timeout"
		}
		if ce.Offline {
			if ch := c.last(ref, loc); ch != nil {
				ch.By = by
				return ch, nil
			}
		}
		return nil, ce
	}
	c.store(ref, loc, got)
	return &Chart{Ref: ref, Digest: got.digest, Archive: got.archive, FromCache: got.cached, By: by}, nil
}

// bounded is ctx bounded by the Fetcher's time limit for one fetch, and
// that limit.
func (f *Fetcher) bounded(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	return fctx, cancel, timeout
}

// fetched is what a fetch brought: the archive, its digest and, for OCI,
// the manifest's digest.
type fetched struct {
	archive          []byte
	digest, manifest string
	// cached says the archive came from the cache (a fresh index answer
	// named its digest): no request fetched it.
	cached bool
}

// check refuses a ref that Fetch cannot fetch as named: a version that is
// not exact, a malformed digest, no chart name.
func check(ref Ref, loc *url.URL) error {
	if ref.Chart == "" && (loc.Scheme != "oci" || ref.Artifact == "") {
		return fail(ref, nil, "name the chart", "no chart name")
	}
	if strings.ContainsAny(ref.Chart, "/\\?#") || ref.Chart == "." || ref.Chart == ".." {
		return fail(ref, nil, "give the chart's name alone (its repository goes in the repository URL)", "%q is not a chart name", ref.Chart)
	}
	if !Exact(ref.Version) && (ref.Version != "" || ref.Digest == "" || loc.Scheme != "oci") {
		return fail(ref, nil, "pin an exact version such as 1.2.3 (kdrift renders what Git names, so a range would render whatever the repository holds today)",
			"version %q is not an exact version", ref.Version)
	}
	if ref.Digest != "" && !sha256Digest.MatchString(ref.Digest) {
		return fail(ref, nil, `give the digest as "sha256:" and 64 lower-case hex digits`, "digest %q is not a SHA-256 digest", ref.Digest)
	}
	return nil
}

// permit returns ref's location, normalized, and the allowed location
// that permits it, or the Error that says none does. It opens no
// connection. Of several that permit it, the most specific one with
// credentials is chosen (a caller gives credentials only where they
// apply), else the first.
func permit(ref Ref, allowed []Location) (*url.URL, Location, error) {
	raw := ref.location()
	loc, err := normalize(raw)
	if err != nil {
		return nil, Location{}, fail(ref, err, "give the repository as https://HOST/PATH (a Helm repository) or oci://HOST/PATH (an OCI registry)", "%q is not a chart repository location: %v", display(raw), err)
	}
	if ref.Artifact != "" && loc.Scheme != "oci" {
		return nil, Location{}, fail(ref, nil, "give the artifact as oci://HOST/PATH", "an artifact location must be an OCI location")
	}
	var chosen *Location
	depth := -1
	for i, a := range allowed {
		al, err := normalize(a.URL)
		if err != nil || !under(loc, al) {
			continue
		}
		if chosen == nil {
			chosen = &allowed[i]
		}
		if a.Auth != nil && len(al.Path) > depth {
			chosen, depth = &allowed[i], len(al.Path)
		}
	}
	if chosen != nil {
		return loc, *chosen, nil
	}
	return nil, Location{}, fail(ref, nil,
		fmt.Sprintf("allow the repository with a Flux HelmRepository or OCIRepository in the cluster, an Argo CD repository Secret, or --chart-repo %s", display(raw)),
		"no live Flux source, Argo CD repository Secret or --chart-repo names %s", display(raw))
}

// normalize parses a repository location: scheme and host lower-case, the
// default port, credentials, query, fragment and a trailing "/" dropped,
// the path cleaned (so a ".." cannot climb out of an allowed folder).
func normalize(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, errors.New("not a URL")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch u.Scheme {
	case "http", "https", "oci":
	case "":
		return nil, errors.New("no scheme (https:// or oci://)")
	default:
		return nil, fmt.Errorf("scheme %s is neither http, https nor oci", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, errors.New("no host")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return nil, errors.New("no host")
	}
	if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme != "http" {
		port = ""
	}
	if port != "" {
		u.Host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		u.Host = "[" + host + "]"
	} else {
		u.Host = host
	}
	u.User = nil
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	p := strings.ReplaceAll(u.Path, "\\", "/")
	if p != "" {
		p = path.Clean("/" + p)
	}
	u.Path, u.RawPath = strings.TrimSuffix(p, "/"), ""
	return u, nil
}

// under says whether loc is allowed's location or one below it at a
// path-segment boundary, with the same scheme and host.
func under(loc, allowed *url.URL) bool {
	if loc.Scheme != allowed.Scheme || loc.Host != allowed.Host {
		return false
	}
	return loc.Path == allowed.Path || strings.HasPrefix(loc.Path, allowed.Path+"/")
}

// display is a location as messages show it: credentials removed.
func display(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return redact.Text(raw)
	}
	u.User = nil
	return u.String()
}
