package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/keymap"
	"kdrift.dev/kdrift/ui/report"
)

// diffWidths splits a screen width into the columns of the diff: the Git
// and live cells of the side-by-side layout, the text of the unified one,
// and the owner column. A line is "▶" + cell + " │ " + cell + " │ " + owner
// (side by side) or "▶" + text + " │ " + owner (unified).
func diffWidths(w int) (cellW, uniW, annW int) {
	annW = min(max(w*3/10, 10), 44)
	cellW = max((w-7-annW)/2, 4)
	uniW = max(w-4-annW, 4)
	return cellW, uniW, annW
}

// unifiedBelow is the width under which the diff starts unified.
const unifiedBelow = 100

// diffLine is one screen line of a laid-out diff, its text already cut and
// padded to the width: rendering only styles the visible lines.
type diffLine struct {
	kind        rowKind
	left, right string
	ann         string
	class       status.OwnerClass
	noise       bool // ignored or defaulted
	path        string
}

// diffLayout is a diff laid out for one width and mode.
type diffLayout struct {
	width         int
	unified, hide bool
	lines         []diffLine
	// changes are the line indices where each drifted field starts:
	// defaulted and ignored lines are never one, shown or hidden.
	changes []int
	// defaulted and ignored count the live lines status.Line.Defaulted
	// calls defaulted (or that no field of the comparison covers) and the
	// lines of ignored fields, hidden or not.
	defaulted, ignored int
	// drifted is the object's drifted fields as every view counts them
	// (status.ResourceStatus.Drifted).
	drifted int
}

// rowNoise says which changed rows are noise: ignored fields, live lines
// nobody owns (status.Line.Defaulted), and live-only lines no field of
// the comparison covers (values the apiserver set, under the entry of
// whoever wrote the object). A live-only map or list
// opener whose lines below are all noise (a defaulted `strategy:` block)
// is noise too, so that hiding the defaults leaves no empty header.
func rowNoise(d status.ObjectDetail, rows []diffRow, ans []annotation) []bool {
	noise := make([]bool, len(rows))
	for i, r := range rows {
		if r.kind != rowSame {
			noise[i] = ans[i].ignored || (ans[i].class == status.OwnerDefaulted || ans[i].unlisted) && r.kind == rowRight
		}
	}
	path := func(r diffRow) string {
		if r.right >= 0 {
			return d.Live[r.right].Path
		}
		return d.Desired[r.left].Path
	}
	for i := len(rows) - 1; i >= 0; i-- {
		r := rows[i]
		if r.kind != rowRight || noise[i] || ans[i].class != "" || !d.Live[r.right].Parent || d.Live[r.right].Path == "" {
			continue
		}
		prefix := d.Live[r.right].Path + "/"
		children, all := 0, true
		for j := i + 1; j < len(rows); j++ {
			p := path(rows[j])
			if p != "" && !strings.HasPrefix(p, prefix) {
				break
			}
			children++
			if !noise[j] && (rows[j].kind != rowRight || p != "") {
				all = false
				break
			}
		}
		noise[i] = children > 0 && all
	}
	return noise
}

// layoutDiff lays out the aligned rows for a width: computed once per
// object, width and mode, never per frame. With hide, noise lines
// (rowNoise) are left out.
func layoutDiff(d status.ObjectDetail, rows []diffRow, w int, unified, hide bool, c *common) diffLayout {
	now := c.now()
	fields := make(map[string]*status.FieldChange, len(d.Resource.Fields))
	for i := range d.Resource.Fields {
		fields[d.Resource.Fields[i].Path] = &d.Resource.Fields[i]
	}
	ans := make([]annotation, len(rows))
	for i, r := range rows {
		if r.kind != rowSame {
			ans[i] = annotate(d, fields, r, now)
		}
	}
	noiseOf := rowNoise(d, rows, ans)
	// A Synced object has no drifted field, whatever the lines show.
	synced := d.Resource.Status == status.ResourceSynced
	lay := diffLayout{width: w, unified: unified, hide: hide, lines: make([]diffLine, 0, len(rows)), drifted: d.Resource.Drifted()}
	cellW, uniW, annW := diffWidths(w)
	prevChange, changePath := false, ""
	for i, r := range rows {
		an, noise := ans[i], noiseOf[i]
		switch {
		case noise && an.ignored:
			lay.ignored++
		case noise && (an.class == status.OwnerDefaulted || an.unlisted && !parentRow(d, r)):
			lay.defaulted++
		}
		if hide && noise {
			continue
		}
		ann := ""
		if r.kind != rowSame {
			ann = an.text
			if an.class != "" {
				ann += " · " + string(an.class)
			}
			if an.ignored {
				ann = "ignored · " + ann
			}
		}
		// A drifted field is a run of changed rows under one field: a
		// parent and the keys below it form one, a sibling starts the next.
		isChange := r.kind != rowSame && !noise && !synced && an.drift
		if isChange && (!prevChange || !(an.path == changePath || strings.HasPrefix(an.path, changePath+"/"))) {
			lay.changes = append(lay.changes, len(lay.lines))
			changePath = an.path
		}
		prevChange = isChange
		dl := diffLine{kind: r.kind, class: an.class, noise: noise, path: an.path}
		if !unified {
			if r.left >= 0 {
				dl.left = d.Desired[r.left].Text
			}
			if r.right >= 0 {
				dl.right = d.Live[r.right].Text
			}
			dl.left, dl.right, dl.ann = pad(dl.left, cellW), pad(dl.right, cellW), pad(ann, annW)
			lay.lines = append(lay.lines, dl)
			continue
		}
		switch r.kind {
		case rowSame:
			dl.left = pad("  "+d.Desired[r.left].Text, uniW)
			lay.lines = append(lay.lines, dl)
		default:
			if r.left >= 0 {
				l := dl
				l.kind = rowLeft
				l.left = pad("- "+d.Desired[r.left].Text, uniW)
				if r.right < 0 {
					l.ann = pad(ann, annW)
				}
				lay.lines = append(lay.lines, l)
			}
			if r.right >= 0 {
				l := dl
				l.kind = rowRight
				l.left = pad("+ "+d.Live[r.right].Text, uniW)
				l.ann = pad(ann, annW)
				lay.lines = append(lay.lines, l)
			}
		}
	}
	if d.Resource.Status == status.ResourceMissing {
		lay.drifted = len(lay.changes)
	}
	return lay
}

// parentRow reports whether a live row opens a map or list: its fields
// below are counted, not the opener.
func parentRow(d status.ObjectDetail, r diffRow) bool {
	return r.right >= 0 && d.Live[r.right].Parent
}

// counts is the header's tally: "1 drifted field · 12 defaulted hidden",
// or "no drift".
func (l *diffLayout) counts() string {
	t := "no drift"
	switch n := l.drifted; n {
	case 0:
	case 1:
		t = "1 drifted field"
	default:
		t = fmt.Sprintf("%d drifted fields", n)
	}
	shown := "shown"
	if l.hide {
		shown = "hidden"
	}
	if l.defaulted > 0 {
		t += fmt.Sprintf(" · %d defaulted %s", l.defaulted, shown)
	}
	if l.ignored > 0 {
		t += fmt.Sprintf(" · %d ignored %s", l.ignored, shown)
	}
	return t
}

// diffView is one object, Git against live.
type diffView struct {
	c       *common
	app     string
	res     status.ResourceStatus
	detail  *status.ObjectDetail
	err     error
	rows    []diffRow
	lay     diffLayout
	top     int
	change  int // index into lay.changes of the current change
	unified *bool
	hide    bool
	height  int
	lastW   int
}

func newDiffView(c *common, appName string, r status.ResourceStatus) *diffView {
	// Defaults and ignored fields start hidden: the diff opens on the drift.
	return &diffView{c: c, app: appName, res: r, hide: true}
}

func (v *diffView) kind() keymap.View      { return keymap.ViewDiff }
func (v *diffView) title() string          { return "diff " + v.res.Ref.String() }
func (v *diffView) capturing() bool        { return false }
func (v *diffView) selectedApps() []string { return []string{v.app} }

// load fetches the object; the command copies what it needs now.
func (v *diffView) load() tea.Cmd {
	return loadDetail(v.c, v.app, v.res.Ref)
}

func loadDetail(c *common, appName string, ref status.ObjectRef) tea.Cmd {
	be, ctx := c.be, c.ctx
	return func() tea.Msg {
		d, err := be.Detail(ctx, appName, ref)
		return DetailLoadedMsg{App: appName, Ref: ref, Detail: d, Err: err}
	}
}

func (v *diffView) setDetail(d status.ObjectDetail) {
	v.detail = &d
	v.res = d.Resource
	v.rows = alignLines(d.Desired, d.Live)
	v.lay = diffLayout{}
	v.change = 0
	v.ensureLayout(v.w())
	v.showChange()
}

// showChange scrolls so that the current drifted field is in sight, a
// third down the page.
func (v *diffView) showChange() {
	if v.height == 0 {
		v.height = max(v.c.height-6, 1)
	}
	if len(v.lay.changes) == 0 {
		v.top = 0
		return
	}
	v.top = max(v.lay.changes[v.change]-v.height/3, 0)
}

// update lays the object out as soon as it arrives or the terminal is
// resized, so that drawing a frame never has to.
func (v *diffView) update(msg tea.Msg) tea.Cmd {
	switch m := msg.(type) {
	case DetailLoadedMsg:
		if m.App == v.app && m.Ref == v.res.Ref {
			v.err = m.Err
			if m.Err == nil {
				v.setDetail(m.Detail)
			}
		}
	case tea.WindowSizeMsg:
		v.lastW = m.Width
		v.ensureLayout(m.Width)
	}
	return nil
}

func (v *diffView) isUnified(w int) bool {
	if v.unified != nil {
		return *v.unified
	}
	return w < unifiedBelow
}

// ensureLayout rebuilds the layout only when the width or mode changed.
func (v *diffView) ensureLayout(w int) {
	if v.detail == nil {
		return
	}
	u := v.isUnified(w)
	if v.lay.lines != nil && v.lay.width == w && v.lay.unified == u && v.lay.hide == v.hide {
		return
	}
	v.lay = layoutDiff(*v.detail, v.rows, w, u, v.hide, v.c)
	v.change = clamp(v.change, len(v.lay.changes))
	v.top = clamp(v.top, len(v.lay.lines))
}

func (v *diffView) jump(dir int) outcome {
	n := len(v.lay.changes)
	if n == 0 {
		return outcome{handled: true, status: "no drift in this object"}
	}
	i := v.change + dir
	if i < 0 || i >= n {
		return outcome{handled: true, status: "no more drifted fields"}
	}
	v.change = i
	v.showChange()
	return outcome{handled: true, status: fmt.Sprintf("drifted field %d of %d", i+1, n)}
}

func (v *diffView) currentPath() string {
	if len(v.lay.changes) == 0 {
		return ""
	}
	return v.lay.lines[v.lay.changes[v.change]].path
}

// w is the width the view was last drawn at, else the terminal's.
func (v *diffView) w() int {
	switch {
	case v.lastW > 0:
		return v.lastW
	case v.c.width > 0:
		return v.c.width
	}
	return 80
}

func (v *diffView) handleKey(msg tea.KeyPressMsg, a keymap.Action) outcome {
	v.ensureLayout(v.w())
	if v.height == 0 {
		v.height = max(v.c.height-6, 1)
	}
	if v.detail != nil {
		if t, ok := moveCursor(a, v.top, max(len(v.lay.lines)-v.height+1, 1), v.height); ok {
			v.top = t
			return handled(nil)
		}
	}
	switch a {
	case keymap.ActNextChange:
		return v.jump(1)
	case keymap.ActPrevChange:
		return v.jump(-1)
	case keymap.ActUnified:
		u := !v.isUnified(v.w())
		v.unified = &u
		v.ensureLayout(v.w())
		v.showChange()
		if u {
			return outcome{handled: true, status: "unified layout"}
		}
		return outcome{handled: true, status: "side-by-side layout"}
	case keymap.ActHideNoise:
		v.hide = !v.hide
		v.ensureLayout(v.w())
		v.showChange()
		if v.hide {
			return outcome{handled: true, status: "ignored and defaulted fields hidden"}
		}
		return outcome{handled: true, status: "ignored and defaulted fields shown"}
	case keymap.ActOwners:
		ov := newOwnersView(v.c, v.app, v.res)
		if v.detail != nil {
			ov.setDetail(*v.detail)
			return outcome{handled: true, push: ov}
		}
		return outcome{handled: true, push: ov, work: ov.load()}
	case keymap.ActIgnore:
		p := v.currentPath()
		if p == "" {
			return outcome{handled: true, status: "no field selected: jump to a change with n first", err: true}
		}
		return ignoreDialog(v.c, v.app, v.res.Ref, p)
	case keymap.ActFreeze:
		p := v.currentPath()
		if f := v.currentField(); f != nil {
			p = f.Path
		}
		if p == "" {
			return outcome{handled: true, status: "no field selected: jump to a drifted field with n first", err: true}
		}
		return resourceFreezeDialog(v.c, v.app, []status.ObjectRef{v.res.Ref}, []string{p})
	case keymap.ActUnfreeze:
		a, _ := v.c.app(v.app)
		fz := freezesOn(a, v.res.Ref)
		p := v.currentPath()
		if f := v.currentField(); f != nil {
			p = f.Path
		}
		for _, f := range fz {
			if f.Whole() {
				return resourceUnfreezeDialog(v.c, a, v.res, f, nil)
			}
			for _, fp := range f.Fields {
				if p != "" && (p == fp || strings.HasPrefix(p, fp+"/")) {
					return resourceUnfreezeDialog(v.c, a, v.res, f, []string{fp})
				}
			}
		}
		if len(fz) > 0 {
			return outcome{handled: true, status: "this field is not frozen: move to a ❄ frozen field (n/N), or F in the app view lifts every freeze of the object", err: true}
		}
	case keymap.ActRefresh:
		return outcome{work: v.load()}
	}
	return outcome{}
}

// currentField is the changed field the cursor is on: the line's own
// field or its nearest parent, or, on a parent line (annotations:), the
// first changed field below it.
func (v *diffView) currentField() *status.FieldChange {
	p := v.currentPath()
	if p == "" {
		return nil
	}
	fields := map[string]*status.FieldChange{}
	for i := range v.res.Fields {
		fields[v.res.Fields[i].Path] = &v.res.Fields[i]
	}
	if f := fieldFor(fields, p); f != nil {
		return f
	}
	for i := range v.res.Fields {
		if strings.HasPrefix(v.res.Fields[i].Path, p+"/") {
			return &v.res.Fields[i]
		}
	}
	return nil
}

// frozenMark is the freeze that holds the field f (or its whole object).
func (v *diffView) frozenMark(f *status.FieldChange) *app.Freeze {
	if v.res.Frozen != nil {
		return v.res.Frozen
	}
	return f.Frozen
}

func (v *diffView) shortHelp() []key.Binding {
	return v.c.keys.Short(v.kind(), keymap.ActNextChange, keymap.ActPrevChange, keymap.ActUnified,
		keymap.ActHideNoise, keymap.ActOwners, keymap.ActIgnore, keymap.ActFreeze, keymap.ActBack)
}

func (v *diffView) render(w, h int) string {
	s := v.c.styles
	switch {
	case v.err != nil:
		return s.Bad.Render(cut(v.err.Error(), w)) + "\n" + s.Muted.Render("ctrl+r retries · esc goes back")
	case v.detail == nil:
		return s.Muted.Render("loading " + v.res.Ref.String() + "…")
	}
	v.lastW = w
	v.ensureLayout(w)
	v.height = max(h-3, 1)
	var b strings.Builder
	mode := "side-by-side"
	if v.lay.unified {
		mode = "unified"
	}
	head := fmt.Sprintf("%s  %s  %s", v.res.Ref, resourceText(v.res.Status), v.lay.counts())
	if why := healthWhy(v.res.HealthDetail); why != "" {
		head += "  " + healthText(v.res.Health) + " (" + why + ")"
	}
	if d := report.DecidedText(v.res.Decided); d != "" {
		head += "  " + d
	}
	b.WriteString(s.Title.Render(cut(head+"  ["+mode+"]", w)))
	b.WriteByte('\n')
	cellW, uniW, _ := diffWidths(w)
	if v.lay.unified {
		b.WriteString(s.Header.Render(cut(" "+pad("- Git (desired)  + live", uniW)+" │ OWNER", w)))
	} else {
		b.WriteString(s.Header.Render(cut(" "+pad("GIT (desired)", cellW)+" │ "+pad("LIVE", cellW)+" │ OWNER", w)))
	}
	b.WriteByte('\n')
	end := min(v.top+v.height, len(v.lay.lines))
	cur := -1
	if len(v.lay.changes) > 0 {
		cur = v.lay.changes[v.change]
	}
	for i := v.top; i < end; i++ {
		l := &v.lay.lines[i]
		mark := " "
		if i == cur {
			mark = "▶"
		}
		ann := ""
		if l.ann != "" {
			ann = classStyle(s, l.class).Render(l.ann)
		}
		if v.lay.unified {
			txt := l.left
			switch {
			case l.noise && l.kind != rowSame:
				txt = s.Muted.Render(txt)
			case l.kind == rowLeft:
				txt = s.Del.Render(txt)
			case l.kind == rowRight:
				txt = s.Add.Render(txt)
			}
			b.WriteString(mark + txt + " │ " + ann)
		} else {
			left, right := l.left, l.right
			switch {
			case l.kind == rowSame:
			case l.noise:
				left, right = s.Muted.Render(left), s.Muted.Render(right)
			default:
				if l.kind != rowRight {
					left = s.Del.Render(left)
				}
				if l.kind != rowLeft {
					right = s.Add.Render(right)
				}
			}
			sep := " │ "
			if l.kind != rowSame {
				sep = " ≠ "
			}
			b.WriteString(mark + left + sep + right + " │ " + ann)
		}
		b.WriteByte('\n')
	}
	for i := end - v.top; i < v.height; i++ {
		b.WriteByte('\n')
	}
	b.WriteString(v.footer(w))
	return b.String()
}

// footer names the current change and all of its owners.
func (v *diffView) footer(w int) string {
	s := v.c.styles
	if len(v.lay.changes) == 0 {
		return s.Good.Render(cut("✓ no drift: Git and live agree on every field that matters", w))
	}
	p := v.currentPath()
	t := fmt.Sprintf("drifted field %d/%d %s", v.change+1, len(v.lay.changes), p)
	if f := v.currentField(); f != nil {
		var names []string
		for _, o := range f.Owners {
			names = append(names, ownerLine(o, v.c.now()))
		}
		if len(names) == 0 {
			names = []string{"nobody (defaulted)"}
		}
		t += " · owners: " + strings.Join(names, ", ")
		if f.Extra {
			t += " · added live, not in Git"
		}
		if f.Ignored {
			t += " · ignored"
		}
		if f.Difference == status.DifferenceWaiting || f.Difference == status.DifferenceRender {
			a, _ := v.c.app(v.app)
			t += " · " + report.DifferenceText(f.Difference, a.OwnerEngine)
		}
		if fr := v.frozenMark(f); fr != nil {
			return s.Info.Render(cut("❄ frozen "+freezeLine(fr, v.c.now(), v.c.loc)+" · "+t, w))
		}
	}
	return s.Muted.Render(cut(t, w))
}
