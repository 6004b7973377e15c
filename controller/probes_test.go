package controller

import (
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/status"
)

// TestProbes: healthy while the heartbeat is fresh, not before the first
// beat nor once it is stale; ready only after Git was read and every
// declared App had a first pass, and ready stays ready when a new App
// appears.
func TestProbes(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	var beat time.Time
	rev := ""
	names := []string{"a", "b"}
	var apps []status.AppStatus
	p := &Probes{
		Heartbeat: func() time.Time { return beat },
		Declared:  func() (string, []string) { return rev, names },
		Apps:      func() []status.AppStatus { return apps },
		Now:       func() time.Time { return now },
	}
	if err := p.Healthy(); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("before the first beat: %v", err)
	}
	beat = now.Add(-10 * time.Second)
	if err := p.Healthy(); err != nil {
		t.Fatalf("fresh beat: %v", err)
	}
	if err := p.Ready(); err == nil || !strings.Contains(err.Error(), "Git") {
		t.Fatalf("before Git was read: %v", err)
	}
	rev = "abc"
	apps = []status.AppStatus{{Name: "a", Revision: "abc", ComparedAt: now}}
	if err := p.Ready(); err == nil || !strings.Contains(err.Error(), "1 of 2 apps (b") {
		t.Fatalf("with b not compared: %v", err)
	}
	apps = append(apps, status.AppStatus{Name: "b", Revision: "abc", ComparedAt: now})
	if err := p.Ready(); err != nil {
		t.Fatalf("all compared: %v", err)
	}
	names = append(names, "c")
	if err := p.Ready(); err != nil {
		t.Fatalf("a new app made the controller unready: %v", err)
	}
	now = now.Add(time.Minute)
	if err := p.Healthy(); err == nil || !strings.Contains(err.Error(), "stuck") {
		t.Fatalf("stale beat: %v", err)
	}
	if err := p.Ready(); err == nil {
		t.Fatal("ready with a stale heartbeat")
	}
}
