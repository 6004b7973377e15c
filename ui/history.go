package ui

import (
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/keymap"
)

// historyView lists the commits that touched an app, newest first.
type historyView struct {
	list
	c       *common
	app     string
	commits []status.Commit
	loaded  bool
	err     error
}

func newHistoryView(c *common, appName string) *historyView {
	return &historyView{c: c, app: appName}
}

func (v *historyView) kind() keymap.View      { return keymap.ViewHistory }
func (v *historyView) title() string          { return "history " + v.app }
func (v *historyView) selectedApps() []string { return nil }

func (v *historyView) load() tea.Cmd {
	be, ctx, name := v.c.be, v.c.ctx, v.app
	return func() tea.Msg {
		cs, err := be.History(ctx, name)
		return HistoryLoadedMsg{App: name, Commits: cs, Err: err}
	}
}

func (v *historyView) update(msg tea.Msg) tea.Cmd {
	switch m := msg.(type) {
	case HistoryLoadedMsg:
		if m.App != v.app {
			return nil
		}
		v.err, v.loaded = m.Err, true
		if m.Err == nil {
			cs := append([]status.Commit(nil), m.Commits...)
			sort.SliceStable(cs, func(i, j int) bool { return cs[i].Time.After(cs[j].Time) })
			v.commits = cs
			v.setRows(len(cs))
		}
	case RevertCommittedMsg:
		if m.Err == nil {
			return v.load()
		}
	}
	return nil
}

func (v *historyView) handleKey(msg tea.KeyPressMsg, a keymap.Action) outcome {
	if v.move(a) {
		return handled(nil)
	}
	switch a {
	case keymap.ActRevert:
		if v.cursor >= len(v.commits) {
			return outcome{handled: true, status: "no commit selected", err: true}
		}
		cm := v.commits[v.cursor]
		be, ctx := v.c.be, v.c.ctx
		return outcome{handled: true, status: "computing what reverting " + shortHash(cm.Hash) + " changes…", work: func() tea.Msg {
			p, err := be.RevertPreview(ctx, cm.Hash)
			return RevertPreviewMsg{Hash: cm.Hash, Subject: cm.Subject, Preview: p, Err: err}
		}}
	case keymap.ActEnter:
		if v.cursor >= len(v.commits) {
			return handled(nil)
		}
		c := v.commits[v.cursor]
		body := []string{"Author: " + c.Author + " <" + c.Email + ">", "Date:   " + c.Time.In(v.c.loc).Format("2006-01-02 15:04:05 MST"), ""}
		body = append(body, strings.Split(strings.TrimRight(c.Body, "\n"), "\n")...)
		d := newDialog(shortHash(c.Hash)+" "+c.Subject, body, "↑/↓ scroll · enter/esc: close", func([]string) (outcome, string) { return outcome{}, "" })
		return outcome{handled: true, dialog: d}
	case keymap.ActRefresh:
		return outcome{work: v.load()}
	}
	return outcome{}
}

func (v *historyView) shortHelp() []key.Binding {
	return v.c.keys.Short(v.kind(), keymap.ActUp, keymap.ActDown, keymap.ActEnter, keymap.ActRevert,
		keymap.ActRefresh, keymap.ActBack, keymap.ActHelp)
}

func (v *historyView) render(w, h int) string {
	s := v.c.styles
	switch {
	case v.err != nil:
		return s.Bad.Render(cut(v.err.Error(), w)) + "\n" + s.Muted.Render("ctrl+r retries · esc goes back")
	case !v.loaded:
		return s.Muted.Render("loading the history of " + v.app + "…")
	}
	var b strings.Builder
	b.WriteString(s.Title.Render(cut("history of "+v.app+" (newest first; ◆ marks kdrift actions)", w)))
	b.WriteByte('\n')
	if len(v.commits) == 0 {
		b.WriteString(s.Muted.Render("no commits touched this app"))
		return b.String()
	}
	from, end := v.page(max(h-4, 1))
	for i := from; i < end; i++ {
		c := v.commits[i]
		act := "          "
		if c.Action != "" {
			act = pad("◆ "+c.Action, 10)
		}
		line := shortHash(c.Hash) + "  " + c.Time.In(v.c.loc).Format("2006-01-02 15:04") + "  " + pad(c.Author, 16) + "  " + act + " " + c.Subject
		switch {
		case i == v.cursor:
			b.WriteString(s.Selected.Render(pad(line, w)))
		case c.Action != "":
			b.WriteString(s.Info.Render(cut(line, w)))
		default:
			b.WriteString(cut(line, w))
		}
		b.WriteByte('\n')
	}
	v.fill(&b, end)
	if v.cursor < len(v.commits) {
		c := v.commits[v.cursor]
		t := c.Author + " <" + c.Email + ">"
		if c.Reason != "" {
			t += " · reason: " + c.Reason
		}
		if len(c.Apps) > 0 {
			t += " · apps: " + strings.Join(c.Apps, ", ")
		}
		b.WriteString(s.Muted.Render(cut(t, w)))
		b.WriteByte('\n')
		body := strings.TrimSpace(c.Body)
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			body = body[:i]
		}
		b.WriteString(s.Muted.Render(cut(body, w)))
	}
	return b.String()
}
