package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"kdrift.dev/kdrift/engine/actions"
)

// WriteAuditTable writes audit entries as an aligned table for people:
// time, author, action, apps (with freeze states), commit and the first
// line of the reason.
func WriteAuditTable(w io.Writer, entries []actions.AuditEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tAUTHOR\tACTION\tAPPS\tCOMMIT\tREASON")
	for _, e := range entries {
		apps := make([]string, len(e.Apps))
		for i, a := range e.Apps {
			apps[i] = a
			if st, ok := e.FreezeState[a]; ok {
				apps[i] += " (" + st + ")"
			}
		}
		action := e.Action
		if e.Channel != "" {
			action += " (channel " + e.Channel + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(time.RFC3339), oneLine(e.Author), oneLine(action),
			oneLine(strings.Join(apps, ", ")), oneLine(e.Commit[:min(12, len(e.Commit))]), oneLine(firstLine(e.Reason)))
	}
	return tw.Flush()
}

// WriteJSON writes v as indented JSON with a final newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// firstLine is the first line of s, trimmed.
func firstLine(s string) string {
	return strings.TrimSpace(strings.SplitN(s, "\n", 2)[0])
}
