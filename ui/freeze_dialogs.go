package ui

// The dialogs of resource and field freezes: `f` on a resource row of the
// app view, on a field line of the diff view or on an :owners row, and
// `F` to lift them. Each asks a reason and makes one Git commit.

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/backend"
	"kdrift.dev/kdrift/ui/report"
)

// ResourceFreezeCommittedMsg is the result of Backend.FreezeResource or
// Backend.UnfreezeResource.
type ResourceFreezeCommittedMsg struct {
	App string
	// What is the action and its object and fields, for the status line
	// ("freeze Deployment.apps/prod/render [/spec/replicas]").
	What   string
	Result backend.CommitResult
	Err    error
}

// resourceRef is the freeze's name of a live object.
func resourceRef(r status.ObjectRef) app.ResourceRef {
	return app.ResourceRef{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// freezesOn are the app's freezes in force that hold the object.
func freezesOn(a status.AppStatus, ref status.ObjectRef) []app.ResourceFreeze {
	var out []app.ResourceFreeze
	for _, f := range a.Freezes {
		if f.Resource.Matches(ref.Group, ref.Kind, ref.Namespace, ref.Name, a.Destination.Namespace) {
			out = append(out, f)
		}
	}
	return out
}

// what names refs and fields for a title or the status line.
func what(refs []app.ResourceRef, fields []string) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.String()
	}
	s := strings.Join(names, ", ")
	if len(refs) > 3 {
		s = fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(refs)-3)
	}
	if len(fields) > 0 {
		s += " [" + strings.Join(fields, " ") + "]"
	}
	return s
}

// resourceFreezeDialog asks a reason and an optional duration, then
// freezes refs (the whole objects when fields is empty) in one commit.
func resourceFreezeDialog(c *common, appName string, refs []status.ObjectRef, fields []string) outcome {
	targets := make([]app.ResourceRef, len(refs))
	for i, r := range refs {
		targets[i] = resourceRef(r)
	}
	w := what(targets, fields)
	body := []string{"App " + appName + ": " + w}
	if len(fields) == 0 {
		body = append(body, "Self-heal and prune leave the whole object as it is live;")
	} else {
		body = append(body, "Self-heal leaves these fields as they are live (kdrift lets go of them);")
	}
	body = append(body, "the rest of the app keeps healing. Drift stays visible, marked ❄. The freeze is a Git commit.")
	title := "Freeze " + w + "?"
	be, ctx := c.be, c.ctx
	d := newDialog(title, body, "tab: next field · enter: commit the freeze · esc: cancel", func(vals []string) (outcome, string) {
		reason := vals[0]
		var dur time.Duration
		if vals[1] != "" {
			var err error
			dur, err = time.ParseDuration(vals[1])
			if err != nil || dur <= 0 {
				return outcome{}, fmt.Sprintf("duration %q: use a Go duration such as 30m, 4h or 1h30m, or leave it empty", vals[1])
			}
		}
		return outcome{status: "freezing " + w + "…", work: func() tea.Msg {
			res, err := be.FreezeResource(ctx, appName, targets, fields, reason, dur)
			return ResourceFreezeCommittedMsg{App: appName, What: "freeze " + w, Result: res, Err: err}
		}}, ""
	}).withField("reason", "e.g. INC-1234 render workers scaled to 12 by hand", true).withField("for", "optional: 4h, 30m (empty: until unfrozen)", false)
	return outcome{handled: true, dialog: d}
}

// resourceUnfreezeDialog shows what self-heal will put back, asks a
// reason, and lifts the freeze fr of the object (only fields, when given).
func resourceUnfreezeDialog(c *common, a status.AppStatus, res status.ResourceStatus, fr app.ResourceFreeze, fields []string) outcome {
	ref := fr.Resource
	w := what([]app.ResourceRef{ref}, fields)
	body := []string{"App " + a.Name + ": " + w, "frozen " + freezeLine(fr.Mark(), c.now(), c.loc)}
	back := putBack(res, func(f status.FieldChange) bool {
		if len(fields) == 0 {
			return fr.Whole() || fr.Covers(f.Path)
		}
		for _, p := range fields {
			if f.Path == p || strings.HasPrefix(f.Path, p+"/") {
				return true
			}
		}
		return false
	})
	if a.SelfHeal == status.SelfHealOn && len(back) > 0 {
		body = append(body, "Self-heal will put back:")
	} else if len(back) > 0 {
		body = append(body, "A sync would put back (self-heal is "+string(a.SelfHeal)+"):")
	} else {
		body = append(body, "Nothing drifted under the freeze: nothing changes in the cluster.")
	}
	body = append(body, back...)
	seen := fr.Mark()
	be, ctx := c.be, c.ctx
	d := newDialog("Unfreeze "+w+"?", body, "enter: commit the unfreeze · ↑/↓ scroll · esc: cancel", func(vals []string) (outcome, string) {
		reason := vals[0]
		return outcome{status: "unfreezing " + w + "…", work: func() tea.Msg {
			r, err := be.UnfreezeResource(ctx, a.Name, ref, fields, reason, seen)
			return ResourceFreezeCommittedMsg{App: a.Name, What: "unfreeze " + w, Result: r, Err: err}
		}}, ""
	}).withField("reason", "why self-heal may put it back", true)
	return outcome{handled: true, dialog: d}
}

// putBack lists, one line each, the drifted fields of res that pick
// selects, live value → Git's value.
func putBack(res status.ResourceStatus, pick func(status.FieldChange) bool) []string {
	var out []string
	for _, f := range res.Fields {
		if !f.IsDrift() || !pick(f) {
			continue
		}
		if f.Masked {
			out = append(out, fmt.Sprintf("  %s %s: (Secret value, not shown) → Git's", res.Ref, f.Path))
			continue
		}
		out = append(out, fmt.Sprintf("  %s %s: %s → %s", res.Ref, f.Path, jsonValue(f.Live), jsonValue(f.Desired)))
	}
	return out
}

// jsonValue renders a field value compactly; "(absent)" for none.
func jsonValue(v any) string {
	if v == nil {
		return "(absent)"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return cut(string(raw), 60)
}

// freezeLine is "by WHO: REASON (until 15:00)" for the UI.
func freezeLine(f *app.Freeze, now time.Time, loc *time.Location) string {
	if f == nil {
		return ""
	}
	s := "by " + f.By + ": " + strings.SplitN(f.Reason, "\n", 2)[0]
	if f.Until != nil {
		s += fmt.Sprintf(" (until %s, in %s)", f.Until.In(loc).Format("15:04"), report.Duration(f.Until.Sub(now)))
	} else {
		s += " (no end set)"
	}
	return s
}

// frozenWhat says what a freeze holds: "/spec/replicas" or "whole
// resource".
func frozenWhat(f app.ResourceFreeze) string {
	if f.Whole() {
		return "whole resource"
	}
	return strings.Join(f.Fields, " ")
}

// expiringText says a freeze ends soon and what resuming changes.
func expiringText(ev status.FreezeExpiring, now time.Time, loc *time.Location) string {
	what := ev.App
	if ev.Resource != nil {
		what = ev.Resource.String()
		if len(ev.Fields) > 0 {
			what += " " + strings.Join(ev.Fields, " ")
		}
		what += " in " + ev.App
	}
	t := "❄ the freeze of " + what + " ends"
	if ev.Freeze.Until != nil {
		t += fmt.Sprintf(" at %s (in %s)", ev.Freeze.Until.In(loc).Format("15:04"), report.Duration(ev.Freeze.Until.Sub(now)))
	}
	switch n := len(ev.Changes); n {
	case 0:
		t += "; nothing drifted under it"
	case 1:
		t += "; resuming puts back " + ev.Changes[0]
	default:
		t += fmt.Sprintf("; resuming puts back %d fields: %s, …", n, ev.Changes[0])
	}
	if ev.Resource == nil {
		return t + " (kdrift freeze " + ev.App + " --extend keeps it)"
	}
	return t + " (to keep it, freeze it again with a new end)"
}

// endsSoon reports whether a freeze ending at until ends within
// status.FreezeExpiringWithin of now.
func endsSoon(until *time.Time, now time.Time) bool {
	return until != nil && now.Before(*until) && until.Sub(now) <= status.FreezeExpiringWithin
}

// canaryFreezeNote says what a delivery controller still does while kdrift
// is frozen: a freeze stops kdrift, not Flagger or Argo Rollouts.
func canaryFreezeNote(c status.Canary) string {
	var next string
	switch c.Controller {
	case "Flagger":
		next = "Flagger goes on: it keeps shifting weight, analysing, and promotes or rolls back (suspend it with spec.suspend on the Canary)"
	default:
		next = "Argo Rollouts goes on: it keeps stepping, analysing, and promotes or aborts (pause it with kubectl argo rollouts pause)"
	}
	return "◐ " + c.Ref.String() + " is at " + c.Summary() + ". " + next + "; fields it writes stay delegated."
}
