package ui

import (
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/keymap"
)

// list is what every list view shares: how many rows it has, the cursor,
// the first row shown and the page height it was last drawn with, the
// movement keys, the selection kept across refreshes and, for a view that
// filters, the `/` prompt. A view embeds it and keeps its own rows; it
// says how many there are with setRows or keep whenever they change.
type list struct {
	n      int
	cursor int
	top    int
	height int
	// selectable, when set, says which rows the cursor may rest on (the
	// app view's kind headers are not); nil means every row.
	selectable func(i int) bool
	// listFilter is the `/` prompt of a view that filters; nil for one
	// that does not.
	*listFilter
}

// setRows says the list now has n rows; the cursor keeps its index,
// clamped to them.
func (l *list) setRows(n int) {
	l.n = n
	l.cursor = clamp(l.cursor, n)
}

// keep says the list now has n rows and puts the cursor on the row that
// holds the selection kept across the refresh (the last i that same
// reports), else on row def; clamped either way.
func (l *list) keep(n, def int, same func(i int) bool) {
	l.n = n
	l.cursor = def
	for i := range n {
		if same(i) {
			l.cursor = i
		}
	}
	l.cursor = clamp(l.cursor, n)
}

// selectedRow is the cursor's row; ok is false when the list is empty.
func (l *list) selectedRow() (int, bool) {
	return l.cursor, l.cursor < l.n
}

// move applies a movement action (up, down, page up and down, top,
// bottom) to the cursor, skipping the rows that are not selectable in
// the direction it moved; it reports whether a was a movement.
func (l *list) move(a keymap.Action) bool {
	c, ok := moveCursor(a, l.cursor, l.n, l.height)
	if !ok {
		return false
	}
	if l.selectable != nil {
		dir := 1
		if c < l.cursor || a == keymap.ActBottom {
			dir = -1
		}
		c = l.nearestSelectable(c, dir)
	}
	l.cursor = c
	return true
}

// nearestSelectable is the first selectable row from c in the direction
// dir, else the other way (top, or a page up, onto the first row of the
// app view lands on its kind header: the resource under it is meant),
// else the cursor's own row.
func (l *list) nearestSelectable(c, dir int) int {
	for _, d := range []int{dir, -dir} {
		for i := c; i >= 0 && i < l.n; i += d {
			if l.selectable(i) {
				return i
			}
		}
	}
	return l.cursor
}

// page lays the list out on h rows: it scrolls so that the cursor shows
// and returns the rows to draw, from (inclusive) to to (exclusive).
func (l *list) page(h int) (from, to int) {
	l.height = h
	l.top = scrollTo(l.top, l.cursor, h)
	return l.top, min(l.top+h, l.n)
}

// fill writes the empty lines under the rows a page drew (up to to), so
// that what follows the list stays in place.
func (l *list) fill(b *strings.Builder, to int) {
	for i := to - l.top; i < l.height; i++ {
		b.WriteByte('\n')
	}
}

// capturing is true while the `/` prompt takes the keys.
func (l *list) capturing() bool { return l.listFilter != nil && l.editing }

// listFilter is the `/` prompt of a list view: the filter text, and the
// text field while the person types it.
type listFilter struct {
	filter  string
	editing bool
	input   textinput.Model
}

func newListFilter() *listFilter {
	in := textinput.New()
	in.Prompt = "/"
	st := textinput.DefaultStyles(true)
	st.Cursor.Blink = false
	in.SetStyles(st)
	return &listFilter{input: in}
}

// openFilter opens the prompt on the current filter text.
func (f *listFilter) openFilter() {
	f.editing = true
	f.input.SetValue(f.filter)
	f.input.CursorEnd()
	f.input.Focus()
}

// clearFilter empties the filter text.
func (f *listFilter) clearFilter() {
	f.filter = ""
	f.input.SetValue("")
}

// filterKey handles a key while the prompt is open: enter closes it and
// keeps the text, esc closes it and clears the text, any other key edits
// it. changed says the view must filter its rows again.
func (f *listFilter) filterKey(msg tea.KeyPressMsg) (cmd tea.Cmd, changed bool) {
	switch msg.String() {
	case "enter":
		f.editing = false
		f.input.Blur()
		return nil, false
	case "esc":
		f.editing = false
		f.input.Blur()
		f.clearFilter()
		return nil, true
	}
	return f.edit(msg), true
}

// filterPaste puts pasted text in the prompt when it is open; changed
// says the view must filter its rows again.
func (f *listFilter) filterPaste(msg tea.PasteMsg) (cmd tea.Cmd, changed bool) {
	if !f.editing {
		return nil, false
	}
	return f.edit(msg), true
}

// edit hands msg to the text field and takes its text as the filter.
func (f *listFilter) edit(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	f.filter = f.input.Value()
	return cmd
}

// clamp keeps i within [0, n-1] (0 when n is 0).
func clamp(i, n int) int {
	if i >= n {
		i = n - 1
	}
	if i < 0 {
		i = 0
	}
	return i
}

// scrollTo returns the top row that keeps cursor visible in a window of h
// rows.
func scrollTo(top, cursor, h int) int {
	if h <= 0 {
		return cursor
	}
	if cursor < top {
		return cursor
	}
	if cursor >= top+h {
		return cursor - h + 1
	}
	return top
}

// moveCursor applies a movement action to a cursor over n rows with a page
// of h rows; ok is false when a is not a movement.
func moveCursor(a keymap.Action, cur, n, h int) (int, bool) {
	switch a {
	case keymap.ActUp:
		cur--
	case keymap.ActDown:
		cur++
	case keymap.ActTop:
		cur = 0
	case keymap.ActBottom:
		cur = n - 1
	case keymap.ActPageUp:
		cur -= max(h-1, 1)
	case keymap.ActPageDown:
		cur += max(h-1, 1)
	default:
		return cur, false
	}
	return clamp(cur, n), true
}

// columnPlan says how a table's columns give way on a narrow screen:
// each column's least width before it hides, the columns that shrink to
// it and then hide (in order), those that only shrink, and those that
// hide last. lead is the width before the first column (a mark).
type columnPlan struct {
	least  []int
	hidden []int
	shrunk []int
	last   []int
	lead   int
}

// fit gives each column its width for w cells (0 hides it): each starts
// at want, then the columns shrink or hide in the plan's order until a
// row (the lead, the columns and one space between each) fits in w-1
// cells; what is left over goes to the last column shown.
func (p columnPlan) fit(want []int, w int) []int {
	cols := append([]int(nil), want...)
	width := func() int {
		n := p.lead - 1
		for _, c := range cols {
			if c > 0 {
				n += c + 1
			}
		}
		return n
	}
	avail := w - 1
	shrink := func(c int) {
		if over := width() - avail; over > 0 {
			cols[c] = max(min(p.least[c], cols[c]), cols[c]-over)
		}
	}
	for _, c := range p.hidden {
		shrink(c)
		if width() > avail {
			cols[c] = 0
		}
	}
	for _, c := range p.shrunk {
		shrink(c)
	}
	for _, c := range p.last {
		if width() > avail {
			cols[c] = 0
		}
	}
	for i := len(cols) - 1; i >= 0; i-- {
		if cols[i] > 0 {
			cols[i] += max(avail-width(), 0)
			break
		}
	}
	return cols
}
