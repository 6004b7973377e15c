package controller

import (
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

// TestOutOfSyncReasonMetric: an app Argo CD owns that waits for it gives
// reason="waiting" 1 and the others 0, besides sync OutOfSync; a kdrift
// App gives no reason series.
func TestOutOfSyncReasonMetric(t *testing.T) {
	m := NewMetrics(Source{
		Apps: func() []status.AppStatus {
			return []status.AppStatus{
				{Name: "ep-qa", Sync: status.SyncOutOfSync, Difference: status.DifferenceWaiting, Health: status.HealthHealthy, OwnerEngine: "Argo CD"},
				{Name: "shop", Sync: status.SyncOutOfSync, Health: status.HealthHealthy},
			}
		},
		GitError: func() error { return nil },
		Leader:   func() bool { return true },
	})
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != metricOutOfSyncReason {
			continue
		}
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["app"]+"/"+labels["reason"]] = s.GetGauge().GetValue()
		}
	}
	want := map[string]float64{"ep-qa/waiting": 1, "ep-qa/drift": 0, "ep-qa/render": 0}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("series %v, want %v", got, want)
		}
	}
}
