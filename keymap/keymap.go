// Package keymap holds kdrift's key bindings as data: one bubbles/key
// binding per action, with its help text, grouped for the short and full
// help views, and overridable from the user's config file.
package keymap

import "charm.land/bubbles/v2/key"

// KeyMap is every key binding of the UI. A view relabels a shared binding
// for its context (enter opens a diff in the app view, a commit in history)
// instead of inventing a new one.
type KeyMap struct {
	Up     key.Binding
	Down   key.Binding
	Top    key.Binding
	Bottom key.Binding
	PageUp key.Binding
	PageDn key.Binding
	Enter  key.Binding
	Back   key.Binding
	Quit   key.Binding
	Help   key.Binding

	Filter  key.Binding
	Command key.Binding
	Refresh key.Binding
	Sort    key.Binding
	Mark    key.Binding

	Diff       key.Binding
	Owners     key.Binding
	History    key.Binding
	Unified    key.Binding
	NextChange key.Binding
	PrevChange key.Binding
	HideNoise  key.Binding

	Sync     key.Binding
	Freeze   key.Binding
	Unfreeze key.Binding
	Revert   key.Binding
	Ignore   key.Binding
}

// DefaultKeyMap returns kdrift's default bindings.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:     key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
		Down:   key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
		Top:    key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "top")),
		Bottom: key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "bottom")),
		PageUp: key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDn: key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Enter:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Back:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Quit:   key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:   key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),

		Filter:  key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter (!x inverts)")),
		Command: key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "command (:apps :ctx :q)")),
		Refresh: key.NewBinding(key.WithKeys("ctrl+r"), key.WithHelp("ctrl+r", "refresh")),
		Sort:    key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "sort by next column")),
		Mark:    key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "mark")),

		Diff:       key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "diff")),
		Owners:     key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "ownership")),
		History:    key.NewBinding(key.WithKeys("h"), key.WithHelp("h", "history")),
		Unified:    key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "unified/side-by-side")),
		NextChange: key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "next change")),
		PrevChange: key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "previous change")),
		HideNoise:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "hide ignored/defaulted")),

		Sync:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sync")),
		Freeze:   key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "freeze")),
		Unfreeze: key.NewBinding(key.WithKeys("F"), key.WithHelp("F", "unfreeze")),
		Revert:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "revert commit")),
		Ignore:   key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "ignore field")),
	}
}

// Mutating returns the bindings whose actions change Git or the cluster;
// read-only mode refuses them.
func (k KeyMap) Mutating() []key.Binding {
	return []key.Binding{k.Sync, k.Freeze, k.Unfreeze, k.Revert, k.Ignore}
}

// ShortHelp is the one-line help: the keys needed most.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Enter, k.Back, k.Sync, k.Freeze, k.Filter, k.Help, k.Quit}
}

// FullHelp is every binding, grouped by purpose: moving, viewing, acting.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDn, k.Enter, k.Back},
		{k.Diff, k.Owners, k.History, k.Unified, k.NextChange, k.PrevChange, k.HideNoise},
		{k.Filter, k.Command, k.Sort, k.Mark, k.Refresh, k.Help, k.Quit},
		{k.Sync, k.Freeze, k.Unfreeze, k.Revert, k.Ignore},
	}
}

// bindings names every binding the config file may override, by the name
// used in the file.
func (k *KeyMap) bindings() map[string]*key.Binding {
	return map[string]*key.Binding{
		"up": &k.Up, "down": &k.Down, "top": &k.Top, "bottom": &k.Bottom,
		"pageUp": &k.PageUp, "pageDown": &k.PageDn,
		"enter": &k.Enter, "back": &k.Back, "quit": &k.Quit, "help": &k.Help,
		"filter": &k.Filter, "command": &k.Command, "refresh": &k.Refresh,
		"sort": &k.Sort, "mark": &k.Mark,
		"diff": &k.Diff, "owners": &k.Owners, "history": &k.History,
		"unified": &k.Unified, "nextChange": &k.NextChange, "prevChange": &k.PrevChange,
		"hideNoise": &k.HideNoise,
		"sync":      &k.Sync, "freeze": &k.Freeze, "unfreeze": &k.Unfreeze,
		"revert": &k.Revert, "ignore": &k.Ignore,
	}
}
