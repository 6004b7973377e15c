package ui

import (
	"kdrift.dev/kdrift/ui/backend"
	"kdrift.dev/kdrift/ui/report"
)

// noAppsLines are why the backend found no app and what to do next, at
// most max lines (the last says how many were left out); nil when the
// backend cannot say. The caller cuts each line (termsafe through cut).
func noAppsLines(be backend.Backend, max int) []string {
	n, ok := be.(backend.NoApper)
	if !ok {
		return nil
	}
	d := report.NoApps(n.NoApps())
	if d == nil {
		return nil
	}
	out := []string{"no apps found:"}
	for _, l := range d.Why {
		out = append(out, "  - "+l)
	}
	out = append(out, "what to do:")
	for _, l := range d.Next {
		out = append(out, "  "+l)
	}
	if max >= 2 && len(out) > max {
		left := len(out) - max + 1
		out = append(out[:max-1], "  … "+plural(left, "more line")+" (kdrift status prints them all)")
	}
	return out
}
