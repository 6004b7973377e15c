package ui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/keymap"
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
	a := m.c.keys.Lookup(top.kind(), msg)
	if m.state != stateReady {
		switch a {
		case keymap.ActQuit:
			return tea.Quit
		case keymap.ActRefresh:
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
	rc, _ := m.rootAction(a)
	return tea.Batch(cmd, rc)
}

// paste sends pasted text to the text field that has the focus: the
// dialog's, the command line's, or else the focused view's (through its
// update).
func (m *Model) paste(msg tea.PasteMsg) tea.Cmd {
	var cmd tea.Cmd
	switch {
	case m.dialog != nil && len(m.dialog.fields) > 0:
		f := &m.dialog.fields[m.dialog.focus]
		f.input, cmd = f.input.Update(msg)
	case m.cmdOpen:
		m.cmdline, cmd = m.cmdline.Update(msg)
	default:
		cmd = m.top().update(msg)
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

// rootAction performs the actions no view took; ok is false for an
// action the root does not perform either.
func (m *Model) rootAction(a keymap.Action) (cmd tea.Cmd, ok bool) {
	switch a {
	case keymap.ActQuit:
		return tea.Quit, true
	case keymap.ActBack:
		if len(m.stack) > 1 {
			m.stack = m.stack[:len(m.stack)-1]
			m.setStatus("", false)
			m.stack[len(m.stack)-1].update(appsChangedMsg{})
		}
	case keymap.ActHelp:
		m.showHelp = true
	case keymap.ActCommand:
		m.cmdOpen = true
		m.cmdline.SetValue("")
		m.cmdline.Focus()
	case keymap.ActRefresh:
		be := m.c.be
		m.setStatus("refreshing…", false)
		return m.run(func() tea.Msg {
			be.Refresh()
			return AppsLoadedMsg{Apps: be.Apps()}
		}), true
	case keymap.ActSync:
		return m.startSync(), true
	case keymap.ActFreeze:
		return m.startFreeze(), true
	case keymap.ActUnfreeze:
		return m.startUnfreeze(), true
	default:
		return nil, false
	}
	return nil, true
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
