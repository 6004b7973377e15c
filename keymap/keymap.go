// Package keymap holds kdrift's keys as data: one row per action with its
// config name, default keys, the views it works in, whether it changes Git
// or the cluster, and its help. The key lookup, the config file's names,
// the read-only check and the help of every view are derived from that one
// table; adding a key is adding a row (and handling its action).
package keymap

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// Action is what a key press means in a view.
type Action int

// Action values; each but ActNone has exactly one row in the table.
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
	ActActivity
	// actionCount is one past the last action; tests iterate up to it.
	actionCount
)

// View is one screen of the UI, for saying where a key works.
type View int

// View values.
const (
	ViewApps View = iota
	ViewApp
	ViewDiff
	ViewOwners
	ViewHistory
	// ViewOwnerMap is the field ownership table (:owners) and the objects
	// behind one of its rows.
	ViewOwnerMap
	// viewCount is one past the last view.
	viewCount
)

// Views is every view, in the order of the View values.
func Views() []View {
	out := make([]View, viewCount)
	for i := range out {
		out[i] = View(i)
	}
	return out
}

// Group is a column of the full help, by purpose.
type Group int

// Group values, in the order the help shows them.
const (
	GroupMove Group = iota
	GroupView
	GroupGeneral
	GroupAct
	groupCount
)

// Row is everything about one key: the action, the name the config file
// overrides it by, its default keys, the views it works in (nil: every
// view), whether it changes Git or the cluster (read-only mode refuses
// it), its help column and help text, and the help text of views that
// name it for their context.
type Row struct {
	Action Action
	Name   string
	Keys   []string
	// HelpKey is how the help shows the default keys ("k/↑").
	HelpKey  string
	Help     string
	Views    []View
	Mutating bool
	Group    Group
	// ViewHelp relabels the key in a view ("show commit" for enter in the
	// history).
	ViewHelp map[View]string
}

// appLevel is every view but the history: where the app-level actions
// (sync, freeze, unfreeze) work.
var appLevel = []View{ViewApps, ViewApp, ViewDiff, ViewOwners}

// table is every key of the UI. Keep one row per action; the order is the
// order within each help column.
var table = []Row{
	{Action: ActUp, Name: "up", Keys: []string{"k", "up"}, HelpKey: "k/↑", Help: "up", Group: GroupMove},
	{Action: ActDown, Name: "down", Keys: []string{"j", "down"}, HelpKey: "j/↓", Help: "down", Group: GroupMove},
	{Action: ActTop, Name: "top", Keys: []string{"g", "home"}, HelpKey: "g", Help: "top", Group: GroupMove},
	{Action: ActBottom, Name: "bottom", Keys: []string{"G", "end"}, HelpKey: "G", Help: "bottom", Group: GroupMove},
	{Action: ActPageUp, Name: "pageUp", Keys: []string{"pgup", "ctrl+b"}, HelpKey: "pgup", Help: "page up", Group: GroupMove},
	{Action: ActPageDown, Name: "pageDown", Keys: []string{"pgdown", "ctrl+f"}, HelpKey: "pgdn", Help: "page down", Group: GroupMove},
	{Action: ActEnter, Name: "enter", Keys: []string{"enter"}, Help: "open", Group: GroupMove,
		Views: []View{ViewApps, ViewApp, ViewHistory, ViewOwnerMap}, ViewHelp: map[View]string{ViewApp: "diff", ViewHistory: "show commit"}},
	{Action: ActBack, Name: "back", Keys: []string{"esc"}, Help: "back", Group: GroupMove},

	{Action: ActDiff, Name: "diff", Keys: []string{"d"}, Help: "diff", Group: GroupView, Views: []View{ViewApp, ViewOwners}},
	{Action: ActOwners, Name: "owners", Keys: []string{"o"}, Help: "ownership", Group: GroupView, Views: []View{ViewApp, ViewDiff}},
	{Action: ActHistory, Name: "history", Keys: []string{"h"}, Help: "history", Group: GroupView, Views: []View{ViewApps, ViewApp}},
	{Action: ActUnified, Name: "unified", Keys: []string{"u"}, Help: "unified/side-by-side", Group: GroupView, Views: []View{ViewDiff}},
	{Action: ActNextChange, Name: "nextChange", Keys: []string{"n"}, Help: "next drifted field", Group: GroupView,
		Views: []View{ViewDiff, ViewOwners}, ViewHelp: map[View]string{ViewOwners: "next flagged"}},
	{Action: ActPrevChange, Name: "prevChange", Keys: []string{"N"}, Help: "previous drifted field", Group: GroupView,
		Views: []View{ViewDiff, ViewOwners}, ViewHelp: map[View]string{ViewOwners: "prev flagged"}},
	{Action: ActActivity, Name: "activity", Keys: []string{"a"}, Help: "show/hide activity log", Group: GroupView, Views: []View{ViewApps}},
	{Action: ActHideNoise, Name: "hideNoise", Keys: []string{"x"}, Help: "show/hide defaults", Group: GroupView, Views: []View{ViewDiff}},

	{Action: ActFilter, Name: "filter", Keys: []string{"/"}, Help: "filter (!x inverts)", Group: GroupGeneral, Views: []View{ViewApps}},
	{Action: ActCommand, Name: "command", Keys: []string{":"}, Help: "command line", Group: GroupGeneral},
	{Action: ActSort, Name: "sort", Keys: []string{"S"}, Help: "sort by next column", Group: GroupGeneral, Views: []View{ViewApps}},
	{Action: ActMark, Name: "mark", Keys: []string{"space"}, Help: "mark", Group: GroupGeneral, Views: []View{ViewApps}},
	{Action: ActRefresh, Name: "refresh", Keys: []string{"ctrl+r"}, Help: "refresh", Group: GroupGeneral},
	{Action: ActHelp, Name: "help", Keys: []string{"?"}, Help: "help", Group: GroupGeneral},
	{Action: ActQuit, Name: "quit", Keys: []string{"q", "ctrl+c"}, HelpKey: "q", Help: "quit", Group: GroupGeneral},

	{Action: ActSync, Name: "sync", Keys: []string{"s"}, Help: "sync", Group: GroupAct, Views: appLevel, Mutating: true},
	{Action: ActFreeze, Name: "freeze", Keys: []string{"f"}, Help: "freeze", Group: GroupAct, Views: append(append([]View(nil), appLevel...), ViewOwnerMap), Mutating: true,
		ViewHelp: map[View]string{ViewApp: "freeze resource", ViewDiff: "freeze field", ViewOwnerMap: "freeze field"}},
	{Action: ActUnfreeze, Name: "unfreeze", Keys: []string{"F"}, Help: "unfreeze", Group: GroupAct, Views: appLevel, Mutating: true,
		ViewHelp: map[View]string{ViewApp: "unfreeze (resource)", ViewDiff: "unfreeze (field)"}},
	{Action: ActRevert, Name: "revert", Keys: []string{"r"}, Help: "revert commit", Group: GroupAct, Views: []View{ViewHistory}, Mutating: true},
	{Action: ActIgnore, Name: "ignore", Keys: []string{"i"}, Help: "ignore field", Group: GroupAct, Views: []View{ViewDiff, ViewOwners, ViewOwnerMap}, Mutating: true,
		ViewHelp: map[View]string{ViewOwnerMap: "ignore field (kind)"}},
}

// rowOf indexes table by action; built once.
var rowOf = func() [actionCount]*Row {
	var idx [actionCount]*Row
	for i := range table {
		idx[table[i].Action] = &table[i]
	}
	return idx
}()

// Rows is a copy of the key table, in help order.
func Rows() []Row { return append([]Row(nil), table...) }

// WorksIn reports whether the row's action means something in view v.
func (r Row) WorksIn(v View) bool {
	if r.Views == nil {
		return true
	}
	for _, w := range r.Views {
		if w == v {
			return true
		}
	}
	return false
}

// String is the action's config name ("none" for ActNone), as the status
// line says it.
func (a Action) String() string {
	if a > ActNone && a < actionCount && rowOf[a] != nil {
		return rowOf[a].Name
	}
	return "none"
}

// Mutating reports whether the action changes Git or the cluster, which
// read-only mode refuses.
func (a Action) Mutating() bool {
	return a > ActNone && a < actionCount && rowOf[a] != nil && rowOf[a].Mutating
}

// KeyMap is the bindings of every action: the table's defaults with the
// user's overrides applied.
type KeyMap struct {
	b [actionCount]key.Binding
}

// DefaultKeyMap returns kdrift's default bindings, from the table.
func DefaultKeyMap() KeyMap {
	var k KeyMap
	for _, r := range table {
		hk := r.HelpKey
		if hk == "" {
			hk = strings.Join(r.Keys, "/")
		}
		k.b[r.Action] = key.NewBinding(key.WithKeys(r.Keys...), key.WithHelp(hk, r.Help))
	}
	return k
}

// Binding is the binding of action a.
func (k KeyMap) Binding(a Action) key.Binding {
	if a <= ActNone || a >= actionCount {
		return key.Binding{}
	}
	return k.b[a]
}

// Lookup maps a key press to the action it means in view v; keys that mean
// nothing there give ActNone. It is pure: the same keymap, view and key
// always give the same action.
func (k KeyMap) Lookup(v View, msg tea.KeyPressMsg) Action {
	for _, r := range table {
		if r.WorksIn(v) && key.Matches(msg, k.b[r.Action]) {
			return r.Action
		}
	}
	return ActNone
}

// In is the binding of action a as view v shows it in its help (relabelled
// for the view's context).
func (k KeyMap) In(v View, a Action) key.Binding {
	b := k.Binding(a)
	if r := rowOf[a]; r != nil {
		if d, ok := r.ViewHelp[v]; ok {
			b.SetHelp(b.Help().Key, d)
		}
	}
	return b
}

// Short is the footer help of view v: the given actions, in that order,
// as the view names them. Actions that do not work in v are left out.
func (k KeyMap) Short(v View, actions ...Action) []key.Binding {
	out := make([]key.Binding, 0, len(actions))
	for _, a := range actions {
		if r := rowOf[a]; r != nil && r.WorksIn(v) {
			out = append(out, k.In(v, a))
		}
	}
	return out
}

// FullHelp is the `?` help of view v: every key that works there, in
// columns by purpose (moving, viewing, general, acting).
func (k KeyMap) FullHelp(v View) [][]key.Binding {
	var cols [groupCount][]key.Binding
	for _, r := range table {
		if r.WorksIn(v) {
			cols[r.Group] = append(cols[r.Group], k.In(v, r.Action))
		}
	}
	out := make([][]key.Binding, 0, groupCount)
	for _, c := range cols {
		if len(c) > 0 {
			out = append(out, c)
		}
	}
	return out
}
