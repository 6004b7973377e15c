package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// TestCommandTable: every `:` command of the table, by its name and by
// each alias, runs that command; the `?` help and the "unknown command"
// hint list every command of the table (`:owners` included).
func TestCommandTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		if c.help == "" || c.run == nil {
			t.Errorf(":%s lacks its help or what it runs", c.name)
		}
		for _, n := range append([]string{c.name}, c.aliases...) {
			if seen[n] {
				t.Errorf("%q names two commands", n)
			}
			seen[n] = true
			if got, ok := lookupCommand(n); !ok || got.name != c.name {
				t.Errorf("%q runs :%s, want :%s", n, got.name, c.name)
			}
		}
	}

	h := newHarness(t, newFake(), testConfig())
	h.send(windowSize(240, 40))
	h.keys("?")
	help := h.screen()
	h.keys("esc")
	h.keys(":").typeText("nope").keys("enter")
	hint := h.m.Status()
	for _, c := range commands {
		if !strings.Contains(help, c.usage()) || !strings.Contains(help, c.help) {
			t.Errorf("? help lacks %s (%s):\n%s", c.usage(), c.help, help)
		}
		if !strings.Contains(hint, c.usage()) {
			t.Errorf("unknown-command hint lacks %s: %s", c.usage(), hint)
		}
	}
	if !strings.Contains(help, ":owners") {
		t.Errorf("? help lacks :owners:\n%s", help)
	}
}

// TestCommandAliases: the aliases do what the names do, end to end.
func TestCommandAliases(t *testing.T) {
	for _, tt := range []struct {
		line, crumb string
		quit        bool
	}{
		{"own", "owners", false},
		{"owners Deployment.apps", "owners Deployment.apps", false},
		{"a", "apps", false},
		{"context", "apps", false},
		{"quit", "apps", true},
		{"q!", "apps", true},
	} {
		h := newHarness(t, newFake(), testConfig())
		h.keys(":").typeText(tt.line).keys("enter")
		if got := h.m.Breadcrumb(); !strings.HasSuffix(got, tt.crumb) {
			t.Errorf(":%s: views %q, want the last %q", tt.line, got, tt.crumb)
		}
		if h.quit != tt.quit {
			t.Errorf(":%s: quit = %v, want %v", tt.line, h.quit, tt.quit)
		}
		if h.m.busy != 0 {
			t.Errorf(":%s: busy = %d after it finished: the spinner keeps running", tt.line, h.m.busy)
		}
	}
}

// resultNobodyHandles is a result type no case of the root knows.
type resultNobodyHandles struct{}

// TestRunMarksAnyResultDone: work started through Model.run is done when
// its result comes back, whatever the result's type, so no result can
// leave the spinner running.
func TestRunMarksAnyResultDone(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	for _, result := range []tea.Msg{resultNobodyHandles{}, nil, tea.BatchMsg{}} {
		cmd := h.m.run(func() tea.Msg { return result })
		if h.m.busy != 1 {
			t.Fatalf("busy = %d while %T runs, want 1", h.m.busy, result)
		}
		if !strings.Contains(h.screen(), h.m.spinner.View()) {
			t.Errorf("no spinner while %T runs", result)
		}
		h.drain(cmd)
		if h.m.busy != 0 {
			t.Errorf("busy = %d after %T came back: the spinner keeps running", h.m.busy, result)
		}
	}
}
