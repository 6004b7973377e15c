package controller

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// fleet is a synthetic status snapshot of n Apps of 20 resources each, a
// tenth of them out of sync, some frozen and fighting.
func fleet(n int) []status.AppStatus {
	now := time.Now()
	until := now.Add(time.Hour)
	out := make([]status.AppStatus, n)
	for i := range out {
		a := status.AppStatus{
			Name: fmt.Sprintf("app-%04d", i), Path: fmt.Sprintf("apps/app-%04d", i),
			Destination: app.Destination{Namespace: fmt.Sprintf("ns-%04d", i)},
			Sync:        status.SyncSynced, Health: status.HealthHealthy, SelfHeal: status.SelfHealOn,
			Revision: "0123456789abcdef0123456789abcdef01234567", ComparedAt: now,
		}
		for j := 0; j < 20; j++ {
			a.Resources = append(a.Resources, status.ResourceStatus{Ref: status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: a.Destination.Namespace, Name: fmt.Sprintf("d%d", j)}, Status: status.ResourceSynced, Health: status.HealthHealthy})
		}
		if i%10 == 0 {
			a.Sync = status.SyncOutOfSync
			a.OutOfSyncSince = &now
			a.Resources[0].Status = status.ResourceOutOfSync
		}
		if i%50 == 0 {
			a.SelfHeal = status.SelfHealFrozen
			a.Freeze = &app.Freeze{Reason: "incident", By: "someone", At: now, Until: &until}
			a.Fights = []status.Fight{{Field: "/spec/replicas", Manager: "horizontal-pod-autoscaler"}}
		}
		out[i] = a
	}
	return out
}

// BenchmarkScrape1000Apps is one GET of /metrics (collection and text
// encoding) with 1,000 Apps in the engine's snapshot and their counters
// set. Target: under 50 ms. Besides wall time it reports the process's
// CPU time per scrape (cpu-ms/op), which a shared, busy machine does not
// inflate.
func BenchmarkScrape1000Apps(b *testing.B) {
	apps := fleet(1000)
	m := NewMetrics(Source{Apps: func() []status.AppStatus { return apps }, GitError: func() error { return nil }, Leader: func() bool { return true }})
	for _, a := range apps {
		m.Count(status.Healed{Base: status.Base{App: a.Name}})
	}
	h := promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || w.Body.Len() == 0 {
			b.Fatalf("scrape: %d", w.Code)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
