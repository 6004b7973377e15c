package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
)

// RevertPreview is what `kdrift revert --preview` shows, and its -o json
// document: the files the revert changes in Git and what the cluster
// would change once it is applied.
type RevertPreview struct {
	Files   []actions.FileDiff `json:"files"`
	Cluster engine.TreePreview `json:"cluster"`
}

// Bounds of the cluster part of a revert preview in text; -o json has
// everything the engine compared.
const (
	// PreviewObjects is how many objects of one app are listed.
	PreviewObjects = 20
	// PreviewFields is how many fields of one object are listed.
	PreviewFields = 10
)

// WriteRevertPreview writes the per-file diffs of a revert preview, then
// what the cluster would change, app by app:
//
//	Cluster (live → after the revert):
//	  app web (self-heal on: applied once pushed; prune on)
//	    update Deployment/prod/web
//	      /spec/template/spec/containers/0/image
//	        nginx:1.28 → nginx:1.27
//	    prune  ConfigMap/prod/extra (leaves Git)
func WriteRevertPreview(w io.Writer, p RevertPreview) error {
	var b strings.Builder
	writeFileDiffs(&b, p.Files)
	b.WriteString("\n")
	writeClusterPreview(&b, p.Cluster)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFileDiffs writes per-file diffs in path order, a binary or
// mode-only change as one line.
func WriteFileDiffs(w io.Writer, files []actions.FileDiff) error {
	var b strings.Builder
	writeFileDiffs(&b, files)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeFileDiffs(b *strings.Builder, files []actions.FileDiff) {
	diffs := append([]actions.FileDiff(nil), files...)
	sort.Slice(diffs, func(i, j int) bool { return diffs[i].Path < diffs[j].Path })
	for _, d := range diffs {
		if d.Diff == "" {
			fmt.Fprintf(b, "%s: %s (binary or mode change)\n", d.Path, d.Status)
			continue
		}
		b.WriteString(d.Diff)
	}
}

func writeClusterPreview(b *strings.Builder, c engine.TreePreview) {
	if c.Unavailable != "" {
		fmt.Fprintf(b, "Cluster: not compared: %s\n", c.Unavailable)
		return
	}
	if why := sameClusterError(c.Apps); why != "" {
		// One cluster that cannot be reached: said once.
		fmt.Fprintf(b, "Cluster: not compared: %s\n", firstLine(why))
		return
	}
	if len(c.Apps) == 0 {
		b.WriteString("Cluster: nothing changes (no object any App renders is different after the revert)\n")
		return
	}
	b.WriteString("Cluster (live → after the revert):\n")
	for _, a := range c.Apps {
		switch {
		case a.Removed:
			fmt.Fprintf(b, "  app %s: no longer declared after the revert: kdrift stops managing its objects, which stay in the cluster as they are\n", a.App)
			continue
		case a.RenderError != "":
			fmt.Fprintf(b, "  app %s: does not render after the revert: the app would be in Error: %s\n", a.App, firstLine(a.RenderError))
			continue
		case a.ClusterError != "":
			fmt.Fprintf(b, "  app %s: cluster not compared: %s\n", a.App, firstLine(a.ClusterError))
			continue
		}
		heal := "self-heal off: a sync applies it"
		switch {
		case a.Frozen != nil:
			heal = "frozen: self-heal waits for the unfreeze, a sync applies it"
		case a.SelfHeal:
			heal = "self-heal on: applied once pushed"
		}
		prune := "prune off"
		if a.Prune {
			prune = "prune on"
		}
		added := ""
		if a.Added {
			added = ", declared by the revert"
		}
		fmt.Fprintf(b, "  app %s (%s; %s%s)\n", a.App, heal, prune, added)
		if a.Frozen != nil {
			fmt.Fprintf(b, "    frozen by %s: %s\n", a.Frozen.By, firstLine(a.Frozen.Reason))
		}
		for i, o := range a.Objects {
			if i == PreviewObjects {
				fmt.Fprintf(b, "    … and %d more objects (-o json lists them)\n", len(a.Objects)-i)
				break
			}
			writeObjectPreview(b, o)
		}
		if a.NotCompared > 0 {
			fmt.Fprintf(b, "    … and %d more objects not compared (a preview compares at most %d)\n", a.NotCompared, engine.PreviewLimit)
		}
		if len(a.Objects) == 0 && a.NotCompared == 0 {
			b.WriteString("    nothing changes live\n")
		}
	}
}

func writeObjectPreview(b *strings.Builder, o engine.ObjectPreview) {
	fmt.Fprintf(b, "    %-6s %s", o.Change, o.Ref)
	switch o.Change {
	case engine.PreviewPrune:
		b.WriteString(" (leaves Git; the App prunes)")
	case engine.PreviewLeave:
		b.WriteString(" (leaves Git; stays in the cluster: prune is off or a freeze holds it)")
	case engine.PreviewSame:
		b.WriteString(" (already so live)")
	case engine.PreviewError, engine.PreviewReplace:
		b.WriteString(": " + firstLine(o.Message))
	}
	if o.Frozen != nil {
		fmt.Fprintf(b, " [frozen by %s: %s; self-heal leaves it]", o.Frozen.By, firstLine(o.Frozen.Reason))
	}
	b.WriteByte('\n')
	for i, f := range o.Fields {
		if i == PreviewFields {
			fmt.Fprintf(b, "      … and %d more fields\n", len(o.Fields)-i)
			break
		}
		// The path on a line of its own: the values stay whole on a
		// narrow screen.
		if f.Masked {
			fmt.Fprintf(b, "      %s\n        (Secret value, not shown) → changed\n", f.Path)
		} else {
			fmt.Fprintf(b, "      %s\n        %s → %s\n", f.Path, previewValue(f.Live), previewValue(f.Desired))
		}
		if f.Frozen != nil {
			fmt.Fprintf(b, "        frozen by %s: %s; self-heal leaves it\n", f.Frozen.By, firstLine(f.Frozen.Reason))
		}
	}
}

// previewValue is a field value for one line: a string as it is, other
// values as compact JSON, "(absent)" for none; cut at 60 characters.
func previewValue(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "(absent)"
	case string:
		s = x
		if s == "" || strings.ContainsAny(s, " \n\t") {
			s = fmt.Sprintf("%q", x)
		}
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			s = fmt.Sprint(v)
		} else {
			s = string(raw)
		}
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}

// sameClusterError is the cluster error every app has, when they all have
// the same one; "" otherwise.
func sameClusterError(apps []engine.AppPreview) string {
	why := ""
	for i, a := range apps {
		if a.ClusterError == "" || (i > 0 && a.ClusterError != why) {
			return ""
		}
		why = a.ClusterError
	}
	return why
}
