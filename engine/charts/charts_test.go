package charts_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/charts"
	"kdrift.dev/kdrift/internal/charttest"
)

// podinfo is the chart most tests fetch.
var podinfo = charttest.Chart{
	Name: "podinfo", Version: "6.5.4",
	Files: map[string]string{
		"values.yaml":                 "replicas: 1\n",
		"templates/configmap.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
		"templates/NOTES.txt":         "hello\n",
		"charts/.keep":                "",
		"files/deep/nested/file.json": "{}\n",
	},
}

// fetchErr fetches and returns the *charts.Error the fetch must fail with.
func fetchErr(t *testing.T, f *charts.Fetcher, ref charts.Ref, allowed []charts.Location) *charts.Error {
	t.Helper()
	got, err := f.Fetch(context.Background(), ref, allowed)
	if err == nil {
		t.Fatalf("Fetch(%+v) = %s, want an error", ref, got.Digest)
	}
	var ce *charts.Error
	if !errors.As(err, &ce) {
		t.Fatalf("Fetch(%+v) error %T %v, want *charts.Error", ref, err, err)
	}
	if ce.Fix == "" || !strings.HasPrefix(err.Error(), strings.Join(strings.Fields("chart "+ref.Chart+" "+ref.Version), " ")+" from ") {
		t.Errorf("error %q: want \"chart CHART VERSION from REPO: PROBLEM; FIX\" with a fix", err)
	}
	return ce
}

// mustFetch fetches ref and fails the test on an error.
func mustFetch(t *testing.T, f *charts.Fetcher, ref charts.Ref, allowed []charts.Location) *charts.Chart {
	t.Helper()
	got, err := f.Fetch(context.Background(), ref, allowed)
	if err != nil {
		t.Fatalf("Fetch(%+v): %v", ref, err)
	}
	return got
}

// checkPodinfo checks that ch is podinfo's archive, as Helm packaged it.
func checkPodinfo(t *testing.T, ch *charts.Chart) {
	t.Helper()
	name, files, err := charts.Unpack(ch.Archive, 1<<20)
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	if name != "podinfo" || files["values.yaml"] == nil || !bytes.Contains(files["Chart.yaml"], []byte("version: 6.5.4")) ||
		string(files["files/deep/nested/file.json"]) != "{}\n" {
		t.Errorf("Unpack = %s with files %v, want podinfo 6.5.4's", name, keys(files))
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestFetchHelmRepoByExactVersion(t *testing.T) {
	other := charttest.Chart{Name: "podinfo", Version: "6.5.3"}
	repo := charttest.HelmRepo(t, other, podinfo)
	allowed := []charts.Location{{URL: repo.URL + "/", By: "HelmRepository flux-system/podinfo (live)"}}
	f := &charts.Fetcher{}
	for _, version := range []string{"6.5.4", "v6.5.4"} {
		got := mustFetch(t, f, charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: version}, allowed)
		if got.Digest != repo.Digest("podinfo", "6.5.4") || got.FromCache || got.By != allowed[0].By {
			t.Errorf("Fetch %s: digest %s, from cache %v, by %q; want %s, false, %q", version, got.Digest, got.FromCache, got.By, repo.Digest("podinfo", "6.5.4"), allowed[0].By)
		}
		checkPodinfo(t, got)
	}
	// The digest pinned by the caller is checked too.
	got := mustFetch(t, f, charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4", Digest: repo.Digest("podinfo", "6.5.4")}, allowed)
	checkPodinfo(t, got)
	e := fetchErr(t, f, charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4", Digest: repo.Digest("podinfo", "6.5.3")}, allowed)
	if !strings.Contains(e.Problem, "not the expected") {
		t.Errorf("wrong pinned digest: %v", e)
	}
	e = fetchErr(t, f, charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.5"}, allowed)
	if !strings.Contains(e.Problem, "no version 6.5.5") || e.Offline {
		t.Errorf("missing version: %v (offline %v)", e, e.Offline)
	}
	e = fetchErr(t, f, charts.Ref{Repo: repo.URL, Chart: "nginx", Version: "1.0.0"}, allowed)
	if !strings.Contains(e.Problem, "no chart nginx") {
		t.Errorf("missing chart: %v", e)
	}
}

func TestFetchHelmRepoCorruptArchive(t *testing.T) {
	repo := charttest.HelmRepo(t, podinfo)
	repo.Corrupt("podinfo", "6.5.4")
	cache := t.TempDir()
	f := &charts.Fetcher{CacheDir: cache}
	e := fetchErr(t, f, charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4"}, []charts.Location{{URL: repo.URL, By: "--chart-repo"}})
	if !strings.Contains(e.Problem, "digest") || !strings.Contains(e.Problem, "index") || e.Offline {
		t.Errorf("corrupt archive: %v (offline %v), want a digest mismatch against the index", e, e.Offline)
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "*", "*")); len(files) != 0 {
		t.Errorf("a corrupt archive left %v in the cache", files)
	}
}

func TestFetchRegistryByTagAndDigest(t *testing.T) {
	reg := charttest.Registry(t)
	manifest := reg.PushChart(t, "charts/podinfo", podinfo)
	build := charttest.Chart{Name: "podinfo", Version: "6.5.4+build.7"}
	buildManifest := reg.PushChart(t, "charts/podinfo", build)
	repoURL := "oci://" + reg.Host + "/charts"
	allowed := []charts.Location{{URL: repoURL, By: "HelmRepository flux-system/charts (live)"}}
	f := &charts.Fetcher{}

	byTag := mustFetch(t, f, charts.Ref{Repo: repoURL, Chart: "podinfo", Version: "6.5.4"}, allowed)
	checkPodinfo(t, byTag)
	if byTag.By != allowed[0].By {
		t.Errorf("By = %q, want %q", byTag.By, allowed[0].By)
	}
	byDigest := mustFetch(t, f, charts.Ref{Repo: repoURL, Chart: "podinfo", Version: "6.5.4", Digest: manifest}, allowed)
	if byDigest.Digest != byTag.Digest {
		t.Errorf("by digest %s, by tag %s", byDigest.Digest, byTag.Digest)
	}
	// A "+" in the version is an "_" in the tag.
	b := mustFetch(t, f, charts.Ref{Repo: repoURL, Chart: "podinfo", Version: "6.5.4+build.7"}, allowed)
	if name, files, err := charts.Unpack(b.Archive, 1<<20); err != nil || name != "podinfo" || !bytes.Contains(files["Chart.yaml"], []byte("6.5.4+build.7")) {
		t.Errorf("6.5.4+build.7: %s %v %v", name, keys(files), err)
	}
	// A Flux OCIRepository: the artifact's location holds the chart.
	art := mustFetch(t, f, charts.Ref{Artifact: repoURL + "/podinfo", Chart: "podinfo", Version: "6.5.4+build.7", Digest: buildManifest},
		[]charts.Location{{URL: repoURL + "/podinfo", By: "OCIRepository flux-system/podinfo (live)"}})
	if art.Digest != b.Digest {
		t.Errorf("artifact digest %s, want %s", art.Digest, b.Digest)
	}

	e := fetchErr(t, f, charts.Ref{Repo: repoURL, Chart: "podinfo", Version: "6.5.4", Digest: "sha256:" + strings.Repeat("0", 64)}, allowed)
	if e.Offline || !strings.Contains(e.Error(), "not in the registry") && !strings.Contains(e.Error(), "digest") {
		t.Errorf("unknown manifest digest: %v", e)
	}
	e = fetchErr(t, f, charts.Ref{Repo: repoURL, Chart: "podinfo", Version: "9.9.9"}, allowed)
	if !strings.Contains(e.Problem, "not in the registry") {
		t.Errorf("missing tag: %v", e)
	}
}

func TestFetchNotAllowedOpensNoConnection(t *testing.T) {
	repo := charttest.HelmRepo(t, podinfo)
	reg := charttest.Registry(t)
	reg.PushChart(t, "charts/podinfo", podinfo)
	before := reg.Connections()
	u := strings.TrimPrefix(repo.URL, "http://")
	refs := []struct {
		ref     charts.Ref
		allowed []charts.Location
	}{
		{charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4"}, nil},
		{charts.Ref{Repo: repo.URL + "/charts", Chart: "podinfo", Version: "6.5.4"}, []charts.Location{{URL: repo.URL + "/chart"}}},
		{charts.Ref{Repo: "https://" + u, Chart: "podinfo", Version: "6.5.4"}, []charts.Location{{URL: repo.URL}}},
		{charts.Ref{Repo: "http://user:s3cret@" + u, Chart: "podinfo", Version: "6.5.4"}, []charts.Location{{URL: "oci://" + u}}},
		{charts.Ref{Repo: repo.URL + "/sub/../../other", Chart: "podinfo", Version: "6.5.4"}, []charts.Location{{URL: repo.URL + "/sub"}}},
		{charts.Ref{Repo: "oci://" + reg.Host + "/chartsX", Chart: "podinfo", Version: "6.5.4"}, []charts.Location{{URL: "oci://" + reg.Host + "/charts"}}},
		{charts.Ref{Repo: "oci://" + reg.Host + "/charts", Chart: "podinfo", Version: "6.5.4"}, []charts.Location{{URL: "http://" + reg.Host + "/charts"}}},
		{charts.Ref{Repo: "oci://" + reg.Host + "/charts", Artifact: "oci://" + reg.Host + "/other/podinfo", Chart: "podinfo", Version: "6.5.4"},
			[]charts.Location{{URL: "oci://" + reg.Host + "/charts"}}},
	}
	f := &charts.Fetcher{CacheDir: t.TempDir()}
	for _, r := range refs {
		e := fetchErr(t, f, r.ref, r.allowed)
		if !strings.Contains(e.Problem, "no live Flux source, Argo CD repository Secret or --chart-repo names") || !strings.Contains(e.Fix, "--chart-repo") {
			t.Errorf("%+v: %v", r.ref, e)
		}
		if strings.Contains(e.Error(), "s3cret") {
			t.Errorf("the error shows the password: %v", e)
		}
	}
	if n := repo.Connections() + reg.Connections() - before; n != 0 {
		t.Errorf("refused fetches opened %d connections", n)
	}
}

func TestFetchRefusesVersionRanges(t *testing.T) {
	repo := charttest.HelmRepo(t, podinfo)
	allowed := []charts.Location{{URL: repo.URL}}
	f := &charts.Fetcher{}
	for _, v := range []string{"1.x", ">=1.0", "^1.2", "*", "~6.5.4", "6.5", "", "6.5.4 || 6.5.3", "latest", "06.5.4"} {
		e := fetchErr(t, f, charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: v}, allowed)
		if !strings.Contains(e.Problem, "not an exact version") {
			t.Errorf("version %q: %v", v, e)
		}
	}
	if n := repo.Connections(); n != 0 {
		t.Errorf("refused versions opened %d connections", n)
	}
}

func TestFetchBounds(t *testing.T) {
	repo := charttest.HelmRepo(t, podinfo)
	reg := charttest.Registry(t)
	reg.PushChart(t, "charts/podinfo", podinfo)
	helmRef := charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4"}
	ociRef := charts.Ref{Repo: "oci://" + reg.Host + "/charts", Chart: "podinfo", Version: "6.5.4"}
	allowed := []charts.Location{{URL: repo.URL}, {URL: "oci://" + reg.Host}}

	small := &charts.Fetcher{MaxArchive: 100}
	for _, ref := range []charts.Ref{helmRef, ociRef} {
		e := fetchErr(t, small, ref, allowed)
		if !strings.Contains(e.Problem, "the chart archive is larger than the limit of 100 bytes") {
			t.Errorf("%s: %v", ref.Repo, e)
		}
	}
	e := fetchErr(t, &charts.Fetcher{MaxIndex: 100}, helmRef, allowed)
	if !strings.Contains(e.Problem, "index.yaml is larger than the limit of 100 bytes") {
		t.Errorf("index: %v", e)
	}
}

func TestFetchCache(t *testing.T) {
	repo := charttest.HelmRepo(t, podinfo)
	cache := t.TempDir()
	f := &charts.Fetcher{CacheDir: cache}
	allowed := []charts.Location{{URL: repo.URL, By: "--chart-repo"}}
	ref := charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4"}
	first := mustFetch(t, f, ref, allowed)
	if first.FromCache {
		t.Fatal("the first fetch came from the cache")
	}
	archive := filepath.Join(cache, "sha256", strings.TrimPrefix(first.Digest, "sha256:")+".tgz")
	if fi, err := os.Stat(archive); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cached archive: %v %v", fi, err)
	}

	// Pinned by digest and cached: no request at all.
	requests := repo.Requests()
	pinned := ref
	pinned.Digest = first.Digest
	got := mustFetch(t, f, pinned, allowed)
	if !got.FromCache || got.Digest != first.Digest || got.By != "--chart-repo" || repo.Requests() != requests {
		t.Errorf("pinned fetch: from cache %v, digest %s, by %q, %d requests; want the cache and no request", got.FromCache, got.Digest, got.By, repo.Requests()-requests)
	}
	checkPodinfo(t, got)

	// A cached archive that no longer matches its name is fetched again.
	if err := os.WriteFile(archive, []byte("tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	got = mustFetch(t, f, pinned, allowed)
	if got.FromCache || repo.Requests() == requests {
		t.Errorf("a tampered cache entry was served (from cache %v)", got.FromCache)
	}
	checkPodinfo(t, got)

	// Not pinned: the network first, and the cache when the repository
	// cannot be reached.
	repo.Close()
	got = mustFetch(t, f, ref, allowed)
	if !got.FromCache || got.Digest != first.Digest {
		t.Errorf("offline fetch: from cache %v, digest %s", got.FromCache, got.Digest)
	}
	checkPodinfo(t, got)
	e := fetchErr(t, &charts.Fetcher{}, ref, allowed)
	if !e.Offline {
		t.Errorf("without a cache, a stopped repository: %v, want Offline", e)
	}
	// Allowed no more: the cache does not serve it either.
	fetchErr(t, f, ref, nil)
}

func TestFetchCacheIgnoresOthersFiles(t *testing.T) {
	repo := charttest.HelmRepo(t, podinfo)
	cache := t.TempDir()
	f := &charts.Fetcher{CacheDir: cache}
	allowed := []charts.Location{{URL: repo.URL}}
	ref := charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4"}
	first := mustFetch(t, f, ref, allowed)
	archive := filepath.Join(cache, "sha256", strings.TrimPrefix(first.Digest, "sha256:")+".tgz")
	if err := os.Chmod(archive, 0o666); err != nil {
		t.Fatal(err)
	}
	requests := repo.Requests()
	ref.Digest = first.Digest
	if got := mustFetch(t, f, ref, allowed); got.FromCache || repo.Requests() == requests {
		t.Errorf("an archive others may write was served from the cache")
	}
}

func TestFetchRegistryCache(t *testing.T) {
	reg := charttest.Registry(t)
	manifest := reg.PushChart(t, "charts/podinfo", podinfo)
	f := &charts.Fetcher{CacheDir: t.TempDir()}
	allowed := []charts.Location{{URL: "oci://" + reg.Host + "/charts"}}
	ref := charts.Ref{Repo: "oci://" + reg.Host + "/charts", Chart: "podinfo", Version: "6.5.4", Digest: manifest}
	first := mustFetch(t, f, ref, allowed)
	requests := reg.Requests()
	got := mustFetch(t, f, ref, allowed)
	if !got.FromCache || got.Digest != first.Digest || reg.Requests() != requests {
		t.Errorf("pinned OCI fetch: from cache %v, %d requests; want the cache and no request", got.FromCache, reg.Requests()-requests)
	}
	reg.Close()
	ref.Digest = ""
	if got := mustFetch(t, f, ref, allowed); !got.FromCache {
		t.Errorf("offline OCI fetch not from the cache")
	}
	ref.Version = "6.5.3"
	if e := fetchErr(t, f, ref, allowed); !e.Offline {
		t.Errorf("offline, uncached: %v, want Offline", e)
	}
}

func TestFetchNeedsCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	f := &charts.Fetcher{}
	for _, repo := range []string{srv.URL, "oci://" + host + "/charts"} {
		e := fetchErr(t, f, charts.Ref{Repo: repo, Chart: "podinfo", Version: "6.5.4"}, []charts.Location{{URL: repo}})
		if !strings.Contains(e.Problem, "needs credentials and none were given") || !strings.Contains(e.Fix, "Argo CD repository Secret with username and password") || e.Offline {
			t.Errorf("%s: %v", repo, e)
		}
	}
}

func TestFetchTimeoutIsOffline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			defer c.Close() // never answered
		}
	}()
	repo := "http://" + ln.Addr().String()
	f := &charts.Fetcher{Timeout: 300 * time.Millisecond}
	start := time.Now()
	e := fetchErr(t, f, charts.Ref{Repo: repo, Chart: "podinfo", Version: "6.5.4"}, []charts.Location{{URL: repo}})
	if !e.Offline || time.Since(start) > 10*time.Second || accepted.Load() == 0 {
		t.Errorf("silent repository: %v (offline %v) after %s", e, e.Offline, time.Since(start))
	}
}

// TestFetchRedirectsAndOtherHosts: an allowed repository may redirect
// (three times at most) within itself; a redirect to another host that no
// location allows is refused when that host's address is not public (here
// loopback), before any connection to it, with the flag that would allow
// it; allowed too, it is followed.
func TestFetchRedirectsAndOtherHosts(t *testing.T) {
	repo := charttest.HelmRepo(t, podinfo)
	hops := 0
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 0
		fmt.Sscanf(r.URL.Query().Get("n"), "%d", &n)
		if n < hops {
			http.Redirect(w, r, fmt.Sprintf("%s?n=%d", r.URL.Path, n+1), http.StatusFound)
			return
		}
		http.Redirect(w, r, repo.URL+r.URL.Path, http.StatusFound) // another host
	}))
	defer front.Close()
	ref := charts.Ref{Repo: front.URL, Chart: "podinfo", Version: "6.5.4"}
	hops = 2 // three redirects in all
	e := fetchErr(t, &charts.Fetcher{}, ref, []charts.Location{{URL: front.URL}})
	var hop *charts.HopError
	if !errors.As(e, &hop) || !strings.Contains(e.Problem, "a loopback address") || !strings.Contains(e.Problem, strings.TrimPrefix(repo.URL, "http://")) ||
		e.Fix != "if you trust that host, allow it: --chart-repo "+repo.URL || e.Offline {
		t.Errorf("a redirect to another loopback port: %v (offline %v)", e, e.Offline)
	}
	if n := repo.Connections(); n != 0 {
		t.Fatalf("the host a redirect named was contacted %d times", n)
	}
	allowed := []charts.Location{{URL: front.URL}, {URL: repo.URL}}
	checkPodinfo(t, mustFetch(t, &charts.Fetcher{}, ref, allowed))
	hops = 3
	if e := fetchErr(t, &charts.Fetcher{}, ref, allowed); !strings.Contains(e.Problem, "redirects") {
		t.Errorf("four redirects: %v", e)
	}
}

// TestFetchIndexNamesAnotherHost: an index entry's URL on another host
// that no location allows, at a loopback address, is refused before any
// connection; allowed, the archive comes from there.
func TestFetchIndexNamesAnotherHost(t *testing.T) {
	archives := charttest.HelmRepo(t, podinfo)
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  podinfo:\n  - version: 6.5.4\n    urls: [%s/charts/podinfo-6.5.4.tgz]\n    digest: %s\n",
		archives.URL, strings.TrimPrefix(archives.Digest("podinfo", "6.5.4"), "sha256:"))
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(index))
	}))
	defer front.Close()
	ref := charts.Ref{Repo: front.URL, Chart: "podinfo", Version: "6.5.4"}
	e := fetchErr(t, &charts.Fetcher{}, ref, []charts.Location{{URL: front.URL}})
	if !strings.Contains(e.Problem, "the chart archive could not be read") || !strings.Contains(e.Problem, "a loopback address") ||
		!strings.Contains(e.Fix, "--chart-repo "+archives.URL) {
		t.Errorf("an index naming another loopback port: %v", e)
	}
	if n := archives.Connections(); n != 0 {
		t.Fatalf("the host the index named was contacted %d times", n)
	}
	// "localhost" is a name: the check is on the address it resolves to.
	local := strings.Replace(archives.URL, "127.0.0.1", "localhost", 1)
	index = strings.Replace(index, archives.URL, local, 1)
	if e := fetchErr(t, &charts.Fetcher{}, ref, []charts.Location{{URL: front.URL}}); !strings.Contains(e.Problem, "resolves to 127.0.0.1, a loopback address") &&
		!strings.Contains(e.Problem, "resolves to ::1, a loopback address") {
		t.Errorf("a name resolving to loopback: %v", e)
	}
	if n := archives.Connections(); n != 0 {
		t.Fatalf("the host the index named was contacted %d times", n)
	}
	checkPodinfo(t, mustFetch(t, &charts.Fetcher{}, ref, []charts.Location{{URL: front.URL}, {URL: local}}))
}

// TestFetchHopThroughAProxy: through a proxy (which dials for kdrift), a
// hop to a host no location allows is checked on the addresses its name
// resolves to before the proxy is asked; the allowed host itself goes
// through the proxy.
func TestFetchHopThroughAProxy(t *testing.T) {
	archives := charttest.HelmRepo(t, podinfo)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(archives.URL, "127.0.0.1", "localhost", 1)+r.URL.Path, http.StatusFound)
	}))
	defer front.Close()
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		req, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	proxyURL, _ := url.Parse(proxy.URL)
	f := &charts.Fetcher{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	ref := charts.Ref{Repo: front.URL, Chart: "podinfo", Version: "6.5.4"}
	e := fetchErr(t, f, ref, []charts.Location{{URL: front.URL}})
	if !strings.Contains(e.Problem, "a loopback address") || proxied.Load() != 1 || archives.Connections() != 0 {
		t.Fatalf("a proxied hop to loopback: %v; %d requests through the proxy, %d connections to the archives' host", e, proxied.Load(), archives.Connections())
	}
}

// TestFetchKeepsIndexAnswers: one-shot commands in a row (a Fetcher
// each, one cache folder) read a repository's index.yaml once; the answer
// kept serves for ten minutes, with the archive from the content-addressed
// cache, then the index is asked again conditionally, and an unchanged
// one costs a 304 and no archive download.
func TestFetchKeepsIndexAnswers(t *testing.T) {
	repo := charttest.HelmRepo(t, podinfo)
	dir := t.TempDir()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	command := func() *charts.Fetcher { return &charts.Fetcher{CacheDir: dir, Now: func() time.Time { return now }} }
	ref := charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4"}
	allowed := []charts.Location{{URL: repo.URL}}
	count := func(index, notModified, requests int64) {
		t.Helper()
		if repo.IndexRequests() != index || repo.NotModified() != notModified || repo.Requests() != requests {
			t.Fatalf("index requests %d (304: %d), requests %d; want %d (%d), %d",
				repo.IndexRequests(), repo.NotModified(), repo.Requests(), index, notModified, requests)
		}
	}
	first := mustFetch(t, command(), ref, allowed)
	checkPodinfo(t, first)
	count(1, 0, 2)
	second := mustFetch(t, command(), ref, allowed)
	if second.Digest != first.Digest || !second.FromCache {
		t.Fatalf("second fetch: digest %s (from cache %v), want %s from the cache", second.Digest, second.FromCache, first.Digest)
	}
	count(1, 0, 2)

	now = now.Add(10*time.Minute + time.Second)
	third := mustFetch(t, command(), ref, allowed)
	if third.Digest != first.Digest {
		t.Fatalf("after the index's 304: digest %s, want %s", third.Digest, first.Digest)
	}
	count(2, 1, 3)
	mustFetch(t, command(), ref, allowed)
	count(2, 1, 3)

	entries, err := os.ReadDir(filepath.Join(dir, "index"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("index answers: %v %v", entries, err)
	}
	if info, err := entries[0].Info(); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("an index answer must be private: %v %v", info.Mode(), err)
	}
	// Another version is asked of the index: answers are per version.
	if e := fetchErr(t, command(), charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.5"}, allowed); !strings.Contains(e.Problem, "no version 6.5.5") {
		t.Fatalf("another version: %v", e)
	}
	count(3, 1, 4)
}

// tgz is a gzip'd tar of entries.
func tgz(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("a"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestUnpackHostileArchives(t *testing.T) {
	chartYAML := &tar.Header{Name: "c/Chart.yaml", Size: 10}
	many := []*tar.Header{chartYAML}
	for i := range 5000 {
		many = append(many, &tar.Header{Name: fmt.Sprintf("c/f%d", i), Size: 1})
	}
	for _, tc := range []struct {
		name    string
		archive []byte
		want    string
		budget  int64
	}{
		{"dotdot", tgz(t, chartYAML, &tar.Header{Name: "c/../x", Size: 1}), `"c/../x" climbs out`, 1000},
		{"dotdot first", tgz(t, &tar.Header{Name: "../x", Size: 1}), "climbs out", 1000},
		{"absolute", tgz(t, chartYAML, &tar.Header{Name: "/etc/passwd", Size: 1}), "absolute path", 1000},
		{"symlink", tgz(t, chartYAML, &tar.Header{Name: "c/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), "symbolic link", 1000},
		{"hardlink", tgz(t, chartYAML, &tar.Header{Name: "c/link", Typeflag: tar.TypeLink, Linkname: "c/Chart.yaml"}), "hard link", 1000},
		{"device", tgz(t, chartYAML, &tar.Header{Name: "c/dev", Typeflag: tar.TypeChar}), "device", 1000},
		{"too many files", tgz(t, many...), "more than 5000 files", 1 << 20},
		{"over budget", tgz(t, chartYAML, &tar.Header{Name: "c/big", Size: 2000}), "more than 1000 bytes", 1000},
		{"two top folders", tgz(t, chartYAML, &tar.Header{Name: "d/Chart.yaml", Size: 1}), "two top folders", 1000},
		{"file at the top", tgz(t, &tar.Header{Name: "Chart.yaml", Size: 1}), "where the chart's folder should be", 1000},
		{"twice", tgz(t, chartYAML, chartYAML), "appears twice", 1000},
		{"not gzip", []byte("not an archive"), "not a gzip'd tar", 1000},
		{"empty", tgz(t), "empty", 1000},
	} {
		name, files, err := charts.Unpack(tc.archive, tc.budget)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Unpack = %q, %d files, %v; want an error with %q", tc.name, name, len(files), err, tc.want)
		}
	}
	// Headers count too: long PAX records past the allowance stop the read.
	bomb := []*tar.Header{chartYAML}
	for i := range 20 {
		bomb = append(bomb, &tar.Header{Name: fmt.Sprintf("c/f%d", i), PAXRecords: map[string]string{"comment": strings.Repeat("x", 900<<10)}})
	}
	if _, _, err := charts.Unpack(tgz(t, bomb...), 1000); err == nil || !strings.Contains(err.Error(), "more than 1000 bytes") {
		t.Errorf("a header bomb: %v", err)
	}
	// A folder that claims content is refused, not skipped.
	if _, _, err := charts.Unpack(tgz(t, chartYAML, &tar.Header{Name: "c/d/", Typeflag: tar.TypeDir, Size: 1 << 30}), 1000); err == nil {
		t.Error("a folder with content unpacked")
	}
}

func TestUnpackHelmArchive(t *testing.T) {
	archive := charttest.Package(t, podinfo)
	name, files, err := charts.Unpack(archive, 1<<20)
	if err != nil || name != "podinfo" {
		t.Fatalf("Unpack = %s, %v", name, err)
	}
	for _, f := range []string{"Chart.yaml", "values.yaml", "templates/configmap.yaml", "templates/NOTES.txt", "files/deep/nested/file.json"} {
		if _, ok := files[f]; !ok {
			t.Errorf("Unpack lacks %s: %v", f, keys(files))
		}
	}
	if _, _, err := charts.Unpack(archive, 20); err == nil {
		t.Error("Unpack within 20 bytes succeeded")
	}
}
