package actions

import (
	"bytes"
	"fmt"
	"strings"
)

// splitLines splits text into lines that keep their "\n"; a last line
// without one is kept as is, so joining the lines gives the text back.
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

// hunk says that lines [A0,A1) of the old text became lines [B0,B1) of the
// new text.
type hunk struct {
	A0, A1, B0, B1 int
}

// diffLines returns the hunks that turn a into b, in order, from a shortest
// edit script (Myers' O(ND) algorithm, after trimming the common prefix and
// suffix).
func diffLines(a, b []string) []hunk {
	// Intern lines so the inner loop compares ints.
	ids := map[string]int{}
	intern := func(ls []string) []int {
		out := make([]int, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	x, y := intern(a), intern(b)
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	xs, ys := x[pre:len(x)-suf], y[pre:len(y)-suf]
	ops := myers(xs, ys)
	// ops[i] is true where xs or ys advance on an equal line; turn the
	// path into hunks.
	var hunks []hunk
	i, j := 0, 0
	for _, op := range ops {
		switch op {
		case opEqual:
			i++
			j++
		case opDelete:
			if n := len(hunks); n > 0 && hunks[n-1].A1 == pre+i && hunks[n-1].B1 == pre+j {
				hunks[n-1].A1++
			} else {
				hunks = append(hunks, hunk{A0: pre + i, A1: pre + i + 1, B0: pre + j, B1: pre + j})
			}
			i++
		case opInsert:
			if n := len(hunks); n > 0 && hunks[n-1].A1 == pre+i && hunks[n-1].B1 == pre+j {
				hunks[n-1].B1++
			} else {
				hunks = append(hunks, hunk{A0: pre + i, A1: pre + i, B0: pre + j, B1: pre + j + 1})
			}
			j++
		}
	}
	return hunks
}

type editOp byte

const (
	opEqual editOp = iota
	opDelete
	opInsert
)

// maxEdit bounds the edit distance myers searches for: the trace it keeps
// grows with its square. Texts further apart get one delete-all,
// insert-all script (correct, not minimal).
const maxEdit = 2000

// myers returns a shortest edit script from x to y (or, past maxEdit
// differences, a plain replacement).
func myers(x, y []int) []editOp {
	n, m := len(x), len(y)
	if n == 0 && m == 0 {
		return nil
	}
	maxD := n + m
	if maxD > maxEdit {
		if ops, ok := myersBounded(x, y, maxEdit); ok {
			return ops
		}
		ops := make([]editOp, 0, n+m)
		for i := 0; i < n; i++ {
			ops = append(ops, opDelete)
		}
		for j := 0; j < m; j++ {
			ops = append(ops, opInsert)
		}
		return ops
	}
	ops, _ := myersBounded(x, y, maxD)
	return ops
}

// myersBounded is Myers' greedy algorithm with the trace kept for the walk
// back; ok is false when the texts differ in more than maxD lines.
func myersBounded(x, y []int, maxD int) ([]editOp, bool) {
	n, m := len(x), len(y)
	offset := maxD + 1
	v := make([]int, 2*maxD+4)
	var trace [][]int
	found := false
	for d := 0; d <= maxD && !found; d++ {
		snapshot := make([]int, 2*d+1)
		for k := -d; k <= d; k += 2 {
			var px int
			if k == -d || (k != d && v[offset+k-1] < v[offset+k+1]) {
				px = v[offset+k+1] // down: insertion
			} else {
				px = v[offset+k-1] + 1 // right: deletion
			}
			py := px - k
			for px < n && py < m && x[px] == y[py] {
				px++
				py++
			}
			v[offset+k] = px
			if px >= n && py >= m {
				found = true
			}
		}
		for k := -d; k <= d; k += 2 {
			snapshot[k+d] = v[offset+k]
		}
		trace = append(trace, snapshot)
	}
	if !found {
		return nil, false
	}
	// Walk back from (n, m): each step d came from a diagonal k±1 of step
	// d-1, by one insertion (down) or deletion (right), then a snake.
	var ops []editOp
	px, py := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1]
		get := func(k int) int { return prev[k+d-1] }
		k := px - py
		var prevK int
		if k == -d || (k != d && get(k-1) < get(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := get(prevK)
		prevY := prevX - prevK
		midX := prevX
		if prevK == k-1 {
			midX = prevX + 1
		}
		for px > midX {
			ops = append(ops, opEqual)
			px--
			py--
		}
		if prevK == k+1 {
			ops = append(ops, opInsert)
		} else {
			ops = append(ops, opDelete)
		}
		px, py = prevX, prevY
	}
	for px > 0 && py > 0 {
		ops = append(ops, opEqual)
		px--
		py--
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops, true
}

// conflict is one region where both sides of a three-way merge changed the
// same lines differently; Ours are line numbers (1-based, inclusive) in our
// version.
type conflict struct {
	OursStart, OursEnd int
}

// merge3 merges the change from base to theirs into ours, line by line, as
// diff3 does: hunks of the two sides that overlap or touch are one region;
// a region changed by one side takes that side, a region both sides changed
// identically takes that text, anything else is a conflict.
func merge3(base, ours, theirs []byte) ([]byte, []conflict) {
	bl, ol, tl := splitLines(base), splitLines(ours), splitLines(theirs)
	ho, ht := diffLines(bl, ol), diffLines(bl, tl)
	type side struct {
		h    hunk
		ours bool
	}
	var all []side
	i, j := 0, 0
	for i < len(ho) || j < len(ht) {
		if j >= len(ht) || (i < len(ho) && ho[i].A0 <= ht[j].A0) {
			all = append(all, side{ho[i], true})
			i++
		} else {
			all = append(all, side{ht[j], false})
			j++
		}
	}
	var out []string
	var conflicts []conflict
	basePos := 0
	for k := 0; k < len(all); {
		lo, hi := all[k].h.A0, all[k].h.A1
		hasOurs, hasTheirs := all[k].ours, !all[k].ours
		k2 := k + 1
		// Hunks that overlap or touch the region join it (git treats
		// touching changes as one conflict region too).
		for k2 < len(all) && all[k2].h.A0 <= hi {
			if all[k2].h.A1 > hi {
				hi = all[k2].h.A1
			}
			if all[k2].ours {
				hasOurs = true
			} else {
				hasTheirs = true
			}
			k2++
		}
		out = append(out, bl[basePos:lo]...)
		os, oe := mapStart(ho, lo), mapEnd(ho, hi)
		oursText := ol[os:oe]
		theirsText := tl[mapStart(ht, lo):mapEnd(ht, hi)]
		switch {
		case !hasTheirs:
			out = append(out, oursText...)
		case !hasOurs:
			out = append(out, theirsText...)
		case strings.Join(oursText, "") == strings.Join(theirsText, ""):
			out = append(out, oursText...)
		default:
			conflicts = append(conflicts, conflict{OursStart: os + 1, OursEnd: max(oe, os+1)})
			out = append(out, oursText...)
		}
		basePos = hi
		k = k2
	}
	out = append(out, bl[basePos:]...)
	return []byte(strings.Join(out, "")), conflicts
}

// mapStart maps the start of a merge region at base line lo to the other
// side's line index, given the hunks from base to that side; only hunks that
// start before lo shift it.
func mapStart(hs []hunk, lo int) int {
	shift := 0
	for _, h := range hs {
		if h.A0 >= lo {
			break
		}
		shift = (h.B1 - h.A1)
	}
	return lo + shift
}

// mapEnd maps the (exclusive) end of a merge region at base line hi to the
// other side: every hunk starting at or before hi lies within or before the
// region.
func mapEnd(hs []hunk, hi int) int {
	shift := 0
	for _, h := range hs {
		if h.A0 > hi {
			break
		}
		shift = (h.B1 - h.A1)
	}
	return hi + shift
}

// unifiedDiff renders a unified diff of a to b with three lines of context,
// headed by the two names; it is empty when a equals b.
func unifiedDiff(nameA, nameB string, a, b []byte) string {
	al, bl := splitLines(a), splitLines(b)
	hs := diffLines(al, bl)
	if len(hs) == 0 {
		return ""
	}
	const ctx = 3
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", nameA, nameB)
	line := func(prefix, l string) {
		sb.WriteString(prefix)
		sb.WriteString(strings.TrimSuffix(l, "\n"))
		sb.WriteString("\n")
		if !strings.HasSuffix(l, "\n") {
			sb.WriteString("\\ No newline at end of file\n")
		}
	}
	for i := 0; i < len(hs); {
		j := i
		for j+1 < len(hs) && hs[j+1].A0-hs[j].A1 <= 2*ctx {
			j++
		}
		a0 := max(hs[i].A0-ctx, 0)
		a1 := min(hs[j].A1+ctx, len(al))
		b0 := hs[i].B0 - (hs[i].A0 - a0)
		b1 := hs[j].B1 + (a1 - hs[j].A1)
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", rangeStr(a0, a1-a0), rangeStr(b0, b1-b0))
		pos := a0
		for k := i; k <= j; k++ {
			for ; pos < hs[k].A0; pos++ {
				line(" ", al[pos])
			}
			for _, l := range al[hs[k].A0:hs[k].A1] {
				line("-", l)
			}
			for _, l := range bl[hs[k].B0:hs[k].B1] {
				line("+", l)
			}
			pos = hs[k].A1
		}
		for ; pos < a1; pos++ {
			line(" ", al[pos])
		}
		i = j + 1
	}
	return sb.String()
}

func rangeStr(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
