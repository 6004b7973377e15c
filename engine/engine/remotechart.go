package engine

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/charts"
	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/source"
)

// The Flux source kinds whose live objects say where a HelmRelease's chart
// is and which version the cluster resolved (ARCHITECTURE.md, "Remote
// charts in the engine"). kdrift only lists them.
var (
	fluxHelmRepositoryGVK  = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmRepository"}
	fluxHelmChartGVK       = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmChart"}
	fluxOCIRepositoryGVK   = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"}
	fluxOCIRepositoryBeta2 = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1beta2", Kind: "OCIRepository"}
)

// chartSourcesFresh is how long one read of the live Flux sources serves
// every remote chart of a context: the versions the cluster resolves move
// at its own interval, and a pass of every app must not list them again.
const chartSourcesFresh = 15 * time.Second

// maxUnpackedChart bounds a remote chart's files, unpacked.
const maxUnpackedChart = 64 << 20

// chartMemo is how long a fetched, unpacked chart of an exact version is
// reused without asking its repository again.
const chartMemo = time.Hour

// chartRetry is how long a chart the cache served is reused before its
// repository is asked again.
const chartRetry = 2 * time.Minute

// maxChartMemo bounds how many unpacked charts the engine keeps.
const maxChartMemo = 64

// remoteCharts fetches and keeps the remote charts of an engine's apps,
// and the live Flux sources that allow and resolve them.
type remoteCharts struct {
	fetcher *charts.Fetcher
	// allow are the locations --chart-repo names.
	allow []charts.Location

	mu      sync.Mutex
	sources map[string]*liveSources // by kubeconfig context
	argo    map[string]*argoRepos   // by context and namespace
	// artifacts are ExternalArtifacts rebuilt, by root tree and rules.
	artifacts map[string]*builtArtifact
	memo      map[string]*fetchedChart
}

// liveSources are the live Flux source objects of one cluster, by
// "KIND/NAMESPACE/NAME", as read at a time; missing says, per kind, why
// it could not be read ("" when the cluster does not serve it).
type liveSources struct {
	at      time.Time
	objs    map[string]map[string]any
	missing map[string]string
	ctxName string
}

// argoRepos are the locations the live Argo CD repository Secrets of one
// namespace name, as read at a time, or why they could not be read.
type argoRepos struct {
	at    time.Time
	locs  []charts.Location
	creds []argoCred // chartcreds.go
	err   error
}

// fetchedChart is a chart fetched and unpacked.
type fetchedChart struct {
	at     time.Time
	digest string
	name   string
	files  map[string][]byte
	by     string
	cached bool
	// served says the archive is the one the cluster's source serves.
	served bool
	// note says why the source's artifact was not used.
	note string
}

// fetchServed reads and unpacks the archive the cluster's source serves;
// nil (with why, if served was given) when there is none or it cannot be
// used, so that the chart comes from its repository instead.
func (rc *remoteCharts) fetchServed(ctx context.Context, ref charts.Ref, served *charts.Served) (*fetchedChart, error) {
	if served == nil {
		return nil, nil
	}
	c, err := rc.fetcher.FetchServed(ctx, *served)
	if err != nil {
		return nil, err
	}
	fc, err := unpacked(c)
	if err != nil {
		return nil, fmt.Errorf("it does not unpack as chart %s %s: %w", ref.Chart, ref.Version, err)
	}
	fc.served = true
	return fc, nil
}

// unpacked is the fetched chart c, unpacked.
func unpacked(c *charts.Chart) (*fetchedChart, error) {
	name, files, err := charts.Unpack(c.Archive, maxUnpackedChart)
	if err != nil {
		return nil, err
	}
	return &fetchedChart{at: time.Now(), digest: c.Digest, name: name, files: files, by: c.By, cached: c.FromCache}, nil
}

// newRemoteCharts is the remote charts of an engine with opts.
func newRemoteCharts(opts Options) *remoteCharts {
	rc := &remoteCharts{
		fetcher:   &charts.Fetcher{CacheDir: opts.ChartCacheDir},
		sources:   map[string]*liveSources{},
		argo:      map[string]*argoRepos{},
		artifacts: map[string]*builtArtifact{},
		memo:      map[string]*fetchedChart{},
	}
	for _, u := range opts.ChartRepos {
		if u = strings.TrimSpace(u); u != "" {
			rc.allow = append(rc.allow, charts.Location{URL: u, By: "--chart-repo"})
		}
	}
	return rc
}

// renderedChart is the remote chart an app rendered.
type renderedChart struct {
	// name and version are the chart's.
	name, version string
	// what says which chart and version it is, its digest and what
	// allowed and resolved it, for the app's status.
	what string
}

// chartTree is the tree App a renders from: the snapshot, with its
// remote chart (if it has one) fetched and mounted at its path, or the
// Flux ExternalArtifact it reads rebuilt and mounted, and which chart
// that is (nil without one).
func (e *core) chartTree(ctx context.Context, a app.App, snap *source.Snapshot) (render.Tree, *renderedChart, error) {
	if art := a.Spec.Artifact; art != nil {
		files, id, err := e.charts.artifact(snap, art)
		if err != nil {
			return nil, nil, err
		}
		return render.Mount(snap, art.Mount(), files, id), nil, nil
	}
	if a.Spec.Chart == nil {
		return snap, nil, nil
	}
	ref, allowed, why, by, err := e.resolveChart(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	served, notServed := e.servedArtifact(a, ref, by)
	fc, err := e.charts.fetch(ctx, ref, allowed, served)
	if err != nil && notServed != "" {
		return nil, nil, fmt.Errorf("%s: %w (%s)", a.Spec.Chart.Where(), err, notServed)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", a.Spec.Chart.Where(), err)
	}
	version := ref.Version
	if version == "" {
		// A chart its digest alone pins: the version is its own.
		version = chartVersion(fc.files)
	}
	rc := &renderedChart{name: fc.name, version: version}
	rc.what = fmt.Sprintf("chart %s %s (%s) %s", fc.name, version, shortDigest(fc.digest), why)
	if fc.served {
		rc.what += "; read from " + fc.by
	}
	if fc.cached {
		rc.what += "; from the chart cache"
	}
	for _, note := range []string{notServed, fc.note} {
		if note != "" {
			rc.what += "; " + note
		}
	}
	return render.Mount(snap, a.Spec.Path, fc.files, fc.digest), rc, nil
}

// chartApplied says which chart version the owner of a last released
// (its live declaration, as read at the last head load) against the
// version kdrift renders: "" when the cluster does not say.
func (e *core) chartApplied(a app.App, rc *renderedChart) string {
	if a.Origin == nil || rc == nil {
		return ""
	}
	applied := e.appliedOf(a)
	if c := a.Spec.Chart; c != nil && c.SourceKind == "" {
		// Argo CD: the revision of the chart's own source.
		applied, _ = c.ArgoSynced(applied)
	}
	if applied == "" {
		return ""
	}
	mine := "chart " + rc.name + " " + rc.version
	if applied == mine || applied == "chart "+rc.version || applied == rc.version {
		return fmt.Sprintf("%s applied %s, the version kdrift renders", a.Origin.Engine, applied)
	}
	return fmt.Sprintf("%s applied %s; kdrift renders %s (the owner has not released it yet, or its release failed: see the %s's status)", a.Origin.Engine, applied, mine, a.Origin.Kind)
}

// chartVersion is the version an unpacked chart's Chart.yaml gives, ""
// when it gives none.
func chartVersion(files map[string][]byte) string {
	var meta struct {
		Version string `json:"version"`
	}
	if yaml.Unmarshal(files["Chart.yaml"], &meta) != nil {
		return ""
	}
	return meta.Version
}

// shortDigest is "sha256:" and the first 12 hex digits of d.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// builtArtifact is an ExternalArtifact rebuilt from one tree.
type builtArtifact struct {
	files map[string][]byte
	id    string
}

// maxArtifactMemo bounds how many rebuilt artifacts the engine keeps.
const maxArtifactMemo = 16

// artifact rebuilds art from snap, or takes it from the last rebuild of
// the same rules from the same root tree.
func (rc *remoteCharts) artifact(snap *source.Snapshot, art *app.Artifact) (map[string][]byte, string, error) {
	root, err := snap.TreeHash(".")
	if err != nil {
		return nil, "", err
	}
	key := root + "\x00" + fmt.Sprintf("%+v", *art)
	rc.mu.Lock()
	b := rc.artifacts[key]
	rc.mu.Unlock()
	if b != nil {
		return b.files, b.id, nil
	}
	files, id, err := app.BuildArtifact(snap, art)
	if err != nil {
		return nil, "", err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.artifacts) >= maxArtifactMemo {
		clear(rc.artifacts)
	}
	rc.artifacts[key] = &builtArtifact{files: files, id: id}
	return files, id, nil
}

// fetch returns the chart ref names, unpacked: from the memo while it is
// fresh (an exact version of a repository does not change; a digest never
// does), else through the fetcher.
func (rc *remoteCharts) fetch(ctx context.Context, ref charts.Ref, allowed []charts.Location, served *charts.Served) (*fetchedChart, error) {
	key := strings.Join([]string{ref.Repo, ref.Artifact, ref.Chart, ref.Version, ref.Digest}, "\x00")
	if served != nil {
		key += "\x00" + served.Digest
	}
	rc.mu.Lock()
	fc := rc.memo[key]
	rc.mu.Unlock()
	if fc != nil {
		// A chart the cache served (its repository may be down) is
		// asked for again sooner, but not at every pass: a repository
		// that does not answer costs the fetch's time limit.
		fresh := chartMemo
		if fc.cached {
			fresh = chartRetry
		}
		if time.Since(fc.at) < fresh {
			return fc, nil
		}
	}
	fc, err := rc.fetchServed(ctx, ref, served)
	if fc == nil {
		c, ferr := rc.fetcher.Fetch(ctx, ref, append(allowed, rc.allow...))
		if ferr != nil {
			if err != nil {
				return nil, fmt.Errorf("%w (and %s could not be read: %v)", ferr, served.By, err)
			}
			return nil, ferr
		}
		var uerr error
		if fc, uerr = unpacked(c); uerr != nil {
			return nil, fmt.Errorf("the archive of chart %s %s does not unpack: %w", ref.Chart, ref.Version, uerr)
		}
		if err != nil {
			fc.note = fmt.Sprintf("%s was not read (%v), so the chart came from its repository", served.By, err)
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.memo) >= maxChartMemo {
		var oldest string
		for k, v := range rc.memo {
			if oldest == "" || v.at.Before(rc.memo[oldest].at) {
				oldest = k
			}
		}
		delete(rc.memo, oldest)
	}
	rc.memo[key] = fc
	return fc, nil
}

// errSourcesUnreachable is a remote chart whose cluster did not answer
// the lists of its Flux sources: the app's comparison is Unknown, like
// any app whose cluster cannot be reached.
type errSourcesUnreachable struct {
	what string
	err  error
}

func (e *errSourcesUnreachable) Error() string {
	return e.what + ": the cluster, whose Flux sources say where the chart is and which version, cannot be reached: " + redact.Text(e.err.Error())
}

func (e *errSourcesUnreachable) Unwrap() error { return e.err }

// errChart is a remote chart kdrift will not fetch or cannot resolve.
type errChart struct{ what, problem, fix string }

func (e *errChart) Error() string { return e.what + ": " + e.problem + "; " + e.fix }

// resolveChart turns App a's remote chart into the exact chart to fetch,
// from the live Flux source objects of its cluster: the repository their
// spec names (the only location, with --chart-repo's, a fetch may use)
// and the version their status resolved. why says where both came from.
func (e *core) resolveChart(ctx context.Context, a app.App) (ref charts.Ref, allowed []charts.Location, why string, by *resolver, err error) {
	rc := a.Spec.Chart
	what := rc.Where()
	if rc.SourceKind == "" {
		ref, allowed, why, err := e.resolveArgoChart(ctx, a)
		return ref, allowed, why, nil, err
	}
	src, err := e.liveSources(ctx, a.Spec.Destination.Context)
	if err != nil {
		return ref, nil, "", nil, &errSourcesUnreachable{what: what, err: err}
	}
	on := "on " + src.ctxName
	if (rc.SourceKind == "HelmRepository" || rc.SourceKind == "OCIRepository") && rc.Committed != (app.CommittedSource{}) &&
		src.objs[rc.SourceKind+"/"+rc.SourceNamespace+"/"+rc.SourceName] == nil && src.missing[rc.SourceKind] == "" {
		// No live source of that name: the cluster has no Flux, or
		// not this source yet. A live one always wins.
		ref, why, err := e.committedChart(rc, on)
		return ref, nil, why, nil, err
	}
	get := func(kind, ns, name string) (map[string]any, error) {
		if o := src.objs[kind+"/"+ns+"/"+name]; o != nil {
			return o, nil
		}
		problem := fmt.Sprintf("%s %s/%s is not in the cluster %s", kind, ns, name, on)
		if m := src.missing[kind]; m != "" {
			problem = fmt.Sprintf("the cluster's %s objects could not be read %s (%s)", kind, on, m)
		}
		return nil, &errChart{what, problem, "kdrift fetches a chart only from a repository that a live Flux source, an Argo CD repository Secret or --chart-repo names; apply the source (flux reconcile source), or pass --chart-repo with its URL"}
	}
	switch rc.SourceKind {
	case "OCIRepository":
		obj, err := get("OCIRepository", rc.SourceNamespace, rc.SourceName)
		if err != nil {
			return ref, nil, "", nil, err
		}
		url, _, _ := unstructured.NestedString(obj, "spec", "url")
		ref = charts.Ref{Artifact: url, Chart: lastSegment(url)}
		rev, _, _ := unstructured.NestedString(obj, "status", "artifact", "revision")
		tag, _, _ := unstructured.NestedString(obj, "spec", "ref", "tag")
		semverRange, _, _ := unstructured.NestedString(obj, "spec", "ref", "semver")
		digest, _, _ := unstructured.NestedString(obj, "spec", "ref", "digest")
		switch v, d, ok := strings.Cut(rev, "@"); {
		case ok && charts.Exact(v) && strings.HasPrefix(d, "sha256:"):
			ref.Version, ref.Digest = v, d
			why = fmt.Sprintf("from OCIRepository %s/%s %s (its resolved artifact %s)", rc.SourceNamespace, rc.SourceName, on, rev)
			by = &resolver{kind: "OCIRepository", namespace: rc.SourceNamespace, name: rc.SourceName, obj: obj, on: src.ctxName}
		case digest != "" && charts.Exact(tag):
			ref.Version, ref.Digest = tag, digest
			why = fmt.Sprintf("from OCIRepository %s/%s %s (its pinned digest)", rc.SourceNamespace, rc.SourceName, on)
		case charts.Exact(tag) && semverRange == "":
			ref.Version = tag
			why = fmt.Sprintf("from OCIRepository %s/%s %s (its tag; the source has not resolved it yet)", rc.SourceNamespace, rc.SourceName, on)
		default:
			asked := tag
			if semverRange != "" {
				asked = semverRange
			}
			return ref, nil, "", nil, &errChart{what, fmt.Sprintf("OCIRepository %s/%s asks for %q and has not resolved a version yet (status.artifact is empty)", rc.SourceNamespace, rc.SourceName, asked), "wait for Flux to reconcile the source (flux reconcile source oci), or pin spec.ref.tag to one version"}
		}
		loc := charts.Location{URL: url, By: fmt.Sprintf("OCIRepository %s/%s (live %s)", rc.SourceNamespace, rc.SourceName, on)}
		return ref, []charts.Location{loc}, why, by, nil
	case "HelmChart", "HelmRepository":
		hcNS, hcName := rc.SourceNamespace, rc.HelmChart
		var hc map[string]any
		repoNS, repoName, chart, version := rc.SourceNamespace, rc.SourceName, rc.Chart, rc.Version
		if rc.SourceKind == "HelmChart" {
			hc, err = get("HelmChart", hcNS, hcName)
			if err != nil {
				return ref, nil, "", nil, err
			}
			kind, _, _ := unstructured.NestedString(hc, "spec", "sourceRef", "kind")
			repoName, _, _ = unstructured.NestedString(hc, "spec", "sourceRef", "name")
			chart, _, _ = unstructured.NestedString(hc, "spec", "chart")
			version, _, _ = unstructured.NestedString(hc, "spec", "version")
			if kind != "HelmRepository" {
				return ref, nil, "", nil, &errChart{what, fmt.Sprintf("HelmChart %s/%s takes its chart from a %s, which kdrift does not read through a HelmChart", hcNS, hcName, kind), "point the HelmRelease's chart.spec at the chart"}
			}
		} else {
			hc = src.objs["HelmChart/"+hcNS+"/"+hcName]
		}
		repo, err := get("HelmRepository", repoNS, repoName)
		if err != nil {
			return ref, nil, "", nil, err
		}
		url, _, _ := unstructured.NestedString(repo, "spec", "url")
		ref = charts.Ref{Repo: url, Chart: chart}
		resolved, note := helmChartVersion(hc, chart, repoName, version)
		switch {
		case resolved != "":
			ref.Version = resolved
			why = fmt.Sprintf("from HelmRepository %s/%s %s (version resolved by HelmChart %s/%s%s)", repoNS, repoName, on, hcNS, hcName, note)
			by = &resolver{kind: "HelmChart", namespace: hcNS, name: hcName, obj: hc, on: src.ctxName}
		case charts.Exact(version):
			ref.Version = version
			why = fmt.Sprintf("from HelmRepository %s/%s %s (the pinned version)", repoNS, repoName, on)
		default:
			return ref, nil, "", nil, &errChart{what, fmt.Sprintf("version %q is a range and the cluster has not resolved it (HelmChart %s/%s %s); kdrift renders a chart only at the version the cluster resolved or at a pinned one", version, hcNS, hcName, note), "wait for Flux to reconcile the HelmRelease, or pin chart.spec.version"}
		}
		loc := charts.Location{URL: url, By: fmt.Sprintf("HelmRepository %s/%s (live %s)", repoNS, repoName, on)}
		return ref, []charts.Location{loc}, why, by, nil
	}
	return ref, nil, "", nil, &errChart{what, "kdrift does not read charts from a " + rc.SourceKind, "compare this release with flux diff"}
}

// committedChart resolves a HelmRelease's chart from the HelmRepository
// or OCIRepository Git declares, when the cluster (on) has no live source
// of that name: only from a location --chart-repo allows (checked here,
// before any connection, so that the error names the flag) and only at
// an exact version, since no source-controller resolved one.
func (e *core) committedChart(rc *app.RemoteChart, on string) (charts.Ref, string, error) {
	c := rc.Committed
	what := rc.Where()
	source := fmt.Sprintf("%s %s/%s", rc.SourceKind, rc.SourceNamespace, rc.SourceName)
	absent := fmt.Sprintf("%s is not in the cluster %s", source, on)
	if c.Conflict != "" {
		return charts.Ref{}, "", &errChart{what, absent + "; " + c.Conflict, "declare it once, or apply it to the cluster"}
	}
	if c.URL == "" {
		return charts.Ref{}, "", &errChart{what, absent + " and Git declares it with no spec.url (" + c.File + ")", "give the source's spec.url"}
	}
	var ref charts.Ref
	var pinned string
	if rc.SourceKind == "OCIRepository" {
		ref = charts.Ref{Artifact: c.URL, Chart: lastSegment(c.URL)}
		switch {
		case c.Digest != "":
			ref.Digest = c.Digest
			if charts.Exact(c.Tag) {
				ref.Version = c.Tag
			}
			pinned = "its pinned digest"
		case c.SemVer != "":
			return ref, "", &errChart{what, fmt.Sprintf("%s; Git's %s asks for the range %q, which only Flux's source-controller resolves", absent, source, c.SemVer), "pin spec.ref.tag to one version (or spec.ref.digest) " + app.In(c.File)}
		case charts.Exact(c.Tag):
			ref.Version = c.Tag
			pinned = "its tag"
		default:
			tag := c.Tag
			if tag == "" {
				tag = "latest"
			}
			return ref, "", &errChart{what, fmt.Sprintf("%s; Git's %s asks for tag %q, which is not one version", absent, source, tag), "pin spec.ref.tag to one version (or spec.ref.digest) " + app.In(c.File)}
		}
	} else {
		if c.Type == "oci" && !strings.HasPrefix(strings.ToLower(c.URL), "oci://") {
			return charts.Ref{}, "", &errChart{what, fmt.Sprintf("%s; Git's %s has type oci but its URL %s is not an oci:// location", absent, source, redact.URL(c.URL)), "write spec.url as oci://HOST/PATH " + app.In(c.File)}
		}
		ref = charts.Ref{Repo: c.URL, Chart: rc.Chart}
		if !charts.Exact(rc.Version) {
			return ref, "", &errChart{what, fmt.Sprintf("%s, so nothing resolves version %q", absent, rc.Version), "pin chart.spec.version to one version: kdrift fetches from a source only Git declares at an exact version only"}
		}
		ref.Version = rc.Version
		pinned = "the pinned version"
	}
	if !charts.Allows(ref, e.charts.allow) {
		return ref, "", &errChart{what, fmt.Sprintf("%s, and only Git declares it (%s, at %s): kdrift never fetches from a location only a commit names", absent, c.File, redact.URL(c.URL)),
			"to fetch from it, pass --chart-repo " + redact.URL(c.URL)}
	}
	why := fmt.Sprintf("from %s as Git declares it (%s), allowed by --chart-repo: no live source %s (%s)", source, c.File, on, pinned)
	return ref, why, nil
}

// helmChartVersion is the version the live HelmChart hc resolved for
// chart of HelmRepository repo at the version (or range) asked: "" with
// why not (", which is not there", "… asks for another version") when it
// does not say.
func helmChartVersion(hc map[string]any, chart, repo, asked string) (string, string) {
	if hc == nil {
		return "", "is not in the cluster"
	}
	c, _, _ := unstructured.NestedString(hc, "spec", "chart")
	r, _, _ := unstructured.NestedString(hc, "spec", "sourceRef", "name")
	v, _, _ := unstructured.NestedString(hc, "spec", "version")
	if v == "" {
		v = "*"
	}
	if asked == "" {
		asked = "*"
	}
	if c != chart || r != repo || v != asked {
		return "", fmt.Sprintf("is for chart %s %s of %s, not what Git asks: Flux has not applied this change yet", c, v, r)
	}
	rev, _, _ := unstructured.NestedString(hc, "status", "artifact", "revision")
	// A chart packaged from a GitRepository carries "+<digest>"; a
	// repository's chart is its version alone.
	if !charts.Exact(rev) {
		return "", "has not resolved a version yet (status.artifact is empty)"
	}
	return rev, ""
}

// lastSegment is the last path segment of an OCI location.
func lastSegment(u string) string {
	u = strings.TrimRight(u, "/")
	return u[strings.LastIndex(u, "/")+1:]
}

// liveSources returns the live Flux sources of a kubeconfig context,
// listed at most every chartSourcesFresh.
func (e *core) liveSources(ctx context.Context, kctx string) (*liveSources, error) {
	if kctx == "" {
		kctx = e.opts.Context
	}
	rc := e.charts
	rc.mu.Lock()
	s := rc.sources[kctx]
	rc.mu.Unlock()
	if s != nil && time.Since(s.at) < chartSourcesFresh {
		return s, nil
	}
	cs, err := e.clients.For(kctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, liveFluxTimeout)
	defer cancel()
	s = &liveSources{at: time.Now(), objs: map[string]map[string]any{}, missing: map[string]string{}, ctxName: fmt.Sprintf("context %q", cs.Context)}
	for _, gvk := range []schema.GroupVersionKind{fluxHelmRepositoryGVK, fluxHelmChartGVK, fluxOCIRepositoryGVK} {
		items, err := listFlux(ctx, cs, gvk)
		if err == nil && items == nil && gvk == fluxOCIRepositoryGVK {
			// Flux before 2.6 serves OCIRepository at v1beta2 only.
			items, err = listFlux(ctx, cs, fluxOCIRepositoryBeta2)
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || !apierrors.IsForbidden(err) && len(s.missing) == 2 {
				// No list answered: the cluster is not reachable.
				return nil, err
			}
			s.missing[gvk.Kind] = redact.Text(err.Error())
			continue
		}
		for _, o := range items {
			s.objs[gvk.Kind+"/"+o.GetNamespace()+"/"+o.GetName()] = o.Object
		}
	}
	rc.mu.Lock()
	rc.sources[kctx] = s
	rc.mu.Unlock()
	return s, nil
}

// resolveArgoChart resolves an Argo CD source.chart: the repository the
// Application names, fetched only when one of the live Argo CD
// repository Secrets (in the Application's namespace) or --chart-repo
// names it; the version targetRevision pins, else the one Argo CD last
// synced (status.sync.revision).
func (e *core) resolveArgoChart(ctx context.Context, a app.App) (charts.Ref, []charts.Location, string, error) {
	rc := a.Spec.Chart
	ref := charts.Ref{Repo: rc.RepoURL, Chart: rc.Chart, Version: rc.Version}
	why := "from " + redact.URL(rc.RepoURL)
	if !charts.Exact(rc.Version) {
		applied, field := rc.ArgoSynced(e.appliedOf(a))
		if !charts.Exact(applied) {
			return ref, nil, "", &errChart{rc.Where(), fmt.Sprintf("targetRevision %q is not one version and Argo CD has not synced one (%s); kdrift renders a chart only at the version the cluster resolved or at a pinned one", rc.Version, field), "pin targetRevision, or sync the Application once"}
		}
		ref.Version = applied
		why += " (the version Argo CD last synced, " + field + ")"
	}
	locs, err := e.argoRepositories(ctx, a.Spec.Destination.Context, a.Origin.Namespace)
	if err != nil {
		why += "; the Argo CD repository Secrets could not be read (" + err.Error() + ")"
	}
	locs, withCreds := e.withArgoCredentials(a.Spec.Destination.Context, a.Origin.Namespace, ref, locs)
	why += withCreds
	return ref, locs, why, nil
}

// argoRepositories lists the locations the live Argo CD repository
// Secrets of namespace ns name (label argocd.argoproj.io/secret-type:
// repository or repo-creds, type helm or oci; their url, type and
// enableOCI, and username and password, kept in memory only: see
// chartcreds.go), kept as long as the Flux sources are.
func (e *core) argoRepositories(ctx context.Context, kctx, ns string) ([]charts.Location, error) {
	if kctx == "" {
		kctx = e.opts.Context
	}
	key := kctx + "\x00" + ns
	rc := e.charts
	rc.mu.Lock()
	s := rc.argo[key]
	rc.mu.Unlock()
	if s != nil && time.Since(s.at) < chartSourcesFresh {
		return s.locs, s.err
	}
	s = &argoRepos{at: time.Now()}
	cs, err := e.clients.For(kctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, liveFluxTimeout)
	defer cancel()
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	list, err := cs.Dynamic.Resource(secrets).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "argocd.argoproj.io/secret-type in (repository,repo-creds)", Limit: maxLiveFluxObjects})
	if err != nil {
		s.err = err
	} else {
		for _, sec := range list.Items {
			field := func(k string) string {
				v, _, _ := unstructured.NestedString(sec.Object, "data", k)
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					return ""
				}
				return strings.TrimSpace(string(b))
			}
			u, typ := field("url"), field("type")
			if u == "" || typ != "helm" && typ != "oci" {
				// A Git repository's Secret (type git, the default)
				// says where Argo CD reads Git, not where charts are.
				continue
			}
			if (typ == "oci" || field("enableOCI") == "true") && !strings.Contains(u, "://") {
				u = "oci://" + u
			}
			s.locs = append(s.locs, charts.Location{URL: u, By: fmt.Sprintf("Argo CD repository Secret %s/%s (live on context %q)", ns, sec.GetName(), cs.Context)})
			// And username and password, kept in memory for the fetch.
			s.creds = append(s.creds, argoCredOf(sec.GetLabels()["argocd.argoproj.io/secret-type"], u, ns+"/"+sec.GetName(), field))
		}
	}
	rc.mu.Lock()
	rc.argo[key] = s
	rc.mu.Unlock()
	return s.locs, s.err
}
