package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"kdrift.dev/kdrift/engine/engine"
)

// Plan writes what a dry-run sync would do, the text of `kdrift sync
// --dry-run`: a header, then one object a line with its action, the
// fields an apply puts back and the apiserver's refusal, if any:
//
//	sync render-prod (dry run: nothing changed)
//	  apply  Deployment/prod/render [/spec/replicas]
//	  prune  ConfigMap/prod/render-old
//
// syncErr is the dry run's own error: an empty plan reads "in sync" only
// without one.
func Plan(w io.Writer, p engine.Plan, syncErr error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sync %s (dry run: nothing changed)\n", p.App)
	for _, st := range p.Steps {
		fmt.Fprintf(&b, "  %-6s %s", st.Action, st.Ref)
		if len(st.Fields) > 0 {
			fmt.Fprintf(&b, " %v", st.Fields)
		}
		if st.Err != nil {
			b.WriteString("  FAILED: " + st.Err.Error())
		}
		b.WriteByte('\n')
	}
	if p.PruneRefused != nil {
		fmt.Fprintf(&b, "  %v\n", p.PruneRefused)
	}
	LeftFrozen(&b, p.LeftFrozen, "would leave")
	if len(p.Steps) == 0 && len(p.LeftFrozen) == 0 && syncErr == nil {
		b.WriteString("  nothing to do: in sync\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// LeftFrozen writes what a sync left (verb "left") or would leave as it is
// live because a resource or field freeze holds it, and how to overwrite.
func LeftFrozen(w io.Writer, parts []engine.FrozenPart, verb string) {
	now := time.Now()
	for _, f := range parts {
		what := "whole resource"
		if !f.Whole {
			what = fmt.Sprint(f.Fields)
		}
		fmt.Fprintf(w, "  frozen %s %s: %s %s, %s\n", f.Ref, what, verb, "as it is live", FreezeMark(f.Freeze, now))
	}
	if len(parts) > 0 {
		fmt.Fprintln(w, "  (sync --force overwrites frozen parts; `kdrift unfreeze APP --resource …` lifts a freeze)")
	}
}
