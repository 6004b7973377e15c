package ui

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

func TestNoColorHasNoColourButKeepsMarkers(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "enter", "j", "enter")
	out := h.m.render()
	for _, seq := range []string{"\x1b[38;", "\x1b[48;", "\x1b[3", "\x1b[4"} {
		if strings.Contains(out, seq) {
			t.Fatalf("NO_COLOR output holds colour sequence %q", seq)
		}
	}
	// Changed lines still stand out: bold, and the ≠ separator.
	if !strings.Contains(out, "\x1b[1m") || !strings.Contains(out, "≠") {
		t.Error("changed lines are not marked without colour")
	}
}

func TestColourStylesForDarkAndLight(t *testing.T) {
	for _, dark := range []bool{true, false} {
		s := NewStyles(DefaultTheme(), dark, false)
		if !strings.Contains(s.Bad.Render("x"), "\x1b[") {
			t.Errorf("dark=%v: colour styles render no colour", dark)
		}
		if len(s.Managers) < 5 {
			t.Errorf("too few manager colours: %d", len(s.Managers))
		}
	}
}

func TestExpiredFreezeReadsAsEnded(t *testing.T) {
	be := newFake()
	late := testNow.Add(-30 * 60e9)
	be.apps[1].Freeze.Until = &late
	be.apps[1].SelfHeal = status.SelfHealOn
	h := newHarness(t, be, testConfig())
	h.wantScreen("on (freeze ended 15:30)")
	if strings.Contains(h.screen(), "FROZEN") {
		t.Error("an expired freeze still shows FROZEN")
	}
}

func TestSpinnerWhileWorkRuns(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	// Press s without draining: the plan is still running.
	_, cmd := h.m.Update(press("G"))
	h.drain(cmd)
	_, cmd = h.m.Update(press("s"))
	if h.m.busy != 1 {
		t.Fatalf("busy = %d while the plan runs", h.m.busy)
	}
	if !strings.Contains(h.screen(), "planning sync of api-prod…") {
		t.Errorf("no progress text:\n%s", h.screen())
	}
	h.drain(cmd)
	if h.m.busy != 0 {
		t.Errorf("busy = %d after the plan came back", h.m.busy)
	}
}

// TestEveryOwnerClassHasAStyle: a new owner class fails here until the UI
// colours it (status.OwnerClasses is the list; its own test keeps that
// list whole).
func TestEveryOwnerClassHasAStyle(t *testing.T) {
	for _, c := range status.OwnerClasses() {
		if _, ok := classStyles[c]; !ok {
			t.Errorf("owner class %q has no style in classStyles", c)
		}
	}
}
