package ui

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/report"
)

// rowKind says how one aligned row of a diff differs.
type rowKind uint8

// rowKind values.
const (
	rowSame    rowKind = iota
	rowChanged         // both sides, different text
	rowLeft            // only in Git
	rowRight           // only live
)

// diffRow pairs a Git line with a live line (-1 when a side has none).
type diffRow struct {
	kind        rowKind
	left, right int
}

func lineKey(l status.Line) string {
	if l.Path != "" {
		return "p:" + l.Path
	}
	return "t:" + strings.TrimSpace(l.Text)
}

// alignLines pairs Git lines with live lines by field path (structural
// lines by their text), keeping both orders. It is a greedy merge that
// skips the shorter run of unmatched lines at each step, using an index of
// each key's positions: O(n log n), so a 5,000-line object aligns at once.
func alignLines(desired, live []status.Line) []diffRow {
	dk := make([]string, len(desired))
	lk := make([]string, len(live))
	dpos := map[string][]int{}
	lpos := map[string][]int{}
	for i, l := range desired {
		dk[i] = lineKey(l)
		dpos[dk[i]] = append(dpos[dk[i]], i)
	}
	for i, l := range live {
		lk[i] = lineKey(l)
		lpos[lk[i]] = append(lpos[lk[i]], i)
	}
	next := func(pos map[string][]int, k string, from int) int {
		p := pos[k]
		j := sort.SearchInts(p, from)
		if j < len(p) {
			return p[j]
		}
		return -1
	}
	rows := make([]diffRow, 0, max(len(desired), len(live)))
	same := func(i, j int) rowKind {
		if desired[i].Text == live[j].Text {
			return rowSame
		}
		return rowChanged
	}
	i, j := 0, 0
	for i < len(desired) && j < len(live) {
		if dk[i] == lk[j] {
			rows = append(rows, diffRow{same(i, j), i, j})
			i++
			j++
			continue
		}
		inLive := next(lpos, dk[i], j)
		inGit := next(dpos, lk[j], i)
		switch {
		case inLive < 0 && inGit < 0:
			// Neither line has a partner ahead: show them side by side.
			rows = append(rows, diffRow{rowChanged, i, j})
			i++
			j++
		case inGit < 0 || (inLive >= 0 && inLive-j <= inGit-i):
			for ; j < inLive; j++ {
				rows = append(rows, diffRow{rowRight, -1, j})
			}
		default:
			for ; i < inGit; i++ {
				rows = append(rows, diffRow{rowLeft, i, -1})
			}
		}
	}
	for ; i < len(desired); i++ {
		rows = append(rows, diffRow{rowLeft, i, -1})
	}
	for ; j < len(live); j++ {
		rows = append(rows, diffRow{rowRight, -1, j})
	}
	return rows
}

// fieldFor finds the changed field that covers path: the field itself or
// its nearest parent.
func fieldFor(fields map[string]*status.FieldChange, path string) *status.FieldChange {
	for p := path; p != ""; {
		if f, ok := fields[p]; ok {
			return f
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return nil
}

// mainOwner picks the owner that matters most (status.OwnerClass.Rank):
// person, then controller, then kdrift.
func mainOwner(owners []status.Owner) (status.Owner, bool) {
	best, ok := status.Owner{}, false
	for _, o := range owners {
		if !ok || o.Class.Rank() < best.Class.Rank() {
			best, ok = o, true
		}
	}
	return best, ok
}

// ownerText is "manager Operation/subresource age", e.g. "kubectl
// Update/scale 3m"; the age is left out when managedFields has no time.
func ownerText(o status.Owner, now time.Time) string {
	t := o.Manager + " " + o.Operation
	if o.Subresource != "" {
		t += "/" + o.Subresource
	}
	if o.Time != nil {
		t += " " + report.Duration(now.Sub(*o.Time))
	}
	return t
}

// ownerLine is the full owner line of a footer: "kubectl Update/scale ·
// person · 12m ago" (the time from managedFields, "time unknown" when
// the write recorded none).
func ownerLine(o status.Owner, now time.Time) string {
	t := o.Manager + " " + o.Operation
	if o.Subresource != "" {
		t += "/" + o.Subresource
	}
	return t + " · " + string(o.Class) + " · " + report.Ago(o.Time, now)
}

// annotation says who owns a changed row's field, and of which class.
type annotation struct {
	text    string
	class   status.OwnerClass
	ignored bool
	path    string
	// drift says the row belongs to a field the comparison calls drift
	// (status.FieldChange.IsDrift): only those are drifted fields.
	drift bool
	// unlisted says a live-only row is no field of the comparison: a
	// value the apiserver set, recorded under whoever wrote the object.
	unlisted bool
}

// annotate computes the owner annotation of a row.
func annotate(d status.ObjectDetail, fields map[string]*status.FieldChange, r diffRow, now time.Time) annotation {
	var path string
	var owners []status.Owner
	defaulted := false
	if r.right >= 0 {
		path, owners, defaulted = d.Live[r.right].Path, d.Live[r.right].Owners, d.Live[r.right].Defaulted()
	} else if r.left >= 0 {
		path = d.Desired[r.left].Path
	}
	an := annotation{path: path}
	f := fieldFor(fields, path)
	// A Missing object has no fields: all of Git's lines are its drift.
	an.drift = d.Resource.Status == status.ResourceMissing || driftUnder(d.Resource.Fields, f, path)
	an.unlisted = f == nil && r.left < 0 && r.right >= 0 && !an.drift && compared(d.Resource.Status)
	if f != nil {
		an.ignored = f.Ignored
		if len(owners) == 0 {
			owners = f.Owners
		}
	}
	o, ok := mainOwner(owners)
	switch {
	case ok:
		an.class = o.Class
		an.text = ownerText(o, now)
		if len(owners) > 1 {
			an.text += " +" + strconv.Itoa(len(owners)-1)
		}
	case r.right < 0:
		// Git sets it and nobody has it live: no owner to name.
		an.text = "not live"
	case defaulted:
		an.class = status.OwnerDefaulted
		an.text = "apiserver default"
	}
	if f != nil && f.Class != "" && ok {
		an.class = f.Class
	}
	if f != nil && f.Delegated != nil {
		// Its controller's, never healed: say whose.
		an.text = "delegated to " + f.Delegated.Controller.Kind + "/" + f.Delegated.Controller.Name + " (" + f.Delegated.Manager + ")"
	}
	return an
}

// driftUnder reports whether a row is part of a drifted field: the field
// that covers it (f) is drift, or, for a map or list opener, a drifted
// field lies below it.
func driftUnder(fields []status.FieldChange, f *status.FieldChange, path string) bool {
	if f != nil {
		return f.IsDrift()
	}
	if path == "" {
		return false
	}
	for _, x := range fields {
		if x.IsDrift() && strings.HasPrefix(x.Path, path+"/") {
			return true
		}
	}
	return false
}

// compared reports whether a resource's fields are a comparison's
// answer, so that a live line none of them covers is no difference.
func compared(r status.Resource) bool {
	return r == status.ResourceSynced || r == status.ResourceOutOfSync || r == status.ResourceIgnored
}
