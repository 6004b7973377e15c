package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/keymap"
)

// Action is what a key press means in a view; keyAction computes it and
// the views and root then act on it.
type Action int

// Action values.
const (
	ActNone Action = iota
	ActUp
	ActDown
	ActTop
	ActBottom
	ActPageUp
	ActPageDown
	ActEnter
	ActBack
	ActQuit
	ActHelp
	ActFilter
	ActCommand
	ActRefresh
	ActSort
	ActMark
	ActDiff
	ActOwners
	ActHistory
	ActUnified
	ActNextChange
	ActPrevChange
	ActHideNoise
	ActSync
	ActFreeze
	ActUnfreeze
	ActRevert
	ActIgnore
)

var actionNames = map[Action]string{
	ActNone: "none", ActUp: "up", ActDown: "down", ActTop: "top", ActBottom: "bottom",
	ActPageUp: "page up", ActPageDown: "page down", ActEnter: "open", ActBack: "back",
	ActQuit: "quit", ActHelp: "help", ActFilter: "filter", ActCommand: "command",
	ActRefresh: "refresh", ActSort: "sort", ActMark: "mark", ActDiff: "diff",
	ActOwners: "ownership", ActHistory: "history", ActUnified: "unified",
	ActNextChange: "next change", ActPrevChange: "previous change", ActHideNoise: "hide noise",
	ActSync: "sync", ActFreeze: "freeze", ActUnfreeze: "unfreeze", ActRevert: "revert",
	ActIgnore: "ignore",
}

// String is the action's name as the status line says it.
func (a Action) String() string { return actionNames[a] }

// Mutating reports whether the action changes Git or the cluster, which
// read-only mode refuses.
func (a Action) Mutating() bool {
	switch a {
	case ActSync, ActFreeze, ActUnfreeze, ActRevert, ActIgnore:
		return true
	}
	return false
}

// viewKind names the views for the key mapping.
type viewKind int

// viewKind values.
const (
	kindApps viewKind = iota
	kindApp
	kindDiff
	kindOwners
	kindHistory
	kindOwnerMap
)

// keyAction maps a key press to the action it means in a view of kind k.
// It is pure: the same keymap, view and key always give the same action.
// Keys that mean nothing in the view give ActNone.
func keyAction(km keymap.KeyMap, k viewKind, msg tea.KeyPressMsg) Action {
	common := []struct {
		b key.Binding
		a Action
	}{
		{km.Up, ActUp}, {km.Down, ActDown}, {km.Top, ActTop}, {km.Bottom, ActBottom},
		{km.PageUp, ActPageUp}, {km.PageDn, ActPageDown},
		{km.Back, ActBack}, {km.Quit, ActQuit}, {km.Help, ActHelp},
		{km.Command, ActCommand}, {km.Refresh, ActRefresh},
	}
	for _, c := range common {
		if key.Matches(msg, c.b) {
			return c.a
		}
	}
	type entry struct {
		b     key.Binding
		a     Action
		views []viewKind
	}
	appLevel := []viewKind{kindApps, kindApp, kindDiff, kindOwners}
	specific := []entry{
		{km.Enter, ActEnter, []viewKind{kindApps, kindApp, kindHistory, kindOwnerMap}},
		{km.Filter, ActFilter, []viewKind{kindApps}},
		{km.Sort, ActSort, []viewKind{kindApps}},
		{km.Mark, ActMark, []viewKind{kindApps}},
		{km.Diff, ActDiff, []viewKind{kindApp, kindOwners}},
		{km.Owners, ActOwners, []viewKind{kindApp, kindDiff}},
		{km.History, ActHistory, []viewKind{kindApps, kindApp}},
		{km.Unified, ActUnified, []viewKind{kindDiff}},
		{km.NextChange, ActNextChange, []viewKind{kindDiff, kindOwners}},
		{km.PrevChange, ActPrevChange, []viewKind{kindDiff, kindOwners}},
		{km.HideNoise, ActHideNoise, []viewKind{kindDiff}},
		{km.Sync, ActSync, appLevel},
		{km.Freeze, ActFreeze, appLevel},
		{km.Unfreeze, ActUnfreeze, appLevel},
		{km.Revert, ActRevert, []viewKind{kindHistory}},
		{km.Ignore, ActIgnore, []viewKind{kindDiff, kindOwners}},
	}
	for _, e := range specific {
		if !key.Matches(msg, e.b) {
			continue
		}
		for _, v := range e.views {
			if v == k {
				return e.a
			}
		}
	}
	return ActNone
}
