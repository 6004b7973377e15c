package ui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/keymap"
	"kdrift.dev/kdrift/ui/report"
)

// appsChangedMsg tells views that the apps store changed.
type appsChangedMsg struct{}

// Sort orders of the apps view; S cycles through them.
const (
	sortState = iota // Error, OutOfSync, Unknown, Synced; then name
	sortName
	sortDrift    // most drifted objects first
	sortOutOfAge // longest OutOfSync first
	sortCount
)

var sortNames = [sortCount]string{"state", "name", "drift", "out-of-sync age"}

// appRow is one app, its cells precomputed when the store changes so that
// rendering only styles the visible rows.
type appRow struct {
	a                            status.AppStatus
	name, dest, drift, heal, rev string
	// ns is the destination's namespace alone: DESTINATION shows it when
	// the column is too narrow for the context too.
	ns     string
	frozen bool
}

// appsView is the table of apps.
type appsView struct {
	list
	c      *common
	rows   []appRow
	seen   int
	sortBy int
	ctx    string // :ctx filter; "" shows every context
	marked map[string]bool
	// column widths, from the longest cell of each column
	nameW, destW, syncW, healW, revW int
}

func newAppsView(c *common, ctxFilter string) *appsView {
	v := &appsView{list: list{listFilter: newListFilter()}, c: c, ctx: ctxFilter, marked: map[string]bool{}, seen: -1}
	v.recompute()
	return v
}

func (v *appsView) kind() keymap.View { return keymap.ViewApps }
func (v *appsView) title() string {
	t := "apps"
	if v.ctx != "" {
		t += " · ctx " + v.ctx
	}
	return t
}

// matchFilter reports whether the app passes the `/` filter: a
// case-insensitive substring of name, destination or statuses; a leading
// `!` inverts it.
func matchFilter(f string, r appRow) bool {
	if f == "" || f == "!" {
		return true
	}
	inv := strings.HasPrefix(f, "!")
	f = strings.ToLower(strings.TrimPrefix(f, "!"))
	hay := strings.ToLower(r.name + " " + r.dest + " " + string(r.a.Sync) + " " + string(r.a.Health) + " " + r.heal)
	return strings.Contains(hay, f) != inv
}

func (v *appsView) recompute() {
	v.seen = v.c.version
	now := v.c.now()
	var sel string
	if r, ok := v.selected(); ok {
		sel = r.name
	}
	rows := make([]appRow, 0, len(v.c.apps))
	for _, a := range v.c.apps {
		if v.ctx != "" && a.Destination.Context != v.ctx {
			continue
		}
		r := appRow{a: a, name: a.Name}
		ctx := a.Destination.Context
		if ctx == "" {
			ctx = "(current)"
		}
		r.dest = ctx + "/" + a.Destination.Namespace
		r.ns = a.Destination.Namespace
		r.drift = fmt.Sprint(a.DriftedObjects())
		if n := a.EncryptedObjects(); n > 0 {
			r.drift += fmt.Sprintf(" ⊘%d", n) // Encrypted: drift unknown
		}
		r.heal, r.frozen = healCell(a, now, v.c)
		r.rev = shortHash(a.Revision)
		if a.RevisionAuthor != "" {
			r.rev += " " + personName(a.RevisionAuthor)
		}
		if !matchFilter(v.filter, r) {
			continue
		}
		rows = append(rows, r)
	}
	less := func(i, j int) bool { return rows[i].name < rows[j].name }
	by := func(k func(a, b appRow) int) {
		sort.SliceStable(rows, func(i, j int) bool {
			if c := k(rows[i], rows[j]); c != 0 {
				return c < 0
			}
			return less(i, j)
		})
	}
	switch v.sortBy {
	case sortName:
		sort.Slice(rows, less)
	case sortState:
		by(func(a, b appRow) int { return syncRank(a.a.Sync) - syncRank(b.a.Sync) })
	case sortDrift:
		by(func(a, b appRow) int { return b.a.DriftedObjects() - a.a.DriftedObjects() })
	case sortOutOfAge:
		by(func(a, b appRow) int {
			switch {
			case a.a.OutOfSyncSince == nil && b.a.OutOfSyncSince == nil:
				return 0
			case a.a.OutOfSyncSince == nil:
				return 1
			case b.a.OutOfSyncSince == nil:
				return -1
			}
			return a.a.OutOfSyncSince.Compare(*b.a.OutOfSyncSince)
		})
	}
	v.rows = rows
	v.nameW, v.destW, v.syncW, v.healW, v.revW = 8, 11, 12, 9, 8
	for _, r := range rows {
		v.syncW = max(v.syncW, len([]rune(appSyncText(r.a))))
		v.nameW = min(max(v.nameW, len([]rune(r.name))), 40)
		v.destW = min(max(v.destW, len([]rune(r.dest))), 60)
		v.healW = min(max(v.healW, len([]rune(r.heal))), 44)
		v.revW = min(max(v.revW, len([]rune(r.rev))), 30)
	}
	v.keep(len(rows), 0, func(i int) bool { return rows[i].name == sel })
}

// healCell is the SELF-HEAL cell of an app: on, off or "❄ FROZEN" with
// for how long, by whom and until when, and its resource freezes. An app
// another GitOps engine owns names it, as `kdrift status` does: "argocd:
// on", "flux: suspended" (suspended in Git, not by kdrift's freeze), or
// after a freeze "❄ FROZEN 1h Lao Li →19:00 · flux". frozen says the
// whole app is frozen.
func healCell(a status.AppStatus, now time.Time, c *common) (heal string, frozen bool) {
	switch {
	case a.Freeze.ActiveAt(now):
		frozen = true
		// "❄ FROZEN 1h Lao Li →19:00": for how long, by whom, until when.
		heal = "❄ FROZEN " + report.Duration(now.Sub(a.Freeze.At)) + " " + personName(a.Freeze.By)
		if a.Freeze.Until != nil {
			heal += " →" + a.Freeze.Until.In(c.loc).Format("15:04")
			if endsSoon(a.Freeze.Until, now) {
				heal += " ⏳" // ends within 15 minutes
			}
		}
	case a.SelfHeal == status.SelfHealOn:
		heal = "on"
	case a.OwnerPaused != "":
		// "suspended in Git: REASON" → "suspended"; the app view has all.
		heal = strings.TrimSuffix(strings.SplitN(a.OwnerPaused, ":", 2)[0], " in Git")
	default:
		heal = "off"
	}
	if n := len(a.Freezes); n > 0 && !frozen {
		// Resource or field freezes: the rest of the app heals.
		heal += fmt.Sprintf(" ❄%d", n)
		for _, f := range a.Freezes {
			if endsSoon(f.Until, now) {
				heal += " ⏳"
				break
			}
		}
	}
	if a.Freeze != nil && !frozen && a.Freeze.Until != nil {
		heal += " (freeze ended " + a.Freeze.Until.In(c.loc).Format("15:04") + ")"
	}
	switch owner := ownerLabel(a.OwnerEngine); {
	case owner == "":
	case frozen:
		// The freeze leads: a narrow column keeps "❄ FROZEN".
		heal += " · " + owner
	default:
		heal = owner + ": " + heal
	}
	return heal, frozen
}

// ownerLabel is a GitOps engine as the apps view names it: "argocd",
// "flux"; "" for none (a kdrift App).
func ownerLabel(engine string) string {
	if engine == "Argo CD" {
		return "argocd"
	}
	return strings.ToLower(strings.ReplaceAll(engine, " ", ""))
}

func (v *appsView) selected() (appRow, bool) {
	if i, ok := v.selectedRow(); ok {
		return v.rows[i], true
	}
	return appRow{}, false
}

func (v *appsView) selectedApps() []string {
	if len(v.marked) > 0 {
		out := make([]string, 0, len(v.marked))
		for n := range v.marked {
			out = append(out, n)
		}
		sort.Strings(out)
		return out
	}
	if r, ok := v.selected(); ok {
		return []string{r.name}
	}
	return nil
}

func (v *appsView) setContext(ctx string) {
	v.ctx = ctx
	v.recompute()
}

func (v *appsView) handleKey(msg tea.KeyPressMsg, a keymap.Action) outcome {
	if v.editing {
		cmd, changed := v.filterKey(msg)
		if changed {
			v.recompute()
		}
		return handled(cmd)
	}
	if v.move(a) {
		return handled(nil)
	}
	switch a {
	case keymap.ActActivity:
		v.c.hideActivity = !v.c.hideActivity
		if v.c.hideActivity {
			return outcome{handled: true, status: "activity log hidden (a shows it)"}
		}
		return outcome{handled: true, status: "activity log shown"}
	case keymap.ActFilter:
		v.openFilter()
		return handled(nil)
	case keymap.ActBack:
		if v.filter != "" || len(v.marked) > 0 {
			v.clearFilter()
			v.marked = map[string]bool{}
			v.recompute()
			return outcome{handled: true, status: "filter and marks cleared"}
		}
	case keymap.ActSort:
		v.sortBy = (v.sortBy + 1) % sortCount
		v.recompute()
		return outcome{handled: true, status: "sorted by " + sortNames[v.sortBy]}
	case keymap.ActMark:
		if r, ok := v.selected(); ok {
			if v.marked[r.name] {
				delete(v.marked, r.name)
			} else {
				v.marked[r.name] = true
			}
			v.move(keymap.ActDown)
		}
		return outcome{handled: true, status: fmt.Sprintf("%d marked", len(v.marked))}
	case keymap.ActEnter:
		if r, ok := v.selected(); ok {
			return outcome{handled: true, push: newAppView(v.c, r.name)}
		}
		return handled(nil)
	case keymap.ActHistory:
		if r, ok := v.selected(); ok {
			hv := newHistoryView(v.c, r.name)
			return outcome{handled: true, push: hv, work: hv.load()}
		}
		return handled(nil)
	}
	return outcome{}
}

func (v *appsView) update(msg tea.Msg) tea.Cmd {
	switch m := msg.(type) {
	case appsChangedMsg:
		if v.seen != v.c.version {
			v.recompute()
		}
	case FreezeCommittedMsg:
		// The marks chose what to freeze; once frozen they are spent.
		if m.Err == nil {
			v.marked = map[string]bool{}
		}
	case tea.PasteMsg:
		cmd, changed := v.filterPaste(m)
		if changed {
			v.recompute()
		}
		return cmd
	}
	return nil
}

func (v *appsView) shortHelp() []key.Binding {
	return v.c.keys.Short(v.kind(), keymap.ActEnter, keymap.ActSync, keymap.ActFreeze, keymap.ActUnfreeze,
		keymap.ActMark, keymap.ActFilter, keymap.ActHistory, keymap.ActHelp, keymap.ActQuit)
}

// Columns of the apps table, in the order they are drawn.
const (
	colName = iota
	colDest
	colSync
	colHealth
	colDrift
	colHeal
	colAge
	colRev
	colCount
)

// appsColumns is which columns give way first when the terminal is
// narrow. The revision, then the destination, then the out-of-sync age
// shrink to their least width and then hide; then the columns kept at 80
// cells (name, sync, self-heal where ❄ FROZEN shows, drift, health)
// shrink, health first and self-heal last: a long name is cut before the
// freeze loses who froze it and until when. Only under about 55 cells do
// those hide too, the name never. A column's least width is enough for
// "≠ OutOfSync" and "❄ FROZEN…"; a row starts with the mark (2 cells).
var appsColumns = columnPlan{
	least:  []int{colName: 12, colDest: 8, colSync: 11, colHealth: 10, colDrift: 5, colHeal: 9, colAge: 9, colRev: 8},
	hidden: []int{colRev, colDest, colAge},
	shrunk: []int{colHealth, colDrift, colName, colSync, colHeal},
	last:   []int{colHealth, colDrift, colHeal, colSync},
	lead:   2,
}

// columns gives each column its width for a screen w cells wide (0 hides
// it): each starts at its widest cell, then appsColumns fits them.
func (v *appsView) columns(w int) []int {
	return appsColumns.fit([]int{v.nameW, v.destW, v.syncW, 14, 6, v.healW, 9, v.revW}, w)
}

func (v *appsView) render(w, h int) string {
	s := v.c.styles
	var b strings.Builder
	detail := 2
	logH := activityHeight(v.c, h)
	if logH > 0 {
		logH++ // its rule
	}
	height := max(h-1-detail-logH, 1)
	cols := v.columns(w)
	arrow := func(col int, name string) string {
		if v.sortBy == col {
			return name + "▼"
		}
		return name
	}
	heads := [colCount]string{arrow(sortName, "NAME"), "DESTINATION", arrow(sortState, "SYNC"), "HEALTH",
		arrow(sortDrift, "DRIFT"), "SELF-HEAL", arrow(sortOutOfAge, "OUTOFSYNC"), "REVISION"}
	row := func(cells *[colCount]string) string {
		var l strings.Builder
		for c, cw := range cols {
			if cw == 0 {
				continue
			}
			if l.Len() > 0 {
				l.WriteByte(' ')
			}
			l.WriteString(cells[c])
		}
		return l.String()
	}
	for c, cw := range cols {
		heads[c] = pad(heads[c], cw)
	}
	b.WriteString(s.Header.Render(cut("  "+row(&heads), w)))
	b.WriteByte('\n')
	if len(v.rows) == 0 {
		msg := "no apps"
		if v.filter != "" || v.ctx != "" {
			msg = "no apps match the filter (esc clears it, :apps shows all)"
		} else {
			msg = "no apps found: declare them in .kdrift/*.yaml at the repository root"
		}
		if why := noAppsLines(v.c.be, h-2); v.filter == "" && v.ctx == "" && why != nil {
			msg = strings.Join(why, "\n")
		}
		for _, l := range strings.Split(msg, "\n") {
			b.WriteString(s.Muted.Render(cut(l, w)))
			b.WriteByte('\n')
		}
	}
	from, end := v.page(height)
	now := v.c.now()
	for i := from; i < end; i++ {
		r := v.rows[i]
		mark := "  "
		if v.marked[r.name] {
			mark = "* "
		}
		oos := "-"
		if r.a.OutOfSyncSince != nil {
			oos = report.Duration(now.Sub(*r.a.OutOfSyncSince))
		}
		dest := r.dest
		if len([]rune(dest)) > cols[colDest] && r.ns != "" {
			dest = r.ns // the namespace says more than a cut context
		}
		cells := [colCount]string{pad(r.name, cols[colName]), pad(dest, cols[colDest]), pad(appSyncText(r.a), cols[colSync]),
			pad(appHealthText(r.a), cols[colHealth]), pad(r.drift, cols[colDrift]), pad(r.heal, cols[colHeal]),
			pad(oos, cols[colAge]), pad(r.rev, cols[colRev])}
		if i == v.cursor {
			b.WriteString(s.Selected.Render(pad(mark+row(&cells), w)))
			b.WriteByte('\n')
			continue
		}
		healSt := s.Muted
		if r.frozen {
			healSt = s.Info
		} else if strings.TrimPrefix(r.heal, ownerLabel(r.a.OwnerEngine)+": ") == "on" {
			healSt = s.Good
		}
		cells[colDest] = s.Muted.Render(cells[colDest])
		cells[colSync] = appSyncStyle(s, r.a).Render(cells[colSync])
		cells[colHealth] = healthStyle(s, r.a.Health).Render(cells[colHealth])
		cells[colHeal] = healSt.Render(cells[colHeal])
		cells[colRev] = s.Muted.Render(cells[colRev])
		b.WriteString(cutStyled(s.Marked.Render(mark)+row(&cells), w))
		b.WriteByte('\n')
	}
	v.fill(&b, end)
	if logH > 0 {
		b.WriteString(s.Header.Render(cut("ACTIVITY (a hides)", w)))
		b.WriteByte('\n')
		for _, l := range activityLines(v.c, logH-1, w) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	b.WriteString(v.detailLine(w))
	b.WriteByte('\n')
	if v.editing {
		v.input.SetStyles(s.Input)
		b.WriteString(v.input.View())
	} else if v.filter != "" {
		b.WriteString(s.Muted.Render(cut(fmt.Sprintf("filter: %s  (%d of %d apps; / edits, esc clears)", v.filter, len(v.rows), len(v.c.apps)), w)))
	}
	return b.String()
}

// detailLine explains the selected app: the freeze reason, or the error.
func (v *appsView) detailLine(w int) string {
	s := v.c.styles
	r, ok := v.selected()
	if !ok {
		return ""
	}
	a := r.a
	switch {
	case r.frozen:
		t := "❄ " + a.Name + " frozen by " + a.Freeze.By + ": " + a.Freeze.Reason
		if a.Freeze.Until != nil {
			t += " (until " + a.Freeze.Until.In(v.c.loc).Format("2006-01-02 15:04") + ")"
		}
		if a.LocalFreeze {
			t += " · in a local commit not pushed yet"
		}
		if a.FreezeChannel != "" {
			t += " · on the incident channel " + a.FreezeChannel
		}
		return s.Info.Render(cut(t, w))
	case a.Error != "":
		return s.Bad.Render(cut("✗ "+a.Name+": "+a.Error, w))
	case len(a.Freezes) > 0:
		f := a.Freezes[0]
		t := fmt.Sprintf("❄ %s: %s %s frozen %s", a.Name, f.Resource, frozenWhat(f), freezeLine(f.Mark(), v.c.now(), v.c.loc))
		if len(a.Freezes) > 1 {
			t += fmt.Sprintf(" · %d more freezes", len(a.Freezes)-1)
		}
		return s.Info.Render(cut(t, w))
	}
	t := a.Name
	// Who heals an owned app comes first: it is why s asks twice.
	switch {
	case a.OwnerResumed != "":
		return s.Bad.Render(cut("⚠ "+a.Name+": "+a.OwnerEngine+" "+a.OwnerResumed, w))
	case a.OwnerPaused != "":
		t += " · " + a.Owner + " " + a.OwnerPaused
	case a.Owner != "":
		t += " · healed by " + a.Owner + ", never by kdrift"
	}
	t += " · path " + a.Path
	if a.File != "" {
		if where := app.In(a.File); strings.HasPrefix(where, "in ") {
			t += " · declared " + where
		} else {
			t += " · " + where
		}
	}
	if a.NoUpstream {
		t += " · branch " + a.RevisionRef + " has no upstream: the local branch is the truth"
	} else if a.RevisionRef != "" {
		t += " · from " + a.RevisionRef + " as fetched"
	}
	return s.Muted.Render(cut(t+" · compared "+report.Duration(v.c.now().Sub(a.ComparedAt))+" ago", w))
}
