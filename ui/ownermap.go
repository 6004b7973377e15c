package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/keymap"
	"kdrift.dev/kdrift/ui/report"
)

// ownerMapRow is one row of the :owners view: a field of a kind.
type ownerMapRow struct {
	kind    string
	objects int
	row     diff.OwnerRow
}

// ownerMapView is the field ownership table of every app (`:owners`),
// contested rows first, optionally of one kind; enter lists the objects
// behind a row, writer by writer, and enter there opens an object's diff.
type ownerMapView struct {
	list
	c      *common
	filter []diff.KindFilter
	label  string
	m      diff.OwnerMap
	rows   []ownerMapRow
	loaded bool
	err    error
}

func newOwnerMapView(c *common, filter []diff.KindFilter, label string) *ownerMapView {
	return &ownerMapView{c: c, filter: filter, label: label}
}

func (v *ownerMapView) kind() keymap.View      { return keymap.ViewOwnerMap }
func (v *ownerMapView) selectedApps() []string { return nil }
func (v *ownerMapView) title() string {
	if v.label != "" {
		return "owners " + v.label
	}
	return "owners"
}

func (v *ownerMapView) load() tea.Cmd {
	be, ctx, opts := v.c.be, v.c.ctx, diff.OwnerMapOptions{Kinds: v.filter}
	return func() tea.Msg {
		m, err := be.Owners(ctx, opts)
		return OwnerMapLoadedMsg{Map: m, Err: err}
	}
}

func (v *ownerMapView) update(msg tea.Msg) tea.Cmd {
	if m, ok := msg.(OwnerMapLoadedMsg); ok {
		v.err, v.loaded = m.Err, true
		if m.Err == nil {
			v.setMap(m.Map)
		}
	}
	return nil
}

// setMap lays the map out as rows, contested ones first across kinds.
func (v *ownerMapView) setMap(m diff.OwnerMap) {
	v.m = m
	var contested, rest []ownerMapRow
	for _, k := range m.Kinds {
		kn := k.Kind
		if k.Group != "" {
			kn += "." + k.Group
		}
		for _, r := range k.Rows {
			row := ownerMapRow{kind: kn, objects: k.Objects, row: r}
			if r.Contested {
				contested = append(contested, row)
			} else {
				rest = append(rest, row)
			}
		}
	}
	v.rows = append(contested, rest...)
	v.setRows(len(v.rows))
}

func (v *ownerMapView) handleKey(msg tea.KeyPressMsg, a keymap.Action) outcome {
	if v.move(a) {
		return handled(nil)
	}
	switch a {
	case keymap.ActEnter:
		if v.cursor >= len(v.rows) {
			return handled(nil)
		}
		return outcome{handled: true, push: newOwnerObjectsView(v.c, v.rows[v.cursor], v.c.now())}
	case keymap.ActIgnore, keymap.ActFreeze:
		if v.cursor >= len(v.rows) {
			return handled(nil)
		}
		return ownerRowAction(v.c, v.rows[v.cursor], v.rows[v.cursor].row.Pointers, a)
	case keymap.ActRefresh:
		return outcome{work: v.load()}
	}
	return outcome{}
}

// ownerRowAction is `i` (one ignoreDifferences rule covering the field
// for the whole kind in the app) or `f` (a field freeze of the field on
// every object) on the objects ptrs of a row of the :owners view.
func ownerRowAction(c *common, r ownerMapRow, ptrs []diff.FieldPointer, a keymap.Action) outcome {
	if len(ptrs) == 0 {
		return outcome{handled: true, status: r.row.Field + " has no JSON pointer of its own (it sits inside an atomic value): act on its parent in the diff view", err: true}
	}
	var apps, pointers []string
	var refs []status.ObjectRef
	for _, p := range ptrs {
		if !slices.Contains(apps, p.Ref.App) {
			apps = append(apps, p.Ref.App)
		}
		if !slices.Contains(pointers, p.Pointer) {
			pointers = append(pointers, p.Pointer)
		}
		refs = append(refs, p.Ref.Ref)
	}
	if len(apps) > 1 {
		return outcome{handled: true, status: fmt.Sprintf("the objects of this row belong to %d apps (%s): enter lists them; %s there acts on the selected object's app", len(apps), strings.Join(apps, ", "), c.keys.In(keymap.ViewOwnerMap, a).Help().Key), err: true}
	}
	slices.Sort(pointers)
	ref := ptrs[0].Ref.Ref
	if a == keymap.ActIgnore {
		rule := app.IgnoreRule{Group: ref.Group, Kind: ref.Kind, JSONPointers: pointers}
		body := []string{
			fmt.Sprintf("App %s will stop applying %s on every %s (one rule for the whole kind).", apps[0], strings.Join(pointers, ", "), kindName(ref)),
			"kdrift hands the field over to its live owner; the rule is a Git commit.",
		}
		d := newDialog("Ignore "+r.row.Field+" for every "+kindName(ref)+"?", body, "enter: commit the ignore rule · esc: cancel", func(vals []string) (outcome, string) {
			return outcome{work: doIgnore(c, apps[0], rule, vals[0]), status: "committing ignore rule for " + r.row.Field + "…"}, ""
		}).withField("reason", "why Git should not own this field", true)
		return outcome{handled: true, dialog: d}
	}
	if len(pointers) > 1 {
		return outcome{handled: true, status: fmt.Sprintf("%s sits at different places across the objects (%s): enter lists them; f there freezes it on one object", r.row.Field, strings.Join(pointers, ", ")), err: true}
	}
	return resourceFreezeDialog(c, apps[0], refs, pointers)
}

// kindName is Kind or Kind.group.
func kindName(r status.ObjectRef) string {
	if r.Group == "" {
		return r.Kind
	}
	return r.Kind + "." + r.Group
}

func (v *ownerMapView) shortHelp() []key.Binding {
	return v.c.keys.Short(v.kind(), keymap.ActUp, keymap.ActDown, keymap.ActEnter, keymap.ActIgnore, keymap.ActFreeze, keymap.ActRefresh, keymap.ActBack, keymap.ActHelp)
}

func (v *ownerMapView) render(w, h int) string {
	s := v.c.styles
	switch {
	case v.err != nil:
		return s.Bad.Render(cut(v.err.Error(), w)) + "\n" + s.Muted.Render("ctrl+r retries · esc goes back")
	case !v.loaded:
		return s.Muted.Render("reading field ownership…")
	}
	var b strings.Builder
	folded := 0
	for _, k := range v.m.Kinds {
		folded += k.GitOnly
	}
	b.WriteString(s.Title.Render(cut(fmt.Sprintf("field ownership of %d objects (contested first; %d fields only Git writes not shown)", v.m.Objects, folded), w)))
	b.WriteByte('\n')
	if len(v.rows) == 0 {
		b.WriteString(s.Muted.Render("Git alone writes every field"))
		return b.String()
	}
	kindW, fieldW := 18, max(w/3, 20)
	b.WriteString(s.Header.Render(cut(pad("KIND", kindW)+" "+pad("FIELD", fieldW)+" WRITERS", w)))
	b.WriteByte('\n')
	from, end := v.page(max(h-4, 1))
	now := v.c.now()
	for i := from; i < end; i++ {
		r := v.rows[i]
		ws := make([]string, len(r.row.Writers))
		for j, wr := range r.row.Writers {
			ws[j] = fmt.Sprintf("%s %d/%d", wr.Label(), wr.Count, r.objects)
			if wr.Manager != "" && wr.Newest != nil {
				ws[j] += " " + report.Duration(now.Sub(*wr.Newest))
			}
		}
		mark := "  "
		if r.row.Contested {
			mark = "! "
		}
		line := mark + pad(r.kind, kindW-2) + " " + pad(r.row.Field, fieldW) + " " + strings.Join(ws, ", ")
		switch {
		case i == v.cursor:
			b.WriteString(s.Selected.Render(pad(line, w)))
		case r.row.Contested:
			b.WriteString(s.Warn.Render(cut(line, w)))
		default:
			b.WriteString(cut(line, w))
		}
		b.WriteByte('\n')
	}
	v.fill(&b, end)
	if v.cursor < len(v.rows) {
		r := v.rows[v.cursor].row
		t := "not contested"
		if r.Contested {
			t = "contested: " + strings.Join(r.Why, "; ")
		}
		if len(r.Rules) > 0 {
			t += " · ignore rules: " + strings.Join(r.Rules, "; ")
		}
		b.WriteString(s.Muted.Render(cut(t, w)))
	}
	return b.String()
}

// ownerObject is one object behind a row of the :owners view.
type ownerObject struct {
	writer string
	ref    diff.OwnedRef
}

// ownerObjectsView lists the objects behind one row of the :owners view,
// writer by writer; enter opens an object's diff.
type ownerObjectsView struct {
	list
	c     *common
	row   ownerMapRow
	name  string
	about []string
	objs  []ownerObject
}

func newOwnerObjectsView(c *common, r ownerMapRow, now time.Time) *ownerObjectsView {
	v := &ownerObjectsView{c: c, row: r, name: r.kind + " " + r.row.Field}
	for _, w := range r.row.Writers {
		label := fmt.Sprintf("%s (%s)", w.Label(), report.ClassLabel(w.Class))
		if w.Manager != "" {
			label += " " + report.Ago(w.Newest, now)
		}
		for _, ref := range w.Refs {
			v.objs = append(v.objs, ownerObject{writer: label, ref: ref})
		}
	}
	v.setRows(len(v.objs))
	if r.row.Contested {
		v.about = append(v.about, "contested: "+strings.Join(r.row.Why, "; "))
	}
	if len(r.row.Rules) > 0 {
		v.about = append(v.about, "ignore rules: "+strings.Join(r.row.Rules, "; "))
	}
	return v
}

func (v *ownerObjectsView) kind() keymap.View      { return keymap.ViewOwnerMap }
func (v *ownerObjectsView) title() string          { return v.name }
func (v *ownerObjectsView) selectedApps() []string { return nil }
func (v *ownerObjectsView) update(tea.Msg) tea.Cmd { return nil }

func (v *ownerObjectsView) handleKey(msg tea.KeyPressMsg, a keymap.Action) outcome {
	if v.move(a) {
		return handled(nil)
	}
	if (a == keymap.ActIgnore || a == keymap.ActFreeze) && v.cursor < len(v.objs) {
		// On one object: its app, its place of the field.
		o := v.objs[v.cursor].ref
		var ptrs []diff.FieldPointer
		for _, p := range v.row.row.Pointers {
			if p.Ref == o {
				ptrs = append(ptrs, p)
			}
		}
		return ownerRowAction(v.c, v.row, ptrs, a)
	}
	if a != keymap.ActEnter || v.cursor >= len(v.objs) {
		return outcome{}
	}
	o := v.objs[v.cursor].ref
	if as, ok := v.c.app(o.App); ok {
		for _, r := range as.Resources {
			if r.Ref.Group == o.Ref.Group && r.Ref.Kind == o.Ref.Kind && r.Ref.Namespace == o.Ref.Namespace && r.Ref.Name == o.Ref.Name {
				dv := newDiffView(v.c, o.App, r)
				return outcome{handled: true, push: dv, work: dv.load()}
			}
		}
	}
	return outcome{handled: true, status: fmt.Sprintf("%s is not among the resources of app %s any more: ctrl+r on the table re-reads it", o.Ref, o.App), err: true}
}

func (v *ownerObjectsView) shortHelp() []key.Binding {
	return v.c.keys.Short(v.kind(), keymap.ActUp, keymap.ActDown, keymap.ActEnter, keymap.ActIgnore, keymap.ActFreeze, keymap.ActBack, keymap.ActHelp)
}

func (v *ownerObjectsView) render(w, h int) string {
	s := v.c.styles
	var b strings.Builder
	b.WriteString(s.Title.Render(cut(fmt.Sprintf("%s: %d objects", v.name, len(v.objs)), w)))
	b.WriteByte('\n')
	from, end := v.page(max(h-2-len(v.about), 1))
	for i := from; i < end; i++ {
		o := v.objs[i]
		line := pad(o.writer, 40) + " " + pad(o.ref.App, 24) + " " + o.ref.Ref.String()
		if i == v.cursor {
			b.WriteString(s.Selected.Render(pad(line, w)))
		} else {
			b.WriteString(cut(line, w))
		}
		b.WriteByte('\n')
	}
	v.fill(&b, end)
	for _, a := range v.about {
		b.WriteString(s.Muted.Render(cut(a, w)))
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}
