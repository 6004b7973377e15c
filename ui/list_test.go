package ui

import (
	"slices"
	"strings"
	"testing"

	"kdrift.dev/kdrift/keymap"
)

// TestListMoves: the movement keys over a list, clamped at both ends,
// with a page of the height last drawn.
func TestListMoves(t *testing.T) {
	var l list
	l.setRows(10)
	l.page(4)
	steps := []struct {
		a    keymap.Action
		want int
	}{
		{keymap.ActUp, 0}, {keymap.ActDown, 1}, {keymap.ActPageDown, 4}, {keymap.ActBottom, 9},
		{keymap.ActDown, 9}, {keymap.ActPageUp, 6}, {keymap.ActTop, 0},
	}
	for _, s := range steps {
		if !l.move(s.a) || l.cursor != s.want {
			t.Fatalf("after %v the cursor is %d, want %d", s.a, l.cursor, s.want)
		}
	}
	if l.move(keymap.ActEnter) {
		t.Error("enter counted as a movement")
	}
}

// TestListSkipsUnselectableRows: the cursor never rests on a row the view
// says is not selectable (the app view's kind headers): it goes on past
// one in the direction it moved, else back to the nearest selectable row
// (top onto a header), else stays where it was.
func TestListSkipsUnselectableRows(t *testing.T) {
	header := []bool{true, false, false, true, false}
	l := list{selectable: func(i int) bool { return !header[i] }, height: 10}
	l.keep(len(header), 1, func(int) bool { return false })
	for _, s := range []struct {
		a    keymap.Action
		want int
	}{{keymap.ActDown, 2}, {keymap.ActDown, 4}, {keymap.ActUp, 2}, {keymap.ActUp, 1}, {keymap.ActUp, 1}, {keymap.ActBottom, 4},
		// Top and page up onto a header land on the row under it.
		{keymap.ActTop, 1}, {keymap.ActBottom, 4}, {keymap.ActPageUp, 1}} {
		l.move(s.a)
		if l.cursor != s.want {
			t.Fatalf("after %v the cursor is %d, want %d", s.a, l.cursor, s.want)
		}
	}
}

// TestListKeepsTheSelection: a refresh keeps the cursor on the row of the
// same key wherever it moved, else goes to the default row.
func TestListKeepsTheSelection(t *testing.T) {
	var l list
	rows := []string{"a", "b", "c"}
	l.keep(len(rows), 0, func(int) bool { return false })
	l.move(keymap.ActBottom)
	sel := rows[l.cursor]
	rows = []string{"c", "a", "b", "d"}
	l.keep(len(rows), 0, func(i int) bool { return rows[i] == sel })
	if rows[l.cursor] != "c" {
		t.Fatalf("the selection moved to %s", rows[l.cursor])
	}
	rows = []string{"x"}
	l.keep(len(rows), 0, func(i int) bool { return rows[i] == sel })
	if l.cursor != 0 {
		t.Fatalf("the cursor is %d once its row is gone, want 0", l.cursor)
	}
}

// TestListPage: a page scrolls to show the cursor, and fill pads it to
// its height.
func TestListPage(t *testing.T) {
	var l list
	l.setRows(5)
	l.cursor = 4
	from, to := l.page(3)
	if from != 2 || to != 5 {
		t.Fatalf("page = [%d, %d), want [2, 5)", from, to)
	}
	l.setRows(1)
	from, to = l.page(3)
	var b strings.Builder
	l.fill(&b, to)
	if from != 0 || to != 1 || b.String() != "\n\n" {
		t.Fatalf("page = [%d, %d) filled with %q, want [0, 1) and two empty lines", from, to, b.String())
	}
}

// TestColumnPlanFits: columns shrink, then hide, in the plan's order, and
// what is left goes to the last column shown.
func TestColumnPlanFits(t *testing.T) {
	p := columnPlan{least: []int{4, 4, 4}, hidden: []int{2}, shrunk: []int{1}, last: []int{1}, lead: 0}
	for _, tt := range []struct {
		w    int
		want []int
	}{
		{40, []int{10, 10, 17}}, // room left over: the last column takes it
		{28, []int{10, 10, 5}},  // not quite: the hidden one shrinks first
		{20, []int{10, 8, 0}},   // then hides, and the next shrinks
		{10, []int{10, 0, 0}},   // then the last ones hide too
	} {
		if got := p.fit([]int{10, 10, 10}, tt.w); !slices.Equal(got, tt.want) {
			t.Errorf("fit(%d) = %v, want %v", tt.w, got, tt.want)
		}
	}
}
