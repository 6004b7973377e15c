package ui

import (
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/backend"
)

// AppsLoadedMsg carries a full snapshot of the apps (start-up, ctrl-r).
type AppsLoadedMsg struct{ Apps []status.AppStatus }

// AppStatusChangedMsg is the engine's AppStatusChanged event.
type AppStatusChangedMsg struct{ Event status.AppStatusChanged }

// DriftDetectedMsg is the engine's DriftDetected event.
type DriftDetectedMsg struct{ Event status.DriftDetected }

// HealedMsg is the engine's Healed event.
type HealedMsg struct{ Event status.Healed }

// PrunedMsg is the engine's Pruned event.
type PrunedMsg struct{ Event status.Pruned }

// FightMsg is the engine's Fight event: another manager keeps rewriting a
// field and kdrift stopped healing it.
type FightMsg struct{ Event status.Fight }

// OverrideMsg is the engine's Override event: a person keeps rewriting a
// field kdrift heals every time.
type OverrideMsg struct{ Event status.Override }

// FreezeExpiringMsg is the engine's FreezeExpiring event: a freeze ends
// within fifteen minutes.
type FreezeExpiringMsg struct{ Event status.FreezeExpiring }

// ErrorEventMsg is the engine's ErrorEvent.
type ErrorEventMsg struct{ Event status.ErrorEvent }

// ReachabilityMsg is the engine's Reachability event: the cluster or Git
// went away or came back.
type ReachabilityMsg struct{ Event status.Reachability }

// UnknownEventMsg is an engine event of a type this UI does not know.
type UnknownEventMsg struct{ Event status.Event }

// EventsClosedMsg says the engine's event channel closed.
type EventsClosedMsg struct{}

// BackendSwitchedMsg says the UI's backend changed under it (an attached
// terminal whose leader is gone now compares with its own engine): Text
// goes on the status line; Reload has every app's status read again.
type BackendSwitchedMsg struct {
	Text   string
	Reload bool
}

// RoleChangedMsg says the top line's role changed (a Lease taken or
// lost, a leader gone): the UI only draws it.
type RoleChangedMsg struct{}

// DetailLoadedMsg is the result of Backend.Detail.
type DetailLoadedMsg struct {
	App    string
	Ref    status.ObjectRef
	Detail status.ObjectDetail
	Err    error
}

// SyncPlannedMsg is the result of Backend.PlanSync.
type SyncPlannedMsg struct {
	App  string
	Plan backend.SyncPlan
	Err  error
}

// SyncFinishedMsg is the result of Backend.Sync.
type SyncFinishedMsg struct {
	App string
	Err error
}

// FreezeCommittedMsg is the result of Backend.Freeze.
type FreezeCommittedMsg struct {
	Apps   []string
	Result backend.CommitResult
	Err    error
}

// UnfreezeCommittedMsg is the result of Backend.Unfreeze.
type UnfreezeCommittedMsg struct {
	Apps   []string
	Result backend.CommitResult
	Err    error
}

// IgnoreCommittedMsg is the result of Backend.Ignore.
type IgnoreCommittedMsg struct {
	App    string
	Path   string
	Result backend.CommitResult
	Err    error
}

// OwnerMapLoadedMsg is the result of Backend.Owners.
type OwnerMapLoadedMsg struct {
	Map diff.OwnerMap
	Err error
}

// HistoryLoadedMsg is the result of Backend.History.
type HistoryLoadedMsg struct {
	App     string
	Commits []status.Commit
	Err     error
}

// RevertPreviewMsg is the result of Backend.RevertPreview.
type RevertPreviewMsg struct {
	Hash string
	// Subject is the commit's subject line, for the dialog's title.
	Subject string
	Preview string
	Err     error
}

// RevertCommittedMsg is the result of Backend.Revert.
type RevertCommittedMsg struct {
	Hash   string
	Result backend.CommitResult
	Err    error
}

// eventMsg turns an engine event into its message.
func eventMsg(ev status.Event) any {
	switch e := ev.(type) {
	case status.AppStatusChanged:
		return AppStatusChangedMsg{e}
	case status.DriftDetected:
		return DriftDetectedMsg{e}
	case status.Healed:
		return HealedMsg{e}
	case status.Pruned:
		return PrunedMsg{e}
	case status.Fight:
		return FightMsg{e}
	case status.Override:
		return OverrideMsg{e}
	case status.ErrorEvent:
		return ErrorEventMsg{e}
	case status.FreezeExpiring:
		return FreezeExpiringMsg{e}
	case status.Reachability:
		return ReachabilityMsg{e}
	case backend.Switched:
		return BackendSwitchedMsg{Text: e.Text, Reload: e.Reload}
	case backend.RoleChanged:
		return RoleChangedMsg{}
	}
	return UnknownEventMsg{ev}
}
