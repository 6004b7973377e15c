package ui

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/backend"
)

// roleFake is a fake that says who heals and counts its Closes.
type roleFake struct {
	*fakeBackend
	role   atomic.Value
	closed atomic.Int32
}

func (r *roleFake) Role() string { return r.role.Load().(string) }
func (r *roleFake) Close()       { r.closed.Add(1) }

func newRoleFake(role string) *roleFake {
	f := newFake()
	f.events = make(chan status.Event, 8)
	r := &roleFake{fakeBackend: f}
	r.role.Store(role)
	return r
}

// next is the UI's next event from sw, as the root's waitEvent reads it.
func next(t *testing.T, sw *backend.Switch) any {
	t.Helper()
	select {
	case ev, ok := <-sw.Events():
		if !ok {
			return EventsClosedMsg{}
		}
		return eventMsg(ev)
	case <-time.After(5 * time.Second):
		t.Fatal("no event from the switch backend")
		return nil
	}
}

// apply hands the UI one message as the Bubble Tea loop would, and runs
// what it leads to except the re-armed wait for the next event (the test
// reads the events itself).
func (h *harness) apply(msg any) {
	h.m.Update(msg)
	h.drain(h.m.onEvent(msg))
}

// TestSwitchKeepsThePersonsPlace: an attached UI whose leader is gone
// switches to its own engine while a freeze dialog is open with a
// half-typed reason. The dialog, the typed text and the selection stay;
// the top line says what happened; events come from the new backend only
// and the old one is closed; the reason, once submitted, goes to the new
// backend; the reload drops the apps the new backend does not know.
func TestSwitchKeepsThePersonsPlace(t *testing.T) {
	attached := newRoleFake("following kdrift/kdrift-7c9f, leader since 14:00")
	own := newRoleFake("")
	own.apps = own.apps[:2] // api-prod, render-prod
	sw := backend.NewSwitch(attached)
	defer sw.Close()
	h := &harness{t: t, m: NewModel(context.Background(), sw, testConfig()), be: own.fakeBackend}
	h.send(windowSize(140, 30), AppsLoadedMsg{Apps: sw.Apps()})
	h.wantScreen("following kdrift/kdrift-7c9f, leader since 14:00", "web-staging")
	h.keys("j", "f").typeText("INC-7 hold the rend")
	h.wantScreen("Freeze", "INC-7 hold the rend")

	sw.Announce("leader kdrift/kdrift-7c9f gone at 16:00: starting own compare…")
	if msg := next(t, sw); msg != (RoleChangedMsg{}) {
		t.Fatalf("announce: %#v", msg)
	}
	h.wantScreen("leader kdrift/kdrift-7c9f gone at 16:00: starting own compare…", "INC-7 hold the rend")

	own.role.Store("leader kdrift/kdrift-7c9f gone at 16:00: comparing here; healing from this terminal")
	sw.Switch(own, "the leader is gone: this terminal compares (and heals while it holds the Lease)")
	msg := next(t, sw)
	if m, ok := msg.(BackendSwitchedMsg); !ok || m.Reload {
		t.Fatalf("switch: %#v", msg)
	}
	h.apply(msg)
	if attached.closed.Load() != 1 || own.closed.Load() != 0 {
		t.Fatalf("closed: attached %d, own %d", attached.closed.Load(), own.closed.Load())
	}
	h.wantScreen("comparing here; healing from this terminal", "this terminal compares", "INC-7 hold the rend", "web-staging")

	// The old backend's events no longer reach the UI; the new one's do.
	attached.events <- status.AppStatusChanged{Base: status.Base{App: "web-staging"}, Status: status.AppStatus{Name: "web-staging", Sync: status.SyncSynced}}
	own.events <- status.Healed{Base: status.Base{App: "render-prod", Time: testNow}, Ref: deployRef, Fields: []string{"/spec/replicas"}}
	msg = next(t, sw)
	if _, ok := msg.(HealedMsg); !ok {
		t.Fatalf("after the switch: %#v", msg)
	}
	h.apply(msg)

	// The new backend compared every app: the reload drops the app it
	// does not know; the dialog is still there.
	sw.Reload("")
	msg = next(t, sw)
	if m, ok := msg.(BackendSwitchedMsg); !ok || !m.Reload {
		t.Fatalf("reload: %#v", msg)
	}
	h.apply(msg)
	if h.m.dialog == nil {
		t.Fatal("the dialog closed")
	}
	h.typeText("er at 12").keys("enter")
	h.wantCalls(`freeze render-prod reason="INC-7 hold the render at 12" for=0s`)
	if s := h.screen(); strings.Contains(s, "web-staging") {
		t.Errorf("an app the new backend does not know is still listed:\n%s", s)
	}
}

// TestSwitchAfterClose: a switch that comes after Close (the person quit
// while the engine started) closes the new backend; nothing leaks.
func TestSwitchAfterClose(t *testing.T) {
	a, b := newRoleFake("a"), newRoleFake("b")
	sw := backend.NewSwitch(a)
	sw.Close()
	sw.Switch(b, "")
	sw.Announce("x")
	sw.Reload("")
	if a.closed.Load() != 1 || b.closed.Load() != 1 {
		t.Fatalf("closed: a %d, b %d", a.closed.Load(), b.closed.Load())
	}
}

// TestSwitchRoleChange: a role that changes with no event (the Lease
// taken) reaches the UI within a role check.
func TestSwitchRoleChange(t *testing.T) {
	a := newRoleFake("not healing yet: taking the Lease")
	sw := backend.NewSwitch(a)
	defer sw.Close()
	a.role.Store("healing from this terminal")
	if msg := next(t, sw); msg != (RoleChangedMsg{}) {
		t.Fatalf("role change: %#v", msg)
	}
}
