package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/diff"
)

// handleKey routes a key: ctrl+c always quits; then an open dialog, the
// command line or the help screen take it; then the focused view; then
// the root's own actions.
func (m *Model) handleKey(msg tea.KeyPressMsg) tea.Cmd {
	if msg.String() == "ctrl+c" {
		return tea.Quit
	}
	if m.dialog != nil {
		out, keep := m.dialog.handleKey(msg)
		if !keep {
			m.dialog = nil
		}
		return m.apply(out)
	}
	if m.cmdOpen {
		return m.commandKey(msg)
	}
	if m.showHelp {
		m.showHelp = false
		return nil
	}
	top := m.top()
	a := keyAction(m.c.keys, top.kind(), msg)
	if m.state != stateReady {
		switch a {
		case ActQuit:
			return tea.Quit
		case ActRefresh:
			m.state = stateLoading
			return m.run(m.loadApps())
		}
		return nil
	}
	if m.c.readonly && a.Mutating() && !top.capturing() {
		m.setStatus(fmt.Sprintf("read-only: %s is disabled (--readonly or readonly: true in the config)", a), true)
		return nil
	}
	out := top.handleKey(msg, a)
	cmd := m.apply(out)
	if out.handled {
		return cmd
	}
	return tea.Batch(cmd, m.rootAction(a))
}

// paste sends pasted text to the text field that has the focus, if any.
func (m *Model) paste(msg tea.PasteMsg) tea.Cmd {
	var cmd tea.Cmd
	switch {
	case m.dialog != nil && len(m.dialog.fields) > 0:
		f := &m.dialog.fields[m.dialog.focus]
		f.input, cmd = f.input.Update(msg)
	case m.cmdOpen:
		m.cmdline, cmd = m.cmdline.Update(msg)
	default:
		if av, ok := m.top().(*appsView); ok && av.editing {
			av.input, cmd = av.input.Update(msg)
			av.filter = av.input.Value()
			av.recompute()
		}
	}
	return cmd
}

// apply carries out what a view or dialog asked for.
func (m *Model) apply(out outcome) tea.Cmd {
	if out.push != nil {
		m.stack = append(m.stack, out.push)
		m.setStatus("", false)
	}
	if out.dialog != nil {
		m.dialog = out.dialog
	}
	if out.status != "" {
		m.setStatus(out.status, out.err)
	}
	return tea.Batch(out.cmd, m.run(out.work))
}

// rootAction performs the actions no view took.
func (m *Model) rootAction(a Action) tea.Cmd {
	switch a {
	case ActQuit:
		return tea.Quit
	case ActBack:
		if len(m.stack) > 1 {
			m.stack = m.stack[:len(m.stack)-1]
			m.setStatus("", false)
			m.stack[len(m.stack)-1].update(appsChangedMsg{})
		}
	case ActHelp:
		m.showHelp = true
	case ActCommand:
		m.cmdOpen = true
		m.cmdline.SetValue("")
		m.cmdline.Focus()
	case ActRefresh:
		be := m.c.be
		m.setStatus("refreshing…", false)
		return m.run(func() tea.Msg {
			be.Refresh()
			return AppsLoadedMsg{Apps: be.Apps()}
		})
	case ActSync:
		return m.startSync()
	case ActFreeze:
		return m.startFreeze()
	case ActUnfreeze:
		return m.startUnfreeze()
	}
	return nil
}

// commandKey edits and runs the `:` command line.
func (m *Model) commandKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc":
		m.cmdOpen = false
		m.cmdline.Blur()
		return nil
	case "enter":
		m.cmdOpen = false
		m.cmdline.Blur()
		return m.runCommand(m.cmdline.Value())
	}
	var cmd tea.Cmd
	m.cmdline, cmd = m.cmdline.Update(msg)
	return cmd
}

// runCommand runs a `:` command: apps, owners [KIND…], ctx [NAME], q.
func (m *Model) runCommand(line string) tea.Cmd {
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil
	}
	apps := m.stack[0].(*appsView)
	switch f[0] {
	case "q", "quit", "q!":
		return tea.Quit
	case "apps", "app", "a":
		m.stack = m.stack[:1]
		apps.setContext("")
		m.setStatus("all apps", false)
	case "ctx", "context":
		m.stack = m.stack[:1]
		if len(f) < 2 {
			apps.setContext("")
			m.setStatus("apps of every context", false)
			return nil
		}
		var known []string
		for _, a := range m.c.apps {
			if c := a.Destination.Context; c != "" && !slices.Contains(known, c) {
				known = append(known, c)
			}
		}
		if !slices.Contains(known, f[1]) {
			slices.Sort(known)
			list := strings.Join(known, ", ")
			if list == "" {
				list = "none: every App deploys to the kubeconfig's current context"
			}
			m.setStatus(fmt.Sprintf("no App deploys to context %q; contexts named by Apps: %s", f[1], list), true)
			return nil
		}
		apps.setContext(f[1])
		m.setStatus("apps whose destination context is "+f[1], false)
	case "owners", "own":
		var filter []diff.KindFilter
		label := strings.Join(f[1:], " ")
		for _, k := range f[1:] {
			kf, err := diff.ParseKindFilter(k)
			if err != nil {
				m.setStatus(":owners "+err.Error(), true)
				return nil
			}
			filter = append(filter, kf)
		}
		ov := newOwnerMapView(m.c, filter, label)
		return m.apply(outcome{push: ov, work: ov.load()})
	default:
		m.setStatus(fmt.Sprintf("unknown command %q: try :apps, :owners [KIND[.GROUP]], :ctx NAME, :q", line), true)
	}
	return nil
}

// startSync plans a sync of the selected app; the plan comes back as
// SyncPlannedMsg and is shown before anything is applied.
func (m *Model) startSync() tea.Cmd {
	apps := m.top().selectedApps()
	if len(apps) != 1 {
		if len(apps) == 0 {
			m.setStatus("sync: no app selected", true)
		} else {
			m.setStatus("sync works on one app at a time: esc clears the marks", true)
		}
		return nil
	}
	name := apps[0]
	be, ctx := m.c.be, m.c.ctx
	m.setStatus("planning sync of "+name+"…", false)
	return m.run(func() tea.Msg {
		p, err := be.PlanSync(ctx, name)
		if p.App == "" {
			p.App = name
		}
		return SyncPlannedMsg{App: name, Plan: p, Err: err}
	})
}

// syncDialog shows the plan and asks; a frozen app is asked about twice.
func (m *Model) syncDialog(p SyncPlan) *dialog {
	body := []string{}
	for _, st := range p.Steps {
		l := fmt.Sprintf("%-8s %s", st.Action, st.Ref)
		if len(st.Fields) > 0 {
			l += "  " + strings.Join(st.Fields, ", ")
		}
		body = append(body, l)
	}
	if len(body) == 0 {
		body = []string{"nothing to change: Git and the cluster agree"}
	}
	name := p.App
	return newDialog("Sync "+name+"? ("+fmt.Sprint(len(p.Steps))+" objects)", body, "enter/y: sync · esc/n: cancel", func([]string) (outcome, string) {
		if a, ok := m.c.app(name); ok && a.Freeze.ActiveAt(m.c.now()) {
			f := a.Freeze
			until := "no end time"
			if f.Until != nil {
				until = "until " + f.Until.In(m.c.loc).Format("2006-01-02 15:04")
			}
			warn := []string{
				name + " is FROZEN by " + f.By + " (" + until + "):",
				"  " + f.Reason,
				"Syncing puts Git's values back now, over the fixes the freeze protects.",
			}
			d := newDialog("Sync FROZEN app "+name+" anyway?", warn, "enter/y: sync anyway · esc/n: cancel", func([]string) (outcome, string) {
				return m.syncNow(name), ""
			})
			return outcome{dialog: d}, ""
		}
		return m.syncNow(name), ""
	})
}

func (m *Model) syncNow(name string) outcome {
	be, ctx := m.c.be, m.c.ctx
	return outcome{status: "syncing " + name + "…", work: func() tea.Msg {
		return SyncFinishedMsg{App: name, Err: be.Sync(ctx, name)}
	}}
}

// startFreeze asks a reason (required) and a duration (optional) for the
// selected or marked apps.
func (m *Model) startFreeze() tea.Cmd {
	apps := m.top().selectedApps()
	if len(apps) == 0 {
		m.setStatus("freeze: no app selected", true)
		return nil
	}
	be, ctx := m.c.be, m.c.ctx
	body := []string{
		"Apps: " + strings.Join(apps, ", "),
		"Self-heal and prune stop; drift stays visible. The freeze is a Git commit.",
	}
	m.dialog = newDialog("Freeze "+plural(len(apps), "app")+"?", body, "tab: next field · enter: commit the freeze · esc: cancel", func(vals []string) (outcome, string) {
		reason := vals[0]
		var d time.Duration
		if vals[1] != "" {
			var err error
			d, err = time.ParseDuration(vals[1])
			if err != nil || d <= 0 {
				return outcome{}, fmt.Sprintf("duration %q: use a Go duration such as 30m, 4h or 1h30m, or leave it empty", vals[1])
			}
		}
		return outcome{status: "freezing " + strings.Join(apps, ", ") + "…", work: func() tea.Msg {
			res, err := be.Freeze(ctx, apps, reason, d)
			return FreezeCommittedMsg{Apps: apps, Result: res, Err: err}
		}}, ""
	}).withField("reason", "e.g. INC-1234 render workers 6->12", true).withField("for", "optional: 4h, 30m (empty: until unfrozen)", false)
	return nil
}

// startUnfreeze asks a reason and removes the freeze of the selected or
// marked apps that are frozen.
func (m *Model) startUnfreeze() tea.Cmd {
	var frozen []string
	for _, n := range m.top().selectedApps() {
		if a, ok := m.c.app(n); ok && a.Freeze != nil {
			frozen = append(frozen, n)
		}
	}
	if len(frozen) == 0 {
		m.setStatus("unfreeze: the selected app is not frozen", true)
		return nil
	}
	be, ctx := m.c.be, m.c.ctx
	body := []string{"Apps: " + strings.Join(frozen, ", ")}
	for _, n := range frozen {
		a, _ := m.c.app(n)
		body = append(body, "  "+n+": frozen by "+a.Freeze.By+": "+a.Freeze.Reason)
	}
	body = append(body, "Self-heal resumes as each app's syncPolicy says.")
	m.dialog = newDialog("Unfreeze "+plural(len(frozen), "app")+"?", body, "enter: commit the unfreeze · esc: cancel", func(vals []string) (outcome, string) {
		reason := vals[0]
		return outcome{status: "unfreezing " + strings.Join(frozen, ", ") + "…", work: func() tea.Msg {
			res, err := be.Unfreeze(ctx, frozen, reason)
			return UnfreezeCommittedMsg{Apps: frozen, Result: res, Err: err}
		}}, ""
	}).withField("reason", "why self-heal may resume", true)
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
