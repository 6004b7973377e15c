package ui

import (
	"testing"

	"kdrift.dev/kdrift/keymap"
)

func TestKeyAction(t *testing.T) {
	km := keymap.DefaultKeyMap()
	tests := []struct {
		view viewKind
		key  string
		want Action
	}{
		{kindApps, "j", ActDown}, {kindApps, "down", ActDown}, {kindApps, "k", ActUp}, {kindApps, "up", ActUp},
		{kindApps, "g", ActTop}, {kindApps, "G", ActBottom}, {kindApps, "pgdown", ActPageDown}, {kindApps, "pgup", ActPageUp},
		{kindApps, "enter", ActEnter}, {kindApps, "esc", ActBack}, {kindApps, "q", ActQuit}, {kindApps, "ctrl+c", ActQuit},
		{kindApps, "?", ActHelp}, {kindApps, "/", ActFilter}, {kindApps, ":", ActCommand}, {kindApps, "ctrl+r", ActRefresh},
		{kindApps, "S", ActSort}, {kindApps, "space", ActMark}, {kindApps, "h", ActHistory},
		{kindApps, "s", ActSync}, {kindApps, "f", ActFreeze}, {kindApps, "F", ActUnfreeze},
		{kindApps, "r", ActNone}, {kindApps, "i", ActNone}, {kindApps, "d", ActNone}, {kindApps, "u", ActNone}, {kindApps, "z", ActNone},
		{kindApp, "enter", ActEnter}, {kindApp, "d", ActDiff}, {kindApp, "o", ActOwners}, {kindApp, "h", ActHistory},
		{kindApp, "s", ActSync}, {kindApp, "f", ActFreeze}, {kindApp, "F", ActUnfreeze}, {kindApp, "/", ActNone}, {kindApp, "space", ActNone},
		{kindDiff, "n", ActNextChange}, {kindDiff, "N", ActPrevChange}, {kindDiff, "u", ActUnified}, {kindDiff, "x", ActHideNoise},
		{kindDiff, "o", ActOwners}, {kindDiff, "i", ActIgnore}, {kindDiff, "s", ActSync}, {kindDiff, "enter", ActNone}, {kindDiff, "r", ActNone},
		{kindOwners, "i", ActIgnore}, {kindOwners, "d", ActDiff}, {kindOwners, "n", ActNextChange}, {kindOwners, "u", ActNone},
		{kindHistory, "r", ActRevert}, {kindHistory, "enter", ActEnter}, {kindHistory, "s", ActNone}, {kindHistory, "f", ActNone},
		{kindHistory, "i", ActNone}, {kindHistory, "j", ActDown},
	}
	for _, tt := range tests {
		if got := keyAction(km, tt.view, press(tt.key)); got != tt.want {
			t.Errorf("view %d key %q = %v, want %v", tt.view, tt.key, got, tt.want)
		}
	}
}

func TestKeyActionFollowsOverrides(t *testing.T) {
	km, err := keymap.Config{Keys: map[string][]string{"sync": {"Z"}, "freeze": {}}}.Apply(keymap.DefaultKeyMap())
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]Action{"Z": ActSync, "s": ActNone, "f": ActNone, "F": ActUnfreeze} {
		if got := keyAction(km, kindApps, press(key)); got != want {
			t.Errorf("%q = %v, want %v", key, got, want)
		}
	}
}

func TestMutatingActions(t *testing.T) {
	for a := ActNone; a <= ActIgnore; a++ {
		want := a == ActSync || a == ActFreeze || a == ActUnfreeze || a == ActRevert || a == ActIgnore
		if a.Mutating() != want {
			t.Errorf("%v.Mutating() = %v", a, a.Mutating())
		}
		if a.String() == "" {
			t.Errorf("action %d has no name", a)
		}
	}
}
