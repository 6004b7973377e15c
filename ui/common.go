package ui

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"kdrift.dev/kdrift/internal/termsafe"
	"kdrift.dev/kdrift/keymap"
	"kdrift.dev/kdrift/ui/backend"
)

// common is what every view shares: styles, keys, the store, the clock
// and the logger. The root owns it; views read it while rendering.
type common struct {
	store
	be       backend.Backend
	ctx      context.Context
	styles   *Styles
	keys     keymap.KeyMap
	log      *slog.Logger
	now      func() time.Time
	loc      *time.Location
	readonly bool
	// forge is what the app view shows from the forge and CODEOWNERS.
	forge Forge
	// width and height are the terminal size, for views asked to act
	// before they were first drawn.
	width, height int

	// hideActivity hides the apps view's log of the store's activity.
	hideActivity bool
}

// outcome is what a view did with a key: whether it used it, a command to
// run, a view to open on top of it, a dialog to show, or a status text.
type outcome struct {
	handled bool
	cmd     tea.Cmd
	// work is a call to the Backend: the root counts it as running work
	// (spinner) until its result message arrives.
	work   tea.Cmd
	push   view
	dialog *dialog
	status string
	err    bool
}

func handled(cmd tea.Cmd) outcome { return outcome{handled: true, cmd: cmd} }

// view is one screen of the UI. The root hands it keys first (with the
// action they map to), then handles what it did not.
type view interface {
	// kind says which keys mean what in the view.
	kind() keymap.View
	// title names the view in the top bar, e.g. "apps", "diff Deployment/prod/x".
	title() string
	// handleKey reacts to a key press already mapped to an action.
	handleKey(msg tea.KeyPressMsg, a keymap.Action) outcome
	// update receives every non-key message (results, engine events);
	// the command it returns is Backend work. A tea.PasteMsg goes to the
	// focused view only, and its command is the text field's, not work.
	update(msg tea.Msg) tea.Cmd
	// render draws the view in w×h cells.
	render(w, h int) string
	// shortHelp is the footer help of the view: its most needed keys
	// (the `?` help is every key of the view's kind, from the key table).
	shortHelp() []key.Binding
	// selectedApps are the apps the app-level actions (sync, freeze,
	// unfreeze) apply to; empty when none is selected.
	selectedApps() []string
	// capturing is true while the view takes raw text (a filter prompt).
	capturing() bool
}

// pad fits s, plain text, into exactly w cells: cut with an ellipsis
// when longer, padded with spaces when shorter. Text from Git or the
// cluster in s is shown with its control characters escaped
// (termsafe.Line): a view's fields reach the terminal through pad and cut.
func pad(s string, w int) string { return padStyled(termsafe.Line(s), w) }

// cut shortens s, plain text, to at most w cells, adding no padding, with
// its control characters escaped as pad does.
func cut(s string, w int) string { return cutStyled(termsafe.Line(s), w) }

// padStyled is pad for s already styled (its fields went through pad or
// cut): its ANSI styles are kept.
func padStyled(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}

// cutStyled is cut for s already styled, as padStyled is pad.
func cutStyled(s string, w int) string {
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, "…")
	}
	return s
}

// shortHash is the first 7 characters of a commit hash.
func shortHash(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

// personName is the name part of "Name <email>".
func personName(s string) string {
	if i := strings.Index(s, " <"); i > 0 {
		return s[:i]
	}
	return s
}
