package ui

import (
	"fmt"

	"charm.land/lipgloss/v2"

	"kdrift.dev/kdrift/engine/status"
)

// Every status is shown as a symbol plus its name, so it reads without
// colour (NO_COLOR) and in a tmux capture.

func syncText(s status.Sync) string {
	switch s {
	case status.SyncSynced:
		return "✓ Synced"
	case status.SyncOutOfSync:
		return "≠ OutOfSync"
	case status.SyncError:
		return "✗ Error"
	}
	return "? " + orUnknown(string(s))
}

// appSyncText is syncText for an app, saying so when a Synced app has no
// object at all (empty on purpose), so that it never reads like an app
// whose objects all match.
// An app another engine owns that differs only because that engine has
// not applied the desired revision reads "OutOfSync (waiting for Argo
// CD)", with its own symbol, so that it never looks like drift.
func appSyncText(a status.AppStatus) string {
	if a.Sync == status.SyncSynced && a.NoObjects {
		return syncText(a.Sync) + " · 0 objects"
	}
	if a.Sync == status.SyncOutOfSync && a.Difference == status.DifferenceWaiting {
		return "⧗ " + a.SyncLabel()
	}
	if a.Sync == status.SyncOutOfSync {
		return "≠ " + a.SyncLabel()
	}
	return syncText(a.Sync)
}

// appSyncStyle is syncStyle for an app: waiting for its owner is shown
// as information, not as drift.
func appSyncStyle(st *Styles, a status.AppStatus) lipgloss.Style {
	if a.Sync == status.SyncOutOfSync && a.Difference == status.DifferenceWaiting {
		return st.Info
	}
	return syncStyle(st, a.Sync)
}

func syncStyle(st *Styles, s status.Sync) lipgloss.Style {
	switch s {
	case status.SyncSynced:
		return st.Good
	case status.SyncOutOfSync:
		return st.Warn
	case status.SyncError:
		return st.Bad
	}
	return st.Muted
}

func healthText(h status.Health) string {
	switch h {
	case status.HealthHealthy:
		return "♥ Healthy"
	case status.HealthProgressing:
		return "◐ Progressing"
	case status.HealthDegraded:
		return "✗ Degraded"
	case status.HealthMissing:
		return "∅ Missing"
	}
	return "? " + orUnknown(string(h))
}

// appHealthText is an app's health, or "◐ canary 20%" while a canary of
// the app is in flight and nothing of the app is worse than Progressing.
func appHealthText(a status.AppStatus) string {
	if len(a.Canaries) > 0 && (a.Health == status.HealthProgressing || a.Health == status.HealthHealthy) {
		return fmt.Sprintf("◐ canary %d%%", a.Canaries[0].Weight)
	}
	return healthText(a.Health)
}

// healthWhy is "Rule: message" of a health judgement; "" when there is
// none to tell.
func healthWhy(d *status.HealthDetail) string {
	if d == nil || (d.Rule == "" && d.Message == "") {
		return ""
	}
	if d.Message == "" {
		return d.Rule
	}
	return d.Rule + ": " + d.Message
}

func healthStyle(st *Styles, h status.Health) lipgloss.Style {
	switch h {
	case status.HealthHealthy:
		return st.Good
	case status.HealthProgressing:
		return st.Info
	case status.HealthDegraded, status.HealthMissing:
		return st.Bad
	}
	return st.Muted
}

func resourceText(r status.Resource) string {
	switch r {
	case status.ResourceSynced:
		return "✓ Synced"
	case status.ResourceOutOfSync:
		return "≠ OutOfSync"
	case status.ResourceMissing:
		return "+ Missing"
	case status.ResourceExtraneous:
		return "- Extraneous"
	case status.ResourceIgnored:
		return "~ Ignored"
	case status.ResourceError:
		return "✗ Error"
	case status.ResourceRequiresReplace:
		return "⟳ RequiresReplace"
	case status.ResourceEncrypted:
		return "⊘ Encrypted"
	case status.ResourceGenerated:
		return "↳ Generated"
	}
	return "? " + orUnknown(string(r))
}

func resourceStyle(st *Styles, r status.Resource) lipgloss.Style {
	switch r {
	case status.ResourceSynced:
		return st.Good
	case status.ResourceIgnored, status.ResourceGenerated:
		return st.Muted
	case status.ResourceEncrypted:
		return st.Info
	case status.ResourceOutOfSync, status.ResourceMissing, status.ResourceExtraneous:
		return st.Warn
	}
	return st.Bad
}

// classStyles colours each owner class; every status.OwnerClasses entry
// has one (a test checks).
var classStyles = map[status.OwnerClass]func(*Styles) lipgloss.Style{
	status.OwnerPerson:     func(st *Styles) lipgloss.Style { return st.Warn },
	status.OwnerController: func(st *Styles) lipgloss.Style { return st.Info },
	status.OwnerKdrift:     func(st *Styles) lipgloss.Style { return st.Good },
	status.OwnerGitOps:     func(st *Styles) lipgloss.Style { return st.Good },
	status.OwnerDefaulted:  func(st *Styles) lipgloss.Style { return st.Muted },
}

func classStyle(st *Styles, c status.OwnerClass) lipgloss.Style {
	if f, ok := classStyles[c]; ok {
		return f(st)
	}
	return st.Muted
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

// syncRank orders apps by urgency: Error, OutOfSync, Unknown, Synced.
func syncRank(s status.Sync) int {
	switch s {
	case status.SyncError:
		return 0
	case status.SyncOutOfSync:
		return 1
	case status.SyncSynced:
		return 3
	}
	return 2
}
