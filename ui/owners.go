package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/keymap"
)

// blameLine is one live line with its precomputed blame gutter.
type blameLine struct {
	gutter  string
	manager int // index into the manager colours; -1 for defaulted/none
	flagged bool
	text    string
	path    string
}

// ownersView is the live object as YAML with a blame gutter: who wrote
// each field, how and when.
type ownersView struct {
	list
	c        *common
	app      string
	res      status.ResourceStatus
	detail   *status.ObjectDetail
	err      error
	lines    []blameLine
	flagged  []int
	managers []string
}

func newOwnersView(c *common, appName string, r status.ResourceStatus) *ownersView {
	return &ownersView{c: c, app: appName, res: r}
}

func (v *ownersView) kind() keymap.View      { return keymap.ViewOwners }
func (v *ownersView) title() string          { return "owners " + v.res.Ref.String() }
func (v *ownersView) selectedApps() []string { return []string{v.app} }
func (v *ownersView) load() tea.Cmd          { return loadDetail(v.c, v.app, v.res.Ref) }

// gutterW is the width of the blame gutter.
const gutterW = 30

// isKdrift reports whether an owner is kdrift itself.
func isKdrift(o status.Owner) bool {
	return o.Class == status.OwnerKdrift || o.Manager == "kdrift"
}

func (v *ownersView) setDetail(d status.ObjectDetail) {
	first := v.detail == nil
	v.detail = &d
	v.res = d.Resource
	gitSets := make(map[string]bool, len(d.Desired))
	for _, l := range d.Desired {
		if l.Path != "" {
			gitSets[l.Path] = true
		}
	}
	now := v.c.now()
	idx := map[string]int{}
	v.managers = nil
	v.lines = make([]blameLine, len(d.Live))
	v.flagged = nil
	for i, l := range d.Live {
		bl := blameLine{text: l.Text, path: l.Path, manager: -1}
		switch {
		case l.Defaulted():
			bl.gutter = "· defaulted"
		case len(l.Owners) == 0:
		default:
			o, _ := mainOwner(l.Owners)
			bl.gutter = ownerText(o, now)
			if len(l.Owners) > 1 {
				bl.gutter += fmt.Sprintf(" +%d", len(l.Owners)-1)
			}
			m, ok := idx[o.Manager]
			if !ok {
				m = len(v.managers)
				idx[o.Manager] = m
				v.managers = append(v.managers, o.Manager)
			}
			bl.manager = m
			if gitSets[l.Path] {
				for _, ow := range l.Owners {
					if !isKdrift(ow) {
						bl.flagged = true
					}
				}
			}
		}
		if bl.flagged {
			v.flagged = append(v.flagged, i)
		}
		bl.gutter = pad(bl.gutter, gutterW)
		v.lines[i] = bl
	}
	if !first {
		// A reload (the object changed live) keeps the reader's place.
		v.setRows(len(v.lines))
		return
	}
	v.cursor = 0
	if len(v.flagged) > 0 {
		v.cursor = v.flagged[0]
	}
	v.setRows(len(v.lines))
}

func (v *ownersView) update(msg tea.Msg) tea.Cmd {
	if m, ok := msg.(DetailLoadedMsg); ok && m.App == v.app && m.Ref == v.res.Ref {
		v.err = m.Err
		if m.Err == nil {
			v.setDetail(m.Detail)
		}
	}
	return nil
}

func (v *ownersView) handleKey(msg tea.KeyPressMsg, a keymap.Action) outcome {
	if v.move(a) {
		return handled(nil)
	}
	switch a {
	case keymap.ActNextChange, keymap.ActPrevChange:
		for k := range v.flagged {
			i := v.flagged[k]
			if a == keymap.ActPrevChange {
				i = v.flagged[len(v.flagged)-1-k]
			}
			if (a == keymap.ActNextChange && i > v.cursor) || (a == keymap.ActPrevChange && i < v.cursor) {
				v.cursor = i
				return handled(nil)
			}
		}
		return outcome{handled: true, status: "no more flagged fields"}
	case keymap.ActIgnore:
		if v.cursor >= len(v.lines) || v.lines[v.cursor].path == "" {
			return outcome{handled: true, status: "this line is not a field: move to a field line first", err: true}
		}
		return ignoreDialog(v.c, v.app, v.res.Ref, v.lines[v.cursor].path)
	case keymap.ActDiff:
		dv := newDiffView(v.c, v.app, v.res)
		if v.detail != nil {
			dv.setDetail(*v.detail)
			return outcome{handled: true, push: dv}
		}
		return outcome{handled: true, push: dv, work: dv.load()}
	case keymap.ActRefresh:
		return outcome{work: v.load()}
	}
	return outcome{}
}

func (v *ownersView) shortHelp() []key.Binding {
	return v.c.keys.Short(v.kind(), keymap.ActNextChange, keymap.ActPrevChange, keymap.ActIgnore,
		keymap.ActDiff, keymap.ActBack, keymap.ActHelp)
}

func (v *ownersView) render(w, h int) string {
	s := v.c.styles
	switch {
	case v.err != nil:
		return s.Bad.Render(cut(v.err.Error(), w)) + "\n" + s.Muted.Render("ctrl+r retries · esc goes back")
	case v.detail == nil:
		return s.Muted.Render("loading " + v.res.Ref.String() + "…")
	}
	var b strings.Builder
	head := fmt.Sprintf("%s  ownership  %d managers  %d fields Git sets but another manager owns (⚑)", v.res.Ref, len(v.managers), len(v.flagged))
	b.WriteString(s.Title.Render(cut(head, w)))
	b.WriteByte('\n')
	from, end := v.page(max(h-2, 1))
	textW := max(w-gutterW-4, 10)
	for i := from; i < end; i++ {
		l := &v.lines[i]
		g := s.Muted.Render(l.gutter)
		if l.manager >= 0 && len(s.Managers) > 0 {
			g = s.Managers[l.manager%len(s.Managers)].Render(l.gutter)
		}
		flag := "  "
		if l.flagged {
			flag = s.Flag.Render("⚑ ")
		}
		if i == v.cursor {
			b.WriteString(s.Selected.Render(pad(l.gutter+" │"+flagText(l.flagged)+l.text, w)))
		} else {
			b.WriteString(cutStyled(g+" │"+flag+cut(l.text, textW), w))
		}
		b.WriteByte('\n')
	}
	v.fill(&b, end)
	if v.cursor < len(v.lines) && v.lines[v.cursor].path != "" {
		l := v.lines[v.cursor]
		var names []string
		for _, o := range v.detail.Live[v.cursor].Owners {
			names = append(names, ownerLine(o, v.c.now()))
		}
		if len(names) == 0 {
			names = []string{"nobody: defaulted by the apiserver"}
		}
		t := l.path + ": " + strings.Join(names, ", ")
		if l.flagged {
			t += " · Git sets it too: `i` adds an ignore rule"
		}
		b.WriteString(s.Muted.Render(cut(t, w)))
	}
	return b.String()
}

func flagText(f bool) string {
	if f {
		return "⚑ "
	}
	return "  "
}
