package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
)

// kindName is a kind as KIND.GROUP (KIND for the core group), the form
// --kind takes.
func kindName(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

// ClassLabel is a writer class as the owners table shows it: git for kdrift and
// other GitOps engines.
func ClassLabel(c status.OwnerClass) string {
	if diff.IsGit(c) {
		return "git"
	}
	return string(c)
}

// Ago renders how long before now t was, coarsely: "40s ago", "12 min
// ago", "3 h ago", "2 d ago"; "time unknown" when t is nil (an Update
// through the scale subresource records none).
func Ago(t *time.Time, now time.Time) string {
	if t == nil {
		return "time unknown"
	}
	d := now.Sub(*t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d d ago", int(d.Hours()/24))
}

// writerText is one writer in the table: "manager (class) N of M · when".
func writerText(w diff.FieldWriter, total int, now time.Time) string {
	s := fmt.Sprintf("%s (%s) %d of %d", w.Label(), ClassLabel(w.Class), w.Count, total)
	if w.Manager != "" {
		s += " · " + Ago(w.Newest, now)
	}
	return s
}

// OwnersTable writes the ownership map as a table: one line per field
// with its writers, the ignore rules that cover it and why it is
// contested, and one line per kind for the fields only Git writes.
func OwnersTable(w io.Writer, m diff.OwnerMap, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tFIELD\tWRITERS\tIGNORE RULES\tCONTESTED")
	for _, k := range m.Kinds {
		kn := kindName(k.Group, k.Kind)
		for _, r := range k.Rows {
			ws := make([]string, len(r.Writers))
			for i, wr := range r.Writers {
				ws[i] = writerText(wr, k.Objects, now)
			}
			contested := "-"
			if r.Contested {
				contested = "yes: " + strings.Join(r.Why, "; ")
			}
			rules := "-"
			if len(r.Rules) > 0 {
				rules = strings.Join(r.Rules, "; ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", kn, oneLine(r.Field), oneLine(strings.Join(ws, ", ")), oneLine(rules), oneLine(contested))
		}
		if k.GitOnly > 0 {
			fmt.Fprintf(tw, "%s\t(%d fields only Git writes, %d objects)\t-\t-\t-\n", kn, k.GitOnly, k.Objects)
		}
	}
	for _, e := range m.Errors {
		fmt.Fprintf(tw, "error: %s\n", oneLine(e))
	}
	return tw.Flush()
}

// OwnersJSON writes the ownership map as JSON (see README "kdrift owners
// -o json"); fields are only ever added.
func OwnersJSON(w io.Writer, m diff.OwnerMap) error {
	if m.Kinds == nil {
		m.Kinds = []diff.OwnerKind{}
	}
	return WriteJSON(w, m)
}

// OrphansTable writes orphans: kind, namespace/name, creating manager,
// its class and when it wrote.
func OrphansTable(w io.Writer, orphans []status.Orphan, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tOBJECT\tCREATED BY\tWHEN\tAPPS")
	for _, o := range orphans {
		name := o.Ref.Name
		if o.Ref.Namespace != "" {
			name = o.Ref.Namespace + "/" + name
		}
		by := "unknown (no managedFields)"
		if o.Creator.Manager != "" {
			by = fmt.Sprintf("%s %s (%s)", o.Creator.Manager, opText(o.Creator), o.Creator.Class)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", kindName(o.Ref.Group, o.Ref.Kind), oneLine(name), oneLine(by), Ago(o.Creator.Time, now), strings.Join(o.Apps, ", "))
	}
	return tw.Flush()
}

// OrphansJSON writes orphans as {"orphans": [...]}.
func OrphansJSON(w io.Writer, orphans []status.Orphan) error {
	if orphans == nil {
		orphans = []status.Orphan{}
	}
	return WriteJSON(w, struct {
		Orphans []status.Orphan `json:"orphans"`
	}{orphans})
}

func opText(o status.Owner) string {
	if o.Subresource != "" {
		return o.Operation + "/" + o.Subresource
	}
	return o.Operation
}

// The ownership document: a Markdown table with fixed columns that
// OwnersMarkdown writes and ParseOwnership reads back.
const (
	docMarker = "<!-- kdrift owners v1 -->"
	docHeader = "| Kind | Field | Writers | Ignore rules | Contested | Accepted |"
	// reviewedCol is the column `--reviewed-by` adds; the check ignores it.
	reviewedCol = " Reviewed by |"
	gitOnlyMk   = "*(fields only Git writes)*"
)

// OwnersMarkdown writes the ownership map as a document to commit
// (OWNERSHIP.md): one table row per field that anything but Git writes,
// writers as `manager` class N/M, and an Accepted column a team sets to
// "yes" on a contested field it accepts. Times are left out so the
// document changes only when ownership does. With reviewedBy (the
// CODEOWNERS owners of an App's files) a last column "Reviewed by" joins
// who writes a field in the cluster with who reviews it in Git: the
// owners of every App whose objects have the field.
func OwnersMarkdown(w io.Writer, m diff.OwnerMap, reviewedBy func(app string) []string) error {
	var b strings.Builder
	b.WriteString("# Field ownership\n\n")
	b.WriteString("Who writes which field of the objects kdrift compares, generated by `kdrift owners -o markdown`.\n")
	b.WriteString("CI runs `kdrift owners --check` on this file: it fails when a field gets a writer this table does not give it.\n")
	b.WriteString("Set Accepted to `yes` on a contested field whose writers the team accepts; any writer of that field then passes.\n")
	if reviewedBy != nil {
		b.WriteString("Reviewed by: the code owners (CODEOWNERS) of the files of the Apps whose objects have the field.\n")
	}
	b.WriteString("\n" + docMarker + "\n\n")
	if reviewedBy != nil {
		b.WriteString(docHeader + reviewedCol + "\n|---|---|---|---|---|---|---|\n")
	} else {
		b.WriteString(docHeader + "\n|---|---|---|---|---|---|\n")
	}
	extra := func(apps []string) string {
		if reviewedBy == nil {
			return ""
		}
		return " " + cell(strings.Join(reviewersOf(apps, reviewedBy), ", ")) + " |"
	}
	for _, k := range m.Kinds {
		kn := kindName(k.Group, k.Kind)
		var kindApps []string
		for _, r := range k.Rows {
			ws := make([]string, len(r.Writers))
			for i, wr := range r.Writers {
				ws[i] = fmt.Sprintf("`%s` %s %d/%d", docText(wr.Label()), ClassLabel(wr.Class), wr.Count, k.Objects)
			}
			contested := "no"
			if r.Contested {
				contested = "yes: " + strings.Join(r.Why, "; ")
			}
			var apps []string
			for _, p := range r.Pointers {
				apps = append(apps, p.Ref.App)
			}
			kindApps = append(kindApps, apps...)
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | no |%s\n", cell(kn), codeText(r.Field), cell(strings.Join(ws, ", ")), cell(strings.Join(r.Rules, "; ")), cell(contested), extra(apps))
		}
		if k.GitOnly > 0 {
			fmt.Fprintf(&b, "| %s | %s | git: %d fields | | no | no |%s\n", cell(kn), gitOnlyMk, k.GitOnly, extra(kindApps))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// reviewersOf is the owners of the apps, once each, sorted.
func reviewersOf(apps []string, reviewedBy func(string) []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range apps {
		if a == "" || seen["app "+a] {
			continue
		}
		seen["app "+a] = true
		for _, o := range reviewedBy(a) {
			if !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
	}
	slices.Sort(out)
	return out
}

// cell escapes text for a table cell: one line, pipes escaped.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

// codeText makes text safe inside a `code span` in a table cell:
// backticks become quotes, pipes are escaped.
func codeText(s string) string { return cell(docText(s)) }

// docText is text as a document row holds it once read back: one line,
// backticks as quotes.
func docText(s string) string { return oneLine(strings.ReplaceAll(s, "`", "'")) }

// OwnershipDoc is an ownership document read back: per kind and field,
// the writers it gives and whether the field is accepted as contested.
type OwnershipDoc struct {
	Rows map[DocKey]DocRow
}

// DocKey names one field of one kind in an ownership document.
type DocKey struct {
	Kind  string // KIND or KIND.GROUP
	Field string
}

// DocRow is one field's line of an ownership document.
type DocRow struct {
	Writers  []string
	Accepted bool
	// Line is the line number in the document.
	Line int
}

// DocError is a malformed ownership document: the line and what is wrong.
type DocError struct {
	Line    int
	Problem string
}

// Error says the line and the problem.
func (e *DocError) Error() string {
	if e.Line == 0 {
		return e.Problem
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Problem)
}

// maxDocSize bounds the document read: a repository is untrusted, and a
// table of every field of every kind stays far below it.
const maxDocSize = 8 << 20

// ParseOwnership reads an ownership document that OwnersMarkdown wrote
// (and people then edited): the table after the kdrift owners marker.
// Rows that are not field rows (the Git-only summaries) are skipped.
func ParseOwnership(r io.Reader) (OwnershipDoc, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDocSize+1))
	if err != nil {
		return OwnershipDoc{}, err
	}
	if len(data) > maxDocSize {
		return OwnershipDoc{}, &DocError{Problem: fmt.Sprintf("document is over %d MiB; an ownership table is far smaller", maxDocSize>>20)}
	}
	doc := OwnershipDoc{Rows: map[DocKey]DocRow{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), maxDocSize)
	state := 0 // 0 before the marker, 1 before the header, 2 in the table
	cols := 6  // cells per row, from the header
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch state {
		case 0:
			if line == docMarker {
				state = 1
			}
			continue
		case 1:
			if line == "" {
				continue
			}
			switch normalizeRow(line) {
			case normalizeRow(docHeader):
				cols = 6
			case normalizeRow(docHeader + reviewedCol):
				cols = 7
			default:
				return OwnershipDoc{}, &DocError{Line: n, Problem: fmt.Sprintf("expected the table header %q (with or without a last column \"Reviewed by\") after the marker", docHeader)}
			}
			state = 2
			continue
		}
		if line == "" {
			break // the table ends at the first blank line
		}
		cells, err := splitRow(line)
		if err != nil {
			return OwnershipDoc{}, &DocError{Line: n, Problem: err.Error()}
		}
		if len(cells) != cols {
			want := "Kind, Field, Writers, Ignore rules, Contested, Accepted"
			if cols == 7 {
				want += ", Reviewed by"
			}
			return OwnershipDoc{}, &DocError{Line: n, Problem: fmt.Sprintf("row has %d cells, want %d (%s)", len(cells), cols, want)}
		}
		if strings.Trim(cells[0], "-: ") == "" {
			continue // the delimiter row
		}
		if cells[1] == gitOnlyMk {
			continue
		}
		field := strings.TrimSuffix(strings.TrimPrefix(cells[1], "`"), "`")
		if field == "" || cells[0] == "" {
			return OwnershipDoc{}, &DocError{Line: n, Problem: "row has an empty Kind or Field"}
		}
		key := DocKey{Kind: cells[0], Field: field}
		if prev, dup := doc.Rows[key]; dup {
			return OwnershipDoc{}, &DocError{Line: n, Problem: fmt.Sprintf("%s %s is listed twice (first on line %d)", key.Kind, key.Field, prev.Line)}
		}
		acc := strings.ToLower(cells[5])
		if acc != "yes" && acc != "no" && acc != "" {
			return OwnershipDoc{}, &DocError{Line: n, Problem: fmt.Sprintf("Accepted is %q; write yes or no", cells[5])}
		}
		doc.Rows[key] = DocRow{Writers: codeSpans(cells[2]), Accepted: acc == "yes", Line: n}
	}
	if err := sc.Err(); err != nil {
		return OwnershipDoc{}, err
	}
	if state == 0 {
		return OwnershipDoc{}, &DocError{Problem: fmt.Sprintf("no %q marker: this is not a document `kdrift owners -o markdown` wrote", docMarker)}
	}
	if state == 1 {
		return OwnershipDoc{}, &DocError{Problem: "the marker is not followed by the ownership table"}
	}
	return doc, nil
}

func normalizeRow(s string) string { return strings.Join(strings.Fields(s), " ") }

// splitRow splits a table row into trimmed cells, honouring \| escapes.
func splitRow(line string) ([]string, error) {
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil, errors.New("not a table row: it must start and end with |")
	}
	body := line[1 : len(line)-1]
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(body); i++ {
		switch {
		case body[i] == '\\' && i+1 < len(body) && body[i+1] == '|':
			cur.WriteByte('|')
			i++
		case body[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(body[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String())), nil
}

// codeSpans returns the texts inside `backticks`.
func codeSpans(s string) []string {
	var out []string
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(s[i+1:], '`')
		if j < 0 {
			return out
		}
		out = append(out, s[i+1:i+1+j])
		s = s[i+2+j:]
	}
}

// Violation is a field with a writer the ownership document does not give
// it.
type Violation struct {
	Kind    string           `json:"kind"`
	Field   string           `json:"field"`
	Writer  diff.FieldWriter `json:"writer"`
	Allowed []string         `json:"allowed"`
}

// CheckOwnership compares live ownership with a document: every writer of
// a field must be one the document gives that field, except Git writers
// and defaulted (always allowed) and writers of a field the document marks
// accepted.
func CheckOwnership(doc OwnershipDoc, m diff.OwnerMap) []Violation {
	var out []Violation
	for _, k := range m.Kinds {
		kn := kindName(k.Group, k.Kind)
		for _, r := range k.Rows {
			row := doc.Rows[DocKey{Kind: kn, Field: docText(r.Field)}]
			if row.Accepted {
				continue
			}
			for _, w := range r.Writers {
				if diff.IsGit(w.Class) || w.Manager == "" {
					continue
				}
				if !slices.Contains(row.Writers, docText(w.Manager)) {
					out = append(out, Violation{Kind: kn, Field: r.Field, Writer: w, Allowed: row.Writers})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Field < out[j].Field
	})
	return out
}

// Violations writes one paragraph per violation: kind, field, the new
// writer with its class, operation and time, the objects, and what the
// document allows.
func Violations(w io.Writer, vs []Violation, file string) error {
	var b strings.Builder
	for _, v := range vs {
		allowed := "only Git"
		if len(v.Allowed) > 0 {
			allowed = strings.Join(v.Allowed, ", ") + " and Git"
		}
		when := "time unknown"
		if v.Writer.Newest != nil {
			when = v.Writer.Newest.UTC().Format(time.RFC3339)
		}
		op := status.Owner{Operation: v.Writer.Operation, Subresource: v.Writer.Subresource}
		fmt.Fprintf(&b, "%s %s: new writer %s (%s, %s) on %d object(s), newest write %s; %s gives it %s\n",
			v.Kind, oneLine(v.Field), oneLine(v.Writer.Manager), v.Writer.Class, opText(op), v.Writer.Count, when, file, allowed)
		for _, o := range v.Writer.Objects {
			fmt.Fprintf(&b, "  %s\n", oneLine(o))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
