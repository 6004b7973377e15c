package ui

import (
	"time"

	"kdrift.dev/kdrift/engine/status"
)

// store is what the UI shows of the engine, folded from its snapshots and
// events: every app's latest status, the activity log and the banners of
// what is unreachable. Each fold is one method per kind of news; the root
// calls them and tells the views (appsChangedMsg) when apps changed.
type store struct {
	// apps is the latest status of every app, by name; version grows on
	// every change so views can tell when their caches are stale.
	apps    map[string]status.AppStatus
	version int
	// activity is the engine's latest events worth a line (heals,
	// prunes, fights, freezes, errors), newest last.
	activity []activityEntry
	// banners are the standing warnings, by target and context.
	banners map[string]banner
}

// banner is a standing warning: the cluster or Git is unreachable.
type banner struct {
	text  string
	since time.Time
}

func newStore() store {
	return store{apps: map[string]status.AppStatus{}, banners: map[string]banner{}}
}

func (s *store) app(name string) (status.AppStatus, bool) {
	a, ok := s.apps[name]
	return a, ok
}

// loaded folds a snapshot of every app (start-up, ctrl+r, a backend
// switch): the snapshot may be older than events already folded, so an
// app keeps the newer comparison; apps the snapshot lacks leave.
func (s *store) loaded(apps []status.AppStatus) {
	next := make(map[string]status.AppStatus, len(apps))
	for _, a := range apps {
		if old, ok := s.apps[a.Name]; ok && old.ComparedAt.After(a.ComparedAt) {
			a = old
		}
		next[a.Name] = a
	}
	s.apps = next
	s.version++
}

// statusChanged folds an AppStatusChanged: the app's new status.
func (s *store) statusChanged(e status.AppStatusChanged) {
	s.apps[e.Status.Name] = e.Status
	s.version++
}

// driftDetected folds a DriftDetected: the resource's new status replaces
// the one of the same object in its app, or joins the app's resources.
// It reports false, changing nothing, when the app is not known.
func (s *store) driftDetected(e status.DriftDetected) bool {
	a, ok := s.apps[e.App]
	if !ok {
		return false
	}
	res := append([]status.ResourceStatus(nil), a.Resources...)
	found := false
	for i := range res {
		if res[i].Ref == e.Resource.Ref {
			res[i], found = e.Resource, true
		}
	}
	if !found {
		res = append(res, e.Resource)
	}
	a.Resources = res
	s.apps[a.Name] = a
	s.version++
	return true
}

// reachability folds a Reachability: a banner from the first time the
// cluster (of a context) or Git is unreachable, with that time (loc is
// the clock's zone), until it is reachable again.
func (s *store) reachability(ev status.Reachability, loc *time.Location) {
	k := string(ev.Target) + "/" + ev.Context
	if ev.Up {
		delete(s.banners, k)
		return
	}
	if _, ok := s.banners[k]; ok {
		return
	}
	what := "Git"
	if ev.Target == status.TargetCluster {
		what = "cluster"
		if ev.Context != "" {
			what += " " + ev.Context
		}
	}
	s.banners[k] = banner{since: ev.Time, text: what + " unreachable since " + ev.Time.In(loc).Format("15:04") + ": " + ev.Message}
}

// record adds one entry to the activity log, dropping the oldest past
// activityKeep.
func (s *store) record(at time.Time, app, text string, bad bool) {
	s.activity = append(s.activity, activityEntry{at: at, app: app, text: text, bad: bad})
	if n := len(s.activity); n > activityKeep {
		s.activity = append([]activityEntry(nil), s.activity[n-activityKeep:]...)
	}
}
