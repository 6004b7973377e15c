package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/termsafe"
	"kdrift.dev/kdrift/keymap"
	"kdrift.dev/kdrift/ui/backend"
	"kdrift.dev/kdrift/ui/report"
)

// rootState is where the whole UI is: waiting for the first snapshot,
// stopped by an engine-wide error, or showing views.
type rootState int

// rootState values.
const (
	stateLoading rootState = iota
	stateError
	stateReady
)

// Config is what a Model is built from; Run fills it from Options and the
// config file, tests fill it by hand.
type Config struct {
	Keys     keymap.KeyMap
	Readonly bool
	// Context is the initial `:ctx` filter of the apps view ("" = all).
	Context string
	// NoColor drops colours from every style (NO_COLOR).
	NoColor bool
	Theme   Theme
	Log     *slog.Logger
	// Now and Location make time deterministic in tests; defaults
	// time.Now and time.Local.
	Now      func() time.Time
	Location *time.Location
	// Forge is what the app view shows from the forge and CODEOWNERS.
	Forge Forge
}

// Model is the root of the UI: it owns the view stack, the dialog, the
// status line, the banners and the event subscription, and hands keys to
// the focused view first.
type Model struct {
	c        *common
	cfg      Config
	state    rootState
	fatal    string
	stack    []view
	dialog   *dialog
	cmdline  textinput.Model
	cmdOpen  bool
	status   string
	statusEr bool
	busy     int
	spinner  spinner.Model
	showHelp bool
	help     help.Model
	width    int
	height   int
	events   <-chan status.Event
}

// NewModel builds the root model over a Backend. ctx bounds every Backend
// call the UI makes.
func NewModel(ctx context.Context, be backend.Backend, cfg Config) *Model {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Theme.Managers == nil {
		cfg.Theme = DefaultTheme()
	}
	c := &common{
		be: be, ctx: ctx, keys: cfg.Keys, log: cfg.Log, now: cfg.Now, loc: cfg.Location,
		store: newStore(), readonly: cfg.Readonly, forge: cfg.Forge,
		styles: NewStyles(cfg.Theme, true, cfg.NoColor),
	}
	in := textinput.New()
	in.Prompt = ":"
	st := textinput.DefaultStyles(true)
	st.Cursor.Blink = false
	in.SetStyles(st)
	m := &Model{
		c: c, cfg: cfg, cmdline: in,
		spinner: spinner.New(spinner.WithSpinner(spinner.Dot)),
		help:    help.New(), events: be.Events(),
	}
	if cfg.NoColor {
		m.help.Styles = help.Styles{}
	}
	m.stack = []view{newAppsView(c, cfg.Context)}
	return m
}

// Init asks the terminal's background colour, loads the apps and starts
// listening to the engine.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, m.run(m.loadApps()), m.waitEvent())
}

// waitEvent waits for one engine event; the root re-arms it after each.
func (m *Model) waitEvent() tea.Cmd {
	ch, ctx := m.events, m.c.ctx
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case ev, ok := <-ch:
			if !ok {
				return EventsClosedMsg{}
			}
			return eventMsg(ev)
		case <-ctx.Done():
			return nil
		}
	}
}

func (m *Model) loadApps() tea.Cmd {
	be := m.c.be
	return func() tea.Msg { return AppsLoadedMsg{Apps: be.Apps()} }
}

// workDoneMsg carries the message of a piece of work started by run:
// Update marks the work done, then handles the message itself. Every
// piece of work ends this way, whatever its result type, so no result can
// leave the spinner running.
type workDoneMsg struct{ msg tea.Msg }

// run counts cmd as running Backend work and starts the spinner; the work
// is done when its message comes back (see workDoneMsg).
func (m *Model) run(cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	m.busy++
	work := func() tea.Msg { return workDoneMsg{msg: cmd()} }
	if m.busy == 1 {
		return tea.Batch(work, m.spinner.Tick)
	}
	return work
}

func (m *Model) done() {
	if m.busy > 0 {
		m.busy--
	}
}

func (m *Model) top() view { return m.stack[len(m.stack)-1] }

func (m *Model) setStatus(s string, isErr bool) {
	m.status, m.statusEr = s, isErr
	if isErr {
		m.c.log.Warn(s)
	} else if s != "" {
		m.c.log.Info(s)
	}
}

// State reports whether the UI is loading, stopped by an error, or ready:
// "loading", "error" or "ready".
func (m *Model) State() string {
	return [...]string{"loading", "error", "ready"}[m.state]
}

// Status is the status line's text.
func (m *Model) Status() string { return m.status }

// Breadcrumb is the titles of the open views, root first, joined by " › ".
func (m *Model) Breadcrumb() string {
	t := make([]string, len(m.stack))
	for i, v := range m.stack {
		t[i] = v.title()
	}
	return strings.Join(t, " › ")
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.c.width, m.c.height = msg.Width, msg.Height
		for _, v := range m.stack {
			v.update(msg)
		}
		return m, nil
	case tea.BackgroundColorMsg:
		m.c.styles = NewStyles(m.cfg.Theme, msg.IsDark(), m.cfg.NoColor)
		if !m.cfg.NoColor {
			m.help.Styles = help.DefaultStyles(msg.IsDark())
		}
		return m, nil
	case tea.KeyPressMsg:
		return m, m.handleKey(msg)
	case tea.PasteMsg:
		return m, m.paste(msg)
	case workDoneMsg:
		m.done()
		if msg.msg == nil {
			return m, nil
		}
		// Handed back as a message of its own, so that a batch or a
		// sequence the work returned reaches Bubble Tea's runtime.
		return m, func() tea.Msg { return msg.msg }
	case spinner.TickMsg:
		if m.busy == 0 {
			return m, nil
		}
		var cmd tea.Cmd
		m.spinner, cmd = m.spinner.Update(msg)
		return m, cmd
	}
	var cmds []tea.Cmd
	if isEvent(msg) {
		cmds = append(cmds, m.onEvent(msg))
		if _, closed := msg.(EventsClosedMsg); !closed {
			cmds = append(cmds, m.waitEvent())
		}
	} else {
		cmds = append(cmds, m.onResult(msg))
	}
	for _, v := range m.stack {
		cmds = append(cmds, m.run(v.update(msg)))
	}
	return m, tea.Batch(cmds...)
}

func isEvent(msg tea.Msg) bool {
	switch msg.(type) {
	case AppStatusChangedMsg, DriftDetectedMsg, HealedMsg, PrunedMsg, FightMsg, OverrideMsg,
		FreezeExpiringMsg, ErrorEventMsg, ReachabilityMsg, UnknownEventMsg, EventsClosedMsg,
		BackendSwitchedMsg, RoleChangedMsg:
		return true
	}
	return false
}

// changed tells the views that the store's apps changed.
func (m *Model) changed() {
	for _, v := range m.stack {
		v.update(appsChangedMsg{})
	}
}

// objectView is a view of one live object (diff, ownership).
type objectView interface {
	object() (app string, ref status.ObjectRef)
	load() tea.Cmd
}

func (v *diffView) object() (string, status.ObjectRef)   { return v.app, v.res.Ref }
func (v *ownersView) object() (string, status.ObjectRef) { return v.app, v.res.Ref }

// reloadObject reloads the open diff or ownership view when the object it
// shows (ref nil: any of app's objects) may have changed, so what is on
// screen follows the cluster without ctrl-r.
func (m *Model) reloadObject(app string, ref *status.ObjectRef) tea.Cmd {
	ov, ok := m.top().(objectView)
	if !ok {
		return nil
	}
	a, r := ov.object()
	if a != app || (ref != nil && *ref != r) {
		return nil
	}
	return m.run(ov.load())
}

// onEvent folds an engine event into the store (apps, activity log,
// banners), tells the views, and says it on the status line.
func (m *Model) onEvent(msg tea.Msg) tea.Cmd {
	if e, ok := activityOf(msg); ok {
		m.c.record(e.at, e.app, e.text, e.bad)
	}
	switch e := msg.(type) {
	case AppStatusChangedMsg:
		m.c.statusChanged(e.Event)
		if m.state != stateReady {
			m.state = stateReady
		}
		m.changed()
	case DriftDetectedMsg:
		if !m.c.driftDetected(e.Event) {
			return nil
		}
		m.changed()
		m.setStatus("drift: "+e.Event.Resource.Ref.String()+" in "+e.Event.App, false)
		return m.reloadObject(e.Event.App, &e.Event.Resource.Ref)
	case HealedMsg:
		m.setStatus("healed "+e.Event.Ref.String()+" in "+e.Event.App+": "+strings.Join(e.Event.Fields, ", "), false)
		return m.reloadObject(e.Event.App, &e.Event.Ref)
	case PrunedMsg:
		m.setStatus("pruned "+e.Event.Ref.String()+" from "+e.Event.App, false)
		return m.reloadObject(e.Event.App, &e.Event.Ref)
	case FightMsg:
		m.setStatus("fight: "+e.Event.Manager+" keeps rewriting "+e.Event.Field+" on "+e.Event.Ref.String()+
			"; kdrift stopped healing it (add an ignore rule with i, or change that writer)", true)
	case OverrideMsg:
		ev := e.Event
		m.setStatus(fmt.Sprintf("%s changed %s on %s in %s %d times in %s; kdrift heals it every time: freeze if this is intended",
			ev.Manager, ev.Field, ev.Ref, ev.App, ev.Rewrites, report.Duration(ev.Time.Sub(ev.Since))), true)
	case FreezeExpiringMsg:
		m.setStatus(expiringText(e.Event, m.c.now(), m.c.loc), true)
	case ErrorEventMsg:
		ev := e.Event
		who := ev.App
		if ev.Ref != nil {
			who = ev.Ref.String()
		}
		if who == "" {
			who = "engine"
			if m.state != stateReady {
				m.state, m.fatal = stateError, ev.Message
			}
		}
		m.setStatus(who+": "+ev.Message, true)
	case ReachabilityMsg:
		m.c.reachability(e.Event, m.c.loc)
		if e.Event.Up {
			m.setStatus(string(e.Event.Target)+" reachable again", false)
		}
	case UnknownEventMsg:
		m.c.log.Info("ignored engine event of unknown type", "type", e.Event.Type())
	case EventsClosedMsg:
		m.setStatus("the engine stopped: no more updates (q quits)", true)
	case BackendSwitchedMsg:
		// Only the data changes: views, dialogs and typed text stay.
		if e.Text != "" {
			m.setStatus(e.Text, false)
		}
		if e.Reload {
			return m.run(m.loadApps())
		}
	}
	return nil
}

// onResult turns a Backend result into the status line and follow-ups.
func (m *Model) onResult(msg tea.Msg) tea.Cmd {
	switch r := msg.(type) {
	case AppsLoadedMsg:
		m.c.loaded(r.Apps)
		if len(r.Apps) > 0 || m.state == stateLoading {
			m.state = stateReady
		}
		m.changed()
	case DetailLoadedMsg:
		if r.Err != nil {
			m.setStatus(named(r.Ref, r.Err), true)
		}
	case HistoryLoadedMsg:
		if r.Err != nil {
			m.setStatus("history of "+r.App+": "+r.Err.Error(), true)
		}
	case SyncPlannedMsg:
		if r.Err != nil {
			m.setStatus("sync "+r.App+": planning failed: "+r.Err.Error(), true)
			return nil
		}
		m.dialog = m.syncDialog(r.Plan)
	case SyncFinishedMsg:
		if r.Err != nil {
			m.setStatus("sync "+r.App+" failed: "+r.Err.Error(), true)
		} else {
			m.setStatus("synced "+r.App, false)
		}
		return m.reloadObject(r.App, nil)
	case FreezeCommittedMsg:
		m.commitStatus("freeze "+strings.Join(r.Apps, ", "), r.Result, r.Err)
		m.c.freezeActivity("freeze "+strings.Join(r.Apps, ", "), r.Result, r.Err)
	case UnfreezeCommittedMsg:
		m.commitStatus("unfreeze "+strings.Join(r.Apps, ", "), r.Result, r.Err)
		m.c.freezeActivity("unfreeze "+strings.Join(r.Apps, ", "), r.Result, r.Err)
	case IgnoreCommittedMsg:
		m.commitStatus("ignore "+r.Path+" in "+r.App, r.Result, r.Err)
	case ResourceFreezeCommittedMsg:
		m.commitStatus(r.What+" in "+r.App, r.Result, r.Err)
		m.c.freezeActivity(r.What+" in "+r.App, r.Result, r.Err)
	case RevertPreviewMsg:
		if r.Err != nil {
			m.setStatus("revert "+shortHash(r.Hash)+": "+r.Err.Error(), true)
			return nil
		}
		m.dialog = revertDialog(m.c, r)
		m.setStatus("", false)
	case RevertCommittedMsg:
		m.commitStatus("revert "+shortHash(r.Hash), r.Result, r.Err)
	}
	return nil
}

// objectError is an error whose message starts with the object it is
// about (engine.ObjectError).
type objectError interface{ Object() status.ObjectRef }

// named is err's text starting with the object ref, unless err is an
// object error about ref, which names it already.
func named(ref status.ObjectRef, err error) string {
	if oe, ok := err.(objectError); ok && oe.Object() == ref {
		return err.Error()
	}
	return ref.String() + ": " + err.Error()
}

func (m *Model) commitStatus(what string, res backend.CommitResult, err error) {
	if err != nil {
		m.setStatus(what+" failed: "+err.Error(), true)
		return
	}
	if res.NotTaken != "" {
		body := []string{what + " is on the incident channel " + res.Channel + " as " + shortHash(res.Hash) + ", but " + res.NotTaken + ".", "", "It is in force nowhere."}
		m.dialog = newDialog("Not taken: "+what+" is in force nowhere", body, "enter or esc: close", func([]string) (outcome, string) { return outcome{}, "" })
		m.setStatus(what+": on the channel, but its readers do not take it; in force nowhere", true)
		return
	}
	if len(res.Refused) > 0 {
		body := append([]string{"The remote refused the push; " + what + " is committed locally only and is in force nowhere.", ""}, res.Refused...)
		body = append(body, "", "A freeze goes to the incident channel when the channel is open to you; other changes need a pull request.")
		m.dialog = newDialog("Push refused: "+what+" is in force nowhere", body, "enter or esc: close", func([]string) (outcome, string) { return outcome{}, "" })
		m.setStatus(what+": push refused by the remote; in force nowhere", true)
		return
	}
	if len(res.OwnerProblems) > 0 {
		body := append([]string{what + " is on the incident channel " + res.Channel + ", but the GitOps engine that heals these apps reads the branch only and was not told:", ""}, res.OwnerProblems...)
		m.dialog = newDialog("Still healing: "+what+" did not reach the engine", body, "enter or esc: close", func([]string) (outcome, string) { return outcome{}, "" })
		m.setStatus(what+": on the channel, but the owning engine still heals", true)
		return
	}
	t := what + ": committed " + shortHash(res.Hash)
	if res.Channel != "" {
		t += " on the incident channel " + res.Channel + " (the branch refused it)"
	}
	if res.Pushed {
		t += " and pushed"
	} else {
		t += " (not pushed yet"
		if res.Warning != "" {
			t += ": " + res.Warning
		}
		t += ")"
	}
	if res.Note != "" {
		t += "; leader " + res.Note
	}
	for _, o := range res.Owners {
		t += "; " + o
	}
	m.setStatus(t, !res.Pushed)
}

// View renders the whole screen.
func (m *Model) View() tea.View {
	// The frame's fields went through pad and cut; termsafe.Styled is the
	// net under them: no sequence but a style reaches the terminal, and
	// the lines it had to widen are cut to the width again.
	w, h := m.size()
	v := tea.NewView(fitLines(termsafe.Styled(m.render()), w, h))
	v.AltScreen = true
	return v
}

func (m *Model) size() (int, int) {
	w, h := m.width, m.height
	if w <= 0 {
		w = 80
	}
	if h <= 0 {
		h = 24
	}
	return w, h
}

func (m *Model) render() string {
	s := m.c.styles
	w, h := m.size()
	var b strings.Builder
	top := "kdrift │ " + m.Breadcrumb()
	if m.c.readonly {
		top += " │ READ-ONLY"
	}
	if r, ok := m.c.be.(backend.Roler); ok {
		if role := r.Role(); role != "" {
			top += " │ " + role
		}
	}
	b.WriteString(s.Title.Render(cut(top, w)))
	b.WriteByte('\n')
	for _, k := range slices.Sorted(maps.Keys(m.c.banners)) {
		b.WriteString(s.Banner.Render(pad("⚠ "+m.c.banners[k].text, w)))
		b.WriteByte('\n')
	}
	bodyH := max(h-3-len(m.c.banners), 3)
	var body string
	switch {
	case m.showHelp:
		m.help.SetWidth(w)
		body = s.Title.Render("keys (any key closes)") + "\n\n" + m.help.FullHelpView(m.c.keys.FullHelp(m.top().kind())) +
			"\n\n" + s.Title.Render("commands (: then the command)") + "\n\n" + m.help.FullHelpView([][]key.Binding{commandHelp()})
	case m.state == stateLoading:
		body = s.Muted.Render(m.spinner.View() + " loading apps…")
	case m.state == stateError:
		body = s.Bad.Render(cut("kdrift cannot start: "+m.fatal, w)) + "\n" + s.Muted.Render("ctrl+r retries · q quits")
	default:
		body = m.top().render(w, bodyH)
	}
	body = fitHeight(body, bodyH)
	if m.dialog != nil {
		// The dialog floats over the view, which stays visible around it.
		dlg := fitLines(m.dialog.render(s, min(w, 100), bodyH), w, bodyH)
		x := max((w-lipgloss.Width(dlg))/2, 0)
		y := max((bodyH-lipgloss.Height(dlg))/2, 0)
		body = lipgloss.NewCompositor(lipgloss.NewLayer(body), lipgloss.NewLayer(dlg).X(x).Y(y).Z(1)).Render()
	}
	b.WriteString(fitLines(body, w, bodyH))
	b.WriteByte('\n')
	st := ""
	if m.busy > 0 {
		st = m.spinner.View() + " "
	}
	switch {
	case m.cmdOpen:
		m.cmdline.SetStyles(s.Input)
		b.WriteString(m.cmdline.View())
	case m.statusEr:
		b.WriteString(cutStyled(st+s.StatusErr.Render("! "+cut(m.status, w)), w))
	default:
		b.WriteString(cutStyled(st+s.StatusInfo.Render(cut(m.status, w)), w))
	}
	b.WriteByte('\n')
	m.help.SetWidth(w)
	b.WriteString(cutStyled(m.help.ShortHelpView(m.top().shortHelp()), w))
	return b.String()
}

// fitLines cuts s to at most h lines of at most w cells.
func fitLines(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		lines[i] = cutStyled(l, w)
	}
	return strings.Join(lines, "\n")
}

// fitHeight pads or cuts s to exactly h lines.
func fitHeight(s string, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}
