package ui

import (
	"fmt"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/status"
)

func storeRef(name string) status.ObjectRef {
	return status.ObjectRef{Kind: "Deployment", Namespace: "prod", Name: name}
}

// TestStoreLoadedKeepsNewerComparisons: a snapshot older than an event
// already folded keeps the event's status; apps the snapshot lacks leave.
func TestStoreLoadedKeepsNewerComparisons(t *testing.T) {
	s := newStore()
	t0 := time.Date(2026, 3, 1, 15, 0, 0, 0, time.UTC)
	s.statusChanged(status.AppStatusChanged{Status: status.AppStatus{Name: "web", Sync: status.SyncOutOfSync, ComparedAt: t0.Add(time.Minute)}})
	s.statusChanged(status.AppStatusChanged{Status: status.AppStatus{Name: "gone", ComparedAt: t0}})
	v := s.version
	s.loaded([]status.AppStatus{{Name: "web", Sync: status.SyncSynced, ComparedAt: t0}, {Name: "api", ComparedAt: t0}})
	if a, _ := s.app("web"); a.Sync != status.SyncOutOfSync {
		t.Errorf("web is %s: the older snapshot won", a.Sync)
	}
	if _, ok := s.app("gone"); ok || len(s.apps) != 2 {
		t.Errorf("apps after the snapshot: %v", s.apps)
	}
	if s.version == v {
		t.Error("the version did not grow")
	}
}

// TestStoreDriftDetected: a drifted resource replaces its old status in
// the app or joins it; an unknown app changes nothing.
func TestStoreDriftDetected(t *testing.T) {
	s := newStore()
	s.statusChanged(status.AppStatusChanged{Status: status.AppStatus{Name: "web", Resources: []status.ResourceStatus{
		{Ref: storeRef("a"), Status: status.ResourceSynced},
	}}})
	before := s.apps["web"].Resources
	if !s.driftDetected(status.DriftDetected{Base: status.Base{App: "web"}, Resource: status.ResourceStatus{Ref: storeRef("a"), Status: status.ResourceOutOfSync}}) {
		t.Fatal("drift of a known app not folded")
	}
	s.driftDetected(status.DriftDetected{Base: status.Base{App: "web"}, Resource: status.ResourceStatus{Ref: storeRef("b"), Status: status.ResourceMissing}})
	got := fmt.Sprint(s.apps["web"].Resources)
	if res := s.apps["web"].Resources; len(res) != 2 || res[0].Status != status.ResourceOutOfSync || res[1].Ref != storeRef("b") {
		t.Errorf("resources = %s", got)
	}
	if before[0].Status != status.ResourceSynced {
		t.Error("the fold changed the slice of the status it replaced")
	}
	v := s.version
	if s.driftDetected(status.DriftDetected{Base: status.Base{App: "nope"}, Resource: status.ResourceStatus{Ref: storeRef("a")}}) || s.version != v {
		t.Error("drift of an unknown app changed the store")
	}
}

// TestStoreReachability: one banner per target from the first time it is
// unreachable, until it is reachable again.
func TestStoreReachability(t *testing.T) {
	s := newStore()
	at := time.Date(2026, 3, 1, 15, 42, 0, 0, time.UTC)
	down := status.Reachability{Base: status.Base{Time: at}, Target: status.TargetCluster, Context: "prod", Message: "connection refused"}
	s.reachability(down, time.UTC)
	later := down
	later.Time = at.Add(8 * time.Minute)
	s.reachability(later, time.UTC)
	git := status.Reachability{Base: status.Base{Time: at}, Target: status.TargetGit, Message: "timeout"}
	s.reachability(git, time.UTC)
	if b := s.banners["cluster/prod"]; b.text != "cluster prod unreachable since 15:42: connection refused" || len(s.banners) != 2 {
		t.Fatalf("banners = %v", s.banners)
	}
	if b := s.banners["git/"]; b.text != "Git unreachable since 15:42: timeout" {
		t.Errorf("Git banner = %q", b.text)
	}
	up := down
	up.Up = true
	s.reachability(up, time.UTC)
	if _, ok := s.banners["cluster/prod"]; ok || len(s.banners) != 1 {
		t.Errorf("banners once the cluster is back = %v", s.banners)
	}
}

// TestStoreRecordKeepsTheNewest: the activity log keeps the newest
// activityKeep entries, oldest first.
func TestStoreRecordKeepsTheNewest(t *testing.T) {
	s := newStore()
	for i := range activityKeep + 5 {
		s.record(time.Time{}, "", fmt.Sprint(i), false)
	}
	if len(s.activity) != activityKeep || s.activity[0].text != "5" || s.activity[activityKeep-1].text != fmt.Sprint(activityKeep+4) {
		t.Errorf("activity: %d entries from %q", len(s.activity), s.activity[0].text)
	}
}
