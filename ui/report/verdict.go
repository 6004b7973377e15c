package report

import (
	"strings"
	"time"

	"kdrift.dev/kdrift/engine/status"
)

// OwnerRevisionText says what the app's owner last applied against the
// revision kdrift compares: "Argo CD applied c99a92c 4m ago; Git is at
// 13b3b73 (origin/main)"; "" when the owner does not say.
func OwnerRevisionText(a status.AppStatus, now time.Time) string {
	ow := a.OwnerRevision
	if ow == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(ow.Engine + " applied " + shortRev(ow.Applied))
	if ow.AppliedAt != nil {
		b.WriteString(" " + Ago(ow.AppliedAt, now))
	}
	if !ow.Behind {
		b.WriteString(", the revision kdrift compares")
		return b.String()
	}
	b.WriteString("; Git is at " + shortRev(ow.Desired))
	if ow.DesiredRef != "" {
		b.WriteString(" (" + ow.DesiredRef + ")")
	}
	return b.String()
}

// DifferenceText says what kind of difference d is on an app owned by
// engine: "waiting for Argo CD", "render disagreement with Flux",
// "drift"; "" for a kdrift App's field (always drift, not labelled).
func DifferenceText(d status.Difference, engine string) string {
	switch d {
	case status.DifferenceWaiting:
		return "waiting for " + engine + " (it applied an older revision)"
	case status.DifferenceRender:
		return "render disagreement: " + engine + " applied this revision and wrote the live value; kdrift's render gives the desired one"
	case status.DifferenceDrift:
		return "drift (not written by " + engine + ")"
	}
	return ""
}

// shortRev cuts a 40-character commit hash, alone or after "BRANCH@sha1:",
// to 7 characters.
func shortRev(r string) string {
	at := strings.LastIndexAny(r, ":@") + 1
	if h := r[at:]; len(h) == 40 && strings.Trim(h, "0123456789abcdef") == "" {
		return r[:at] + h[:7]
	}
	return r
}
