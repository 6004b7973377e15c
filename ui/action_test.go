package ui

import (
	"testing"

	"kdrift.dev/kdrift/keymap"
)

func TestKeyAction(t *testing.T) {
	km := keymap.DefaultKeyMap()
	tests := []struct {
		view keymap.View
		key  string
		want keymap.Action
	}{
		{keymap.ViewApps, "j", keymap.ActDown}, {keymap.ViewApps, "down", keymap.ActDown}, {keymap.ViewApps, "k", keymap.ActUp}, {keymap.ViewApps, "up", keymap.ActUp},
		{keymap.ViewApps, "g", keymap.ActTop}, {keymap.ViewApps, "G", keymap.ActBottom}, {keymap.ViewApps, "pgdown", keymap.ActPageDown}, {keymap.ViewApps, "pgup", keymap.ActPageUp},
		{keymap.ViewApps, "enter", keymap.ActEnter}, {keymap.ViewApps, "esc", keymap.ActBack}, {keymap.ViewApps, "q", keymap.ActQuit}, {keymap.ViewApps, "ctrl+c", keymap.ActQuit},
		{keymap.ViewApps, "?", keymap.ActHelp}, {keymap.ViewApps, "/", keymap.ActFilter}, {keymap.ViewApps, ":", keymap.ActCommand}, {keymap.ViewApps, "ctrl+r", keymap.ActRefresh},
		{keymap.ViewApps, "S", keymap.ActSort}, {keymap.ViewApps, "space", keymap.ActMark}, {keymap.ViewApps, "h", keymap.ActHistory},
		{keymap.ViewApps, "s", keymap.ActSync}, {keymap.ViewApps, "f", keymap.ActFreeze}, {keymap.ViewApps, "F", keymap.ActUnfreeze},
		{keymap.ViewApps, "r", keymap.ActNone}, {keymap.ViewApps, "i", keymap.ActNone}, {keymap.ViewApps, "d", keymap.ActNone}, {keymap.ViewApps, "u", keymap.ActNone}, {keymap.ViewApps, "z", keymap.ActNone},
		{keymap.ViewApp, "enter", keymap.ActEnter}, {keymap.ViewApp, "d", keymap.ActDiff}, {keymap.ViewApp, "o", keymap.ActOwners}, {keymap.ViewApp, "h", keymap.ActHistory},
		{keymap.ViewApp, "s", keymap.ActSync}, {keymap.ViewApp, "f", keymap.ActFreeze}, {keymap.ViewApp, "F", keymap.ActUnfreeze}, {keymap.ViewApp, "/", keymap.ActNone}, {keymap.ViewApp, "space", keymap.ActNone},
		{keymap.ViewDiff, "n", keymap.ActNextChange}, {keymap.ViewDiff, "N", keymap.ActPrevChange}, {keymap.ViewDiff, "u", keymap.ActUnified}, {keymap.ViewDiff, "x", keymap.ActHideNoise},
		{keymap.ViewDiff, "o", keymap.ActOwners}, {keymap.ViewDiff, "i", keymap.ActIgnore}, {keymap.ViewDiff, "s", keymap.ActSync}, {keymap.ViewDiff, "enter", keymap.ActNone}, {keymap.ViewDiff, "r", keymap.ActNone},
		{keymap.ViewOwners, "i", keymap.ActIgnore}, {keymap.ViewOwners, "d", keymap.ActDiff}, {keymap.ViewOwners, "n", keymap.ActNextChange}, {keymap.ViewOwners, "u", keymap.ActNone},
		{keymap.ViewHistory, "r", keymap.ActRevert}, {keymap.ViewHistory, "enter", keymap.ActEnter}, {keymap.ViewHistory, "s", keymap.ActNone}, {keymap.ViewHistory, "f", keymap.ActNone},
		{keymap.ViewHistory, "i", keymap.ActNone}, {keymap.ViewHistory, "j", keymap.ActDown},
	}
	for _, tt := range tests {
		if got := km.Lookup(tt.view, press(tt.key)); got != tt.want {
			t.Errorf("view %d key %q = %v, want %v", tt.view, tt.key, got, tt.want)
		}
	}
}

func TestKeyActionFollowsOverrides(t *testing.T) {
	km, err := keymap.Config{Keys: map[string][]string{"sync": {"Z"}, "freeze": {}}}.Apply(keymap.DefaultKeyMap())
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]keymap.Action{"Z": keymap.ActSync, "s": keymap.ActNone, "f": keymap.ActNone, "F": keymap.ActUnfreeze} {
		if got := km.Lookup(keymap.ViewApps, press(key)); got != want {
			t.Errorf("%q = %v, want %v", key, got, want)
		}
	}
}

func TestMutatingActions(t *testing.T) {
	for a := keymap.ActNone; a <= keymap.ActIgnore; a++ {
		want := a == keymap.ActSync || a == keymap.ActFreeze || a == keymap.ActUnfreeze || a == keymap.ActRevert || a == keymap.ActIgnore
		if a.Mutating() != want {
			t.Errorf("%v.Mutating() = %v", a, a.Mutating())
		}
		if a.String() == "" {
			t.Errorf("action %d has no name", a)
		}
	}
}

// TestEveryRowIsHandled: every key of the table does something in every
// view it is listed for, in the view or at the root, and every view's help
// lists only keys that work there.
func TestEveryRowIsHandled(t *testing.T) {
	open := map[keymap.View][]string{
		keymap.ViewApps:     nil,
		keymap.ViewApp:      {"j", "enter"},
		keymap.ViewDiff:     {"j", "enter", "j", "enter"},
		keymap.ViewOwners:   {"j", "enter", "j", "o"},
		keymap.ViewHistory:  {"j", "h"},
		keymap.ViewOwnerMap: {":", "o", "w", "n", "e", "r", "s", "enter"},
	}
	km := keymap.DefaultKeyMap()
	for _, v := range keymap.Views() {
		nav, ok := open[v]
		if !ok {
			t.Errorf("view %d: the test does not know how to open it", v)
			continue
		}
		for _, r := range keymap.Rows() {
			if !r.WorksIn(v) {
				continue
			}
			h := newHarness(t, newFake(), testConfig())
			h.keys(nav...)
			top := h.m.top()
			if top.kind() != v {
				t.Fatalf("keys %v opened view %d, want %d", nav, top.kind(), v)
			}
			if got := km.Lookup(v, press(r.Keys[0])); got != r.Action {
				t.Errorf("view %d key %q = %v, want %v", v, r.Keys[0], got, r.Action)
			}
			if out := top.handleKey(press(r.Keys[0]), r.Action); out.handled {
				continue
			}
			if _, ok := h.m.rootAction(r.Action); !ok {
				t.Errorf("%v is listed for view %d but neither the view nor the root handles it", r.Action, v)
			}
		}
		h := newHarness(t, newFake(), testConfig())
		h.keys(nav...)
		for _, b := range h.m.top().shortHelp() {
			if km.Lookup(v, press(b.Keys()[0])) == keymap.ActNone {
				t.Errorf("view %d footer lists %v, which does nothing there", v, b.Help())
			}
		}
	}
}
