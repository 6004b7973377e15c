package ui

import (
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/status"
)

// withEvents gives the fake backend a channel holding evs, then closed.
func withEvents(be *fakeBackend, evs ...status.Event) *fakeBackend {
	be.events = make(chan status.Event, len(evs))
	for _, e := range evs {
		be.events <- e
	}
	close(be.events)
	return be
}

func TestEventsAreReadOneAfterAnother(t *testing.T) {
	changed := testApps()[0]
	changed.Sync = status.SyncOutOfSync
	changed.ComparedAt = testNow.Add(time.Minute)
	be := withEvents(newFake(),
		status.AppStatusChanged{Base: status.Base{App: "api-prod", Time: testNow}, Status: changed},
		status.Healed{Base: status.Base{App: "web-staging", Time: testNow}, Ref: deployRef, Fields: []string{"/spec/replicas"}},
	)
	h := newHarness(t, be, testConfig())
	a, _ := h.m.c.app("api-prod")
	if a.Sync != status.SyncOutOfSync {
		t.Errorf("AppStatusChanged not applied: %s", a.Sync)
	}
	// The last event wins the status line until the channel closed.
	h.wantScreen("! the engine stopped: no more updates (q quits)")
}

func TestEventMessages(t *testing.T) {
	tests := []struct {
		name   string
		ev     status.Event
		screen []string
	}{
		{"healed", status.Healed{Base: status.Base{App: "render-prod"}, Ref: deployRef, Fields: []string{"/spec/replicas"}},
			[]string{"healed Deployment/prod/render in render-prod: /spec/replicas"}},
		{"pruned", status.Pruned{Base: status.Base{App: "render-prod"}, Ref: cmRef}, []string{"pruned ConfigMap/prod/render-old from render-prod"}},
		{"fight", status.Fight{Base: status.Base{App: "render-prod"}, Ref: deployRef, Field: "/spec/replicas", Manager: "kubectl", Rewrites: 4},
			[]string{"! fight: kubectl keeps rewriting /spec/replicas on Deployment/prod/render; kdrift stopped healing it"}},
		{"app error", status.ErrorEvent{Base: status.Base{App: "web-staging"}, Message: "render failed"}, []string{"! web-staging: render failed"}},
		{"object error", status.ErrorEvent{Base: status.Base{App: "render-prod"}, Ref: &deployRef, Message: "apply failed: conflict"},
			[]string{"! Deployment/prod/render: apply failed: conflict"}},
		{"cluster unreachable", status.Reachability{Base: status.Base{Time: *at(15, 42)}, Target: status.TargetCluster, Context: "prod", Message: "dial tcp: connection refused"},
			[]string{"⚠ cluster prod unreachable since 15:42: dial tcp: connection refused"}},
		{"git unreachable", status.Reachability{Base: status.Base{Time: *at(9, 5)}, Target: status.TargetGit, Message: "fetch: timeout"},
			[]string{"⚠ Git unreachable since 09:05: fetch: timeout"}},
		{"drift", status.DriftDetected{Base: status.Base{App: "api-prod"}, Resource: deployStatus()}, []string{"drift: Deployment/prod/render in api-prod"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newFake(), testConfig())
			h.send(eventMsg(tt.ev))
			h.wantScreen(tt.screen...)
		})
	}
}

func TestDriftDetectedUpdatesTheApp(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.send(eventMsg(status.DriftDetected{Base: status.Base{App: "api-prod"}, Resource: deployStatus()}))
	a, _ := h.m.c.app("api-prod")
	if a.DriftedObjects() != 1 {
		t.Fatalf("api-prod drifted objects = %d", a.DriftedObjects())
	}
	h.wantScreen("api-prod      prod/prod     ✓ Synced     ♥ Healthy      1")
}

func TestBannerStaysUntilReachableAgain(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	down := status.Reachability{Base: status.Base{Time: *at(15, 42)}, Target: status.TargetCluster, Context: "prod", Message: "refused"}
	h.send(eventMsg(down))
	later := down
	later.Time = *at(15, 50)
	h.send(eventMsg(later))
	h.wantScreen("unreachable since 15:42")
	h.keys("j", "enter") // the banner does not take the keyboard
	if h.m.Breadcrumb() != "apps › app render-prod" {
		t.Errorf("keys did not reach the view: %s", h.m.Breadcrumb())
	}
	h.wantScreen("unreachable since 15:42")
	up := down
	up.Up = true
	h.send(eventMsg(up))
	if len(h.m.c.banners) != 0 {
		t.Errorf("banner stayed after the cluster came back")
	}
	h.wantScreen("cluster reachable again")
}

func TestEngineErrorBeforeAnyAppIsTheErrorState(t *testing.T) {
	be := withEvents(newFake(), status.ErrorEvent{Message: "clone git@example.com:ops/deploy: authentication required"})
	be.apps = nil
	m := NewModel(t.Context(), be, testConfig())
	h := &harness{t: t, m: m, be: be}
	// The event arrives before the first snapshot.
	h.send(eventMsg(status.ErrorEvent{Message: "clone git@example.com:ops/deploy: authentication required"}))
	if m.State() != "error" {
		t.Fatalf("state = %s, want error", m.State())
	}
	h.wantScreen("kdrift cannot start: clone git@example.com:ops/deploy: authentication required", "ctrl+r retries")
	h.keys("s", "f", "enter")
	h.wantCalls()
	be.apps = testApps()
	h.keys("ctrl+r")
	if m.State() != "ready" {
		t.Fatalf("state after retry = %s", m.State())
	}
	h.keys("q")
	if !h.quit {
		t.Error("q does not quit")
	}
}

func TestLoadingState(t *testing.T) {
	m := NewModel(t.Context(), newFake(), testConfig())
	if m.State() != "loading" {
		t.Fatalf("state = %s", m.State())
	}
	h := &harness{t: t, m: m, be: newFake()}
	h.wantScreen("loading apps…")
	h.drain(m.Init())
	if m.State() != "ready" {
		t.Fatalf("state = %s", m.State())
	}
}

func TestNoAppsMessage(t *testing.T) {
	be := newFake()
	be.apps = nil
	h := newHarness(t, be, testConfig())
	h.wantScreen("no apps found: declare them in .kdrift/*.yaml at the repository root")
}

func reach(up bool) status.Reachability {
	return status.Reachability{Base: status.Base{Time: *at(15, 42)}, Target: status.TargetCluster, Context: "prod", Up: up, Message: "dial tcp 10.0.0.1:6443: connect: connection refused"}
}

// TestOpenObjectFollowsTheCluster: a diff or ownership view reloads its
// object when the engine reports it drifted or healed, keeping the place;
// events about other objects leave it alone.
func TestOpenObjectFollowsTheCluster(t *testing.T) {
	be := newFake()
	h := newHarness(t, be, testConfig())
	h.keys("j", "enter", "j", "o")
	ov := h.m.top().(*ownersView)
	h.keys("k")
	place := ov.cursor
	healed := deployDetail()
	for i, l := range healed.Live {
		if l.Path == "/spec/replicas" {
			healed.Live[i].Text, healed.Live[i].Owners = "  replicas: 6", healed.Desired[0].Owners
		}
	}
	be.details[deployRef] = healed
	h.send(eventMsg(status.Healed{Base: status.Base{App: "api-prod"}, Ref: deployRef}))
	if strings.Contains(h.screen(), "replicas: 6") {
		t.Fatal("an event for another app reloaded the view")
	}
	h.send(eventMsg(status.Healed{Base: status.Base{App: "render-prod"}, Ref: cmRef}))
	if strings.Contains(h.screen(), "replicas: 6") {
		t.Fatal("an event for another object reloaded the view")
	}
	h.send(eventMsg(status.Healed{Base: status.Base{App: "render-prod"}, Ref: deployRef, Fields: []string{"/spec/replicas"}}))
	h.wantScreen("replicas: 6")
	if ov.cursor != place {
		t.Errorf("reload moved the cursor from %d to %d", place, ov.cursor)
	}
	h.keys("esc", "enter")
	if _, ok := h.m.top().(*diffView); !ok {
		t.Fatalf("top view is %T, want the diff", h.m.top())
	}
	be.details[deployRef] = deployDetail()
	h.send(eventMsg(status.DriftDetected{Base: status.Base{App: "render-prod"}, Resource: deployStatus()}))
	h.wantScreen("replicas: 12")
}
