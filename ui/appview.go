package ui

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/keymap"
	"kdrift.dev/kdrift/ui/report"
)

// appLine is one line of the app view: a kind header or a resource.
type appLine struct {
	header string
	res    *status.ResourceStatus
	// child is set for an object another controller made from the
	// resource above it (status.ResourceStatus.Parent).
	child bool
}

// appView lists one app's resources grouped by kind.
// Its cursor is always on a resource line when any exist.
type appView struct {
	list
	c     *common
	name  string
	lines []appLine
	seen  int
}

func newAppView(c *common, name string) *appView {
	v := &appView{c: c, name: name, seen: -1}
	v.selectable = func(i int) bool { return v.lines[i].res != nil }
	v.recompute()
	return v
}

func (v *appView) kind() keymap.View      { return keymap.ViewApp }
func (v *appView) title() string          { return "app " + v.name }
func (v *appView) selectedApps() []string { return []string{v.name} }

func (v *appView) recompute() {
	v.seen = v.c.version
	var sel status.ObjectRef
	if r := v.selected(); r != nil {
		sel = r.Ref
	}
	a, _ := v.c.app(v.name)
	res := make([]status.ResourceStatus, len(a.Resources))
	copy(res, a.Resources)
	sort.SliceStable(res, func(i, j int) bool {
		ri, rj := res[i].Ref, res[j].Ref
		if ri.Kind != rj.Kind {
			return ri.Kind < rj.Kind
		}
		if ri.Namespace != rj.Namespace {
			return ri.Namespace < rj.Namespace
		}
		return ri.Name < rj.Name
	})
	// Children (a SealedSecret's Secret) are listed under their parent,
	// not in their own kind's group.
	children := map[status.ObjectRef][]*status.ResourceStatus{}
	own := res[:0:0]
	for i := range res {
		if p := res[i].Parent; p != nil && slices.ContainsFunc(res, func(r status.ResourceStatus) bool { return r.Ref == *p }) {
			children[*p] = append(children[*p], &res[i])
			continue
		}
		own = append(own, res[i])
	}
	res = own
	v.lines = v.lines[:0]
	for i := 0; i < len(res); {
		j := i
		for j < len(res) && res[j].Ref.Kind == res[i].Ref.Kind {
			j++
		}
		v.lines = append(v.lines, appLine{header: fmt.Sprintf("%s (%d)", res[i].Ref.Kind, j-i)})
		for k := i; k < j; k++ {
			v.lines = append(v.lines, appLine{res: &res[k]})
			for _, c := range children[res[k].Ref] {
				v.lines = append(v.lines, appLine{res: c, child: true})
			}
		}
		i = j
	}
	// Row 1 is the first resource, under its kind's header.
	v.keep(len(v.lines), 1, func(i int) bool { return v.lines[i].res != nil && v.lines[i].res.Ref == sel })
}

func (v *appView) selected() *status.ResourceStatus {
	if i, ok := v.selectedRow(); ok {
		return v.lines[i].res
	}
	return nil
}

func (v *appView) handleKey(msg tea.KeyPressMsg, a keymap.Action) outcome {
	if v.move(a) {
		return handled(nil)
	}
	r := v.selected()
	switch a {
	case keymap.ActEnter, keymap.ActDiff, keymap.ActOwners:
		if r == nil {
			return outcome{handled: true, status: v.name + " has no resources", err: true}
		}
		if a == keymap.ActOwners {
			ov := newOwnersView(v.c, v.name, *r)
			return outcome{handled: true, push: ov, work: ov.load()}
		}
		dv := newDiffView(v.c, v.name, *r)
		return outcome{handled: true, push: dv, work: dv.load()}
	case keymap.ActHistory:
		hv := newHistoryView(v.c, v.name)
		return outcome{handled: true, push: hv, work: hv.load()}
	case keymap.ActFreeze:
		if r == nil {
			return outcome{handled: true, status: v.name + " has no resources to freeze", err: true}
		}
		if r.Status == status.ResourceGenerated {
			return outcome{handled: true, status: r.Ref.String() + " is made by another controller, not rendered from Git: freeze its parent", err: true}
		}
		return resourceFreezeDialog(v.c, v.name, []status.ObjectRef{r.Ref}, nil)
	case keymap.ActUnfreeze:
		// A resource under a resource or field freeze lifts that freeze;
		// any other row lifts the app's freeze (the root's action).
		a, _ := v.c.app(v.name)
		if r == nil {
			return outcome{}
		}
		if fz := freezesOn(a, r.Ref); len(fz) > 0 {
			return resourceUnfreezeDialog(v.c, a, *r, fz[0], nil)
		}
	}
	return outcome{}
}

func (v *appView) update(msg tea.Msg) tea.Cmd {
	if _, ok := msg.(appsChangedMsg); ok && v.seen != v.c.version {
		v.recompute()
	}
	return nil
}

func (v *appView) shortHelp() []key.Binding {
	return v.c.keys.Short(v.kind(), keymap.ActEnter, keymap.ActOwners, keymap.ActHistory, keymap.ActSync,
		keymap.ActFreeze, keymap.ActBack, keymap.ActHelp)
}

func (v *appView) render(w, h int) string {
	s := v.c.styles
	a, ok := v.c.app(v.name)
	var b strings.Builder
	if !ok {
		return s.Bad.Render(v.name + " is gone: it is no longer declared in Git (esc goes back)")
	}
	head := fmt.Sprintf("%s  %s  %s  %s/%s  %s", a.Name, appSyncText(a), appHealthText(a), orDefault(a.Destination.Context, "(current)"), a.Destination.Namespace, a.Path)
	if a.OwnerEngine != "" {
		// Who heals it, as the apps view's SELF-HEAL says, and why not
		// when its own declaration suspends it.
		heal, _ := healCell(a, v.c.now(), v.c)
		head += "  self-heal " + heal
		if a.OwnerPaused != "" {
			head += " (" + a.OwnerPaused + ")"
		}
	}
	b.WriteString(s.Title.Render(cut(head, w)))
	b.WriteByte('\n')
	extra := 0
	if a.OwnerResumed != "" {
		// The freeze holds for kdrift, not for the engine that heals.
		b.WriteString(s.Bad.Render(cut("⚠ "+a.OwnerEngine+" "+a.OwnerResumed, w)))
		b.WriteByte('\n')
		extra++
	}
	if t := report.OwnerRevisionText(a, v.c.now()); t != "" && a.Difference == status.DifferenceWaiting {
		// What the app waits for, with the owner's age.
		b.WriteString(s.Info.Render(cut("⧗ "+t, w)))
		b.WriteByte('\n')
		extra++
	} else if a.OwnerApplied != "" {
		b.WriteString(s.Info.Render(cut(a.OwnerApplied, w)))
		b.WriteByte('\n')
		extra++
	}
	if a.Chart != "" {
		b.WriteString(s.Info.Render(cut("renders "+a.Chart, w)))
		b.WriteByte('\n')
		extra++
	}
	if why := healthWhy(a.HealthDetail); why != "" {
		// Which rule made the app's health, on which object, and why.
		obj := ""
		if a.HealthDetail.Object != nil {
			obj = a.HealthDetail.Object.String() + " "
		}
		b.WriteString(healthStyle(s, a.Health).Render(cut("health "+obj+"("+why+")", w)))
		b.WriteByte('\n')
		extra++
	}
	for _, c := range a.Canaries {
		b.WriteString(s.Info.Render(cut("◐ "+c.Controller+" "+c.Ref.String()+": "+c.Phase+", "+c.Summary(), w)))
		b.WriteByte('\n')
		extra++
	}
	for _, l := range forgeLines(v.c, a, w) {
		b.WriteString(l)
		b.WriteByte('\n')
		extra++
	}
	height := max(h-3-extra, 1)
	nameW := 20
	for _, l := range v.lines {
		if l.res != nil {
			nameW = max(nameW, len(l.res.Ref.Namespace)+len(l.res.Ref.Name)+1)
		}
	}
	nameW = min(nameW, max(w-2-18-14-10-4, 20))
	b.WriteString(s.Header.Render(cut("  "+pad("NAME", nameW)+" "+pad("STATUS", 18)+" "+pad("HEALTH", 14)+" DRIFTED", w)))
	b.WriteByte('\n')
	if len(v.lines) == 0 {
		b.WriteString(s.Muted.Render("no resources rendered from Git for this app"))
		b.WriteByte('\n')
	}
	from, end := v.page(height)
	for i := from; i < end; i++ {
		l := v.lines[i]
		if l.res == nil {
			b.WriteString(s.Accent.Render(cut(l.header, w)))
			b.WriteByte('\n')
			continue
		}
		r := l.res
		name := r.Ref.Name
		if r.Ref.Namespace != "" {
			name = r.Ref.Namespace + "/" + r.Ref.Name
		}
		if l.child {
			name = "↳ " + r.Ref.Kind + " " + name
		}
		drift := "-"
		if n := r.Drifted(); n > 0 {
			drift = fmt.Sprintf("%d fields", n)
		}
		switch fz := r.FrozenDrift(); {
		case r.Frozen != nil:
			drift += " ❄ frozen"
		case fz > 0:
			drift += fmt.Sprintf(" ❄%d frozen", fz)
		}
		if i == v.cursor {
			line := "  " + pad(name, nameW) + " " + pad(resourceText(r.Status), 18) + " " + pad(healthText(r.Health), 14) + " " + drift
			b.WriteString(s.Selected.Render(pad(line, w)))
		} else {
			line := "  " + pad(name, nameW) + " " + resourceStyle(s, r.Status).Render(pad(resourceText(r.Status), 18)) + " " +
				healthStyle(s, r.Health).Render(pad(healthText(r.Health), 14)) + " " + drift
			b.WriteString(cutStyled(line, w))
		}
		b.WriteByte('\n')
	}
	v.fill(&b, end)
	if r := v.selected(); r != nil && r.Message != "" {
		b.WriteString(s.Bad.Render(cut(r.Ref.String()+": "+r.Message, w)))
	} else if r != nil && r.Health != status.HealthHealthy && healthWhy(r.HealthDetail) != "" {
		b.WriteString(healthStyle(s, r.Health).Render(cut(r.Ref.String()+" "+healthText(r.Health)+" ("+healthWhy(r.HealthDetail)+")", w)))
	} else if fz := freezesOfSelected(a, r); len(fz) > 0 {
		b.WriteString(s.Info.Render(cut("❄ "+frozenWhat(fz[0])+" frozen "+freezeLine(fz[0].Mark(), v.c.now(), v.c.loc), w)))
	} else if a.Error != "" {
		b.WriteString(s.Bad.Render(cut(a.Error, w)))
	}
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// freezesOfSelected are the freezes on the selected resource; none when
// no resource is selected.
func freezesOfSelected(a status.AppStatus, r *status.ResourceStatus) []app.ResourceFreeze {
	if r == nil {
		return nil
	}
	return freezesOn(a, r.Ref)
}
