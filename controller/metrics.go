package controller

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
)

// Source is what the metrics read at scrape time: the engine's status
// snapshot and whether Git answered last time. The engine provides Apps
// (engine.Reader) and GitError (engine.RepoInfo); the controller wires
// Leader.
type Source struct {
	// Apps returns the status of every app (engine.Reader.Apps).
	Apps func() []status.AppStatus
	// GitError is the last fetch's error, nil when Git answered
	// (engine.RepoInfo.FetchError).
	GitError func() error
	// Leader reports whether this process heals. Without leader election
	// a controller that is not read-only is the one healer.
	Leader func() bool
}

// Metrics is kdrift's Prometheus instrumentation. Per-app gauges are
// computed from the engine's status snapshot at scrape time (cheap, and
// consistent with what `kdrift status` shows); counters come from the
// engine's events (Count) and its Observer hook, which Metrics implements.
type Metrics struct {
	src Source
	reg *prometheus.Registry

	requests    *prometheus.CounterVec
	compares    *prometheus.CounterVec
	render      prometheus.Histogram
	compare     prometheus.Histogram
	fetch       prometheus.Histogram
	fetchErrors prometheus.Counter

	// heartbeat is the Unix nanoseconds of the engine loop's last beat.
	heartbeat atomic.Int64

	mu     sync.Mutex
	counts map[string]*appCounts
}

// appCounts are one app's event counters.
type appCounts struct{ heals, prunes, fights float64 }

// Metric names, shared by the collector, the alert rules and their test.
const (
	metricAppInfo         = "kdrift_app_info"
	metricSyncStatus      = "kdrift_app_sync_status"
	metricHealthStatus    = "kdrift_app_health_status"
	metricOutOfSyncSince  = "kdrift_app_out_of_sync_since_timestamp_seconds"
	metricFrozen          = "kdrift_app_frozen"
	metricFreezeUntil     = "kdrift_app_freeze_until_timestamp_seconds"
	metricDrifted         = "kdrift_app_drifted_resources"
	metricFightingFields  = "kdrift_app_fighting_fields"
	metricOutOfSyncReason = "kdrift_app_out_of_sync_reason"
	metricHeals           = "kdrift_heals_total"
	metricPrunes          = "kdrift_prunes_total"
	metricFights          = "kdrift_fights_total"
	metricGitReachable    = "kdrift_git_reachable"
	metricLeader          = "kdrift_leader"
	metricHeartbeatSecond = "kdrift_engine_heartbeat_timestamp_seconds"
)

var (
	descInfo      = prometheus.NewDesc(metricAppInfo, "An App kdrift looks after (always 1), with its destination (context/namespace) and path.", []string{"app", "destination", "path"}, nil)
	descSync      = prometheus.NewDesc(metricSyncStatus, "The App's sync status: 1 for the current status, 0 for the others.", []string{"app", "status"}, nil)
	descHealth    = prometheus.NewDesc(metricHealthStatus, "The App's health: 1 for the current status, 0 for the others.", []string{"app", "status"}, nil)
	descOOS       = prometheus.NewDesc(metricOutOfSyncSince, "When the App last went OutOfSync, as a Unix time; 0 when it is not OutOfSync.", []string{"app"}, nil)
	descFrozen    = prometheus.NewDesc(metricFrozen, "1 while the App is frozen (self-heal and prune stopped by `kdrift freeze`), else 0.", []string{"app"}, nil)
	descUntil     = prometheus.NewDesc(metricFreezeUntil, "The end of the App's freeze as a Unix time; 0 with no freeze or one without an end. Past it the freeze no longer holds, even while Git still carries it.", []string{"app"}, nil)
	descDrifted   = prometheus.NewDesc(metricDrifted, "How many of the App's resources are not in sync (drifted, missing, extraneous, failed).", []string{"app"}, nil)
	descReason    = prometheus.NewDesc(metricOutOfSyncReason, "Why an App Argo CD or Flux owns is OutOfSync: 1 for the current reason (drift by a person or controller, waiting for the owner to apply the desired revision, render disagreement with the owner), 0 for the others; all 0 when it is not OutOfSync. Not given for kdrift's own Apps.", []string{"app", "reason"}, nil)
	descFighting  = prometheus.NewDesc(metricFightingFields, "How many fields of the App kdrift stopped healing because another manager keeps rewriting them.", []string{"app"}, nil)
	descHeals     = prometheus.NewDesc(metricHeals, "Objects kdrift healed (applied back to Git's state).", []string{"app"}, nil)
	descPrunes    = prometheus.NewDesc(metricPrunes, "Objects kdrift pruned because they left Git.", []string{"app"}, nil)
	descFights    = prometheus.NewDesc(metricFights, "Fights kdrift detected: a field another manager rewrote after each heal.", []string{"app"}, nil)
	descGit       = prometheus.NewDesc(metricGitReachable, "1 when the last Git fetch succeeded, else 0.", nil, nil)
	descLeader    = prometheus.NewDesc(metricLeader, "1 when this process is the one that heals and prunes, else 0.", nil, nil)
	descHeartbeat = prometheus.NewDesc(metricHeartbeatSecond, "The engine loop's last heartbeat as a Unix time; 0 before the loop started.", nil, nil)
)

// descDriftedFields is the App's drifted fields, the number `kdrift
// status`, the diff view and the app view show.
var descDriftedFields = prometheus.NewDesc("kdrift_app_drifted_fields", "How many of the App's fields are drift (the count kdrift status and the diff view show).", []string{"app"}, nil)

// The status values in the order the exposition sorts them, so that the
// registry's sort finds them in order (a 1,000-app scrape sorts 9,000
// series of these two families).
var (
	syncValues   = []status.Sync{status.SyncError, status.SyncOutOfSync, status.SyncSynced, status.SyncUnknown}
	healthValues = []status.Health{status.HealthDegraded, status.HealthHealthy, status.HealthMissing, status.HealthProgressing, status.HealthUnknown}
	reasonValues = []status.Difference{status.DifferenceDrift, status.DifferenceRender, status.DifferenceWaiting}
)

// NewMetrics returns the metrics of an engine read through src, in a
// registry of their own that also holds the Go runtime and process
// collectors and client-go's REST client and workqueue metrics.
func NewMetrics(src Source) *Metrics {
	m := &Metrics{
		src:    src,
		reg:    prometheus.NewRegistry(),
		counts: map[string]*appCounts{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kdrift_apply_requests_total",
			Help: "Requests kdrift sent to change objects, by verb (apply, dry-run-apply, dry-run-create, patch, delete) and result (success, or the apiserver's reason: Conflict, Invalid, Forbidden...).",
		}, []string{"verb", "result"}),
		compares: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kdrift_compares_total",
			Help: "Objects compared, by the tier that decided: local (from the live object, no request) or dry-run (a server-side dry-run apply).",
		}, []string{"tier"}),
		render: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kdrift_render_duration_seconds", Help: "How long rendering an App's folder took.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		compare: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kdrift_compare_duration_seconds", Help: "How long comparing an App's objects with the cluster took (dry-runs included).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		fetch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kdrift_git_fetch_duration_seconds", Help: "How long a Git fetch took, failed ones included.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		fetchErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "kdrift_git_fetch_errors_total", Help: "Git fetches that failed."}),
	}
	m.reg.MustRegister(m, m.requests, m.compares, m.render, m.compare, m.fetch, m.fetchErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerClientGoMetrics(m.reg)
	return m
}

// Registry is where every metric of this process is registered.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Heartbeat records a beat of the engine's loop (engine.Observer).
func (m *Metrics) Heartbeat(at time.Time) { m.heartbeat.Store(at.UnixNano()) }

// LastHeartbeat is the engine loop's last beat; zero before the first.
func (m *Metrics) LastHeartbeat() time.Time {
	n := m.heartbeat.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Timed records a step's duration (engine.Observer).
func (m *Metrics) Timed(step engine.Phase, _ string, took time.Duration, err error) {
	switch step {
	case engine.PhaseRender:
		m.render.Observe(took.Seconds())
	case engine.PhaseCompare:
		m.compare.Observe(took.Seconds())
	case engine.PhaseFetch:
		m.fetch.Observe(took.Seconds())
		if err != nil {
			m.fetchErrors.Inc()
		}
	}
}

// Request counts a request and its outcome (engine.Observer).
func (m *Metrics) Request(verb engine.Verb, err error) {
	m.requests.WithLabelValues(string(verb), outcome(err)).Inc()
}

// Compared counts an object compared by tier (engine.CompareObserver).
func (m *Metrics) Compared(tier status.Decided) {
	m.compares.WithLabelValues(string(tier)).Inc()
}

// outcome names a request's result for a label: "success", the
// apiserver's reason (a small set fixed by the Kubernetes API), or "error"
// for a failure without one (the network).
func outcome(err error) string {
	if err == nil {
		return "success"
	}
	if r := apierrors.ReasonForError(err); r != "" {
		return string(r)
	}
	return "error"
}

// Count counts what an engine event says was done: heals, prunes, fights.
func (m *Metrics) Count(ev status.Event) {
	var f func(*appCounts)
	switch ev.(type) {
	case status.Healed:
		f = func(c *appCounts) { c.heals++ }
	case status.Pruned:
		f = func(c *appCounts) { c.prunes++ }
	case status.Fight:
		f = func(c *appCounts) { c.fights++ }
	default:
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts[ev.AppName()]
	if c == nil {
		c = &appCounts{}
		m.counts[ev.AppName()] = c
	}
	f(c)
}

// Describe sends the descriptions of the snapshot metrics
// (prometheus.Collector).
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInfo, descSync, descHealth, descOOS, descFrozen, descUntil, descDrifted, descDriftedFields, descFighting, descHeals, descPrunes, descFights, descGit, descLeader, descHeartbeat} {
		ch <- d
	}
}

// Collect computes the per-app metrics from the engine's current status
// snapshot (prometheus.Collector). Every app in the snapshot has all its
// series, counters at 0 included, so rate() and absent() work from the
// first scrape.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	apps := m.src.Apps()
	m.mu.Lock()
	counts := make(map[string]appCounts, len(m.counts))
	for k, v := range m.counts {
		counts[k] = *v
	}
	m.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	seen := make(map[string]bool, len(apps))
	for i := range apps {
		a := &apps[i]
		seen[a.Name] = true
		gauge(descInfo, 1, a.Name, destination(a), a.Path)
		for _, s := range syncValues {
			gauge(descSync, boolValue(a.Sync == s), a.Name, string(s))
		}
		for _, h := range healthValues {
			gauge(descHealth, boolValue(a.Health == h), a.Name, string(h))
		}
		oos := 0.0
		if a.Sync == status.SyncOutOfSync && a.OutOfSyncSince != nil {
			oos = unixSeconds(*a.OutOfSyncSince)
		}
		gauge(descOOS, oos, a.Name)
		gauge(descFrozen, boolValue(a.SelfHeal == status.SelfHealFrozen), a.Name)
		until := 0.0
		if a.Freeze != nil && a.Freeze.Until != nil {
			until = unixSeconds(*a.Freeze.Until)
		}
		gauge(descUntil, until, a.Name)
		gauge(descDrifted, float64(a.DriftedObjects()), a.Name)
		gauge(descDriftedFields, float64(a.DriftedFields()), a.Name)
		gauge(descFighting, float64(len(a.Fights)), a.Name)
		if a.OwnerEngine != "" {
			for _, d := range reasonValues {
				gauge(descReason, boolValue(a.Sync == status.SyncOutOfSync && a.Difference == d), a.Name, string(d))
			}
		}
		c := counts[a.Name]
		counter(descHeals, c.heals, a.Name)
		counter(descPrunes, c.prunes, a.Name)
		counter(descFights, c.fights, a.Name)
	}
	// Counters of an app that left the snapshot keep their last values:
	// a counter must not go back to nothing while the process runs.
	for name, c := range counts {
		if !seen[name] {
			counter(descHeals, c.heals, name)
			counter(descPrunes, c.prunes, name)
			counter(descFights, c.fights, name)
		}
	}
	gitUp := 1.0
	if m.src.GitError != nil && m.src.GitError() != nil {
		gitUp = 0
	}
	gauge(descGit, gitUp)
	gauge(descLeader, boolValue(m.src.Leader != nil && m.src.Leader()))
	beat := 0.0
	if t := m.LastHeartbeat(); !t.IsZero() {
		beat = unixSeconds(t)
	}
	gauge(descHeartbeat, beat)
}

// destination renders an App's destination as context/namespace; an
// empty context is the kubeconfig's current one, shown as "current".
func destination(a *status.AppStatus) string {
	ctx := a.Destination.Context
	if ctx == "" {
		ctx = "current"
	}
	return ctx + "/" + a.Destination.Namespace
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
