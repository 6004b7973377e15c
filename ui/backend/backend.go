package backend

import (
	"context"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
)

// Backend is everything the UI asks of the engine and the Git actions.
// Every method may be called from a goroutine other than the one that
// called the previous one; methods that touch the network take a context.
type Backend interface {
	// Events is the engine's event stream. The UI reads it one event at a
	// time; a closed channel means the engine stopped.
	Events() <-chan status.Event
	// Apps is a snapshot of every app's latest status.
	Apps() []status.AppStatus
	// Refresh asks the engine to re-read Git and re-compare every app now;
	// results arrive as events.
	Refresh()
	// Detail is one object of an app, Git side and live side, line by line
	// with each live line's owners.
	Detail(ctx context.Context, app string, ref status.ObjectRef) (status.ObjectDetail, error)
	// PlanSync says what Sync would do to the app, without doing it.
	PlanSync(ctx context.Context, app string) (SyncPlan, error)
	// Sync applies Git to the app's objects now, with what the person
	// confirmed: the freeze it syncs over, a large prune.
	Sync(ctx context.Context, app string, req SyncRequest) error
	// Freeze commits spec.freeze on every app with the reason; d == 0
	// means no end time.
	Freeze(ctx context.Context, apps []string, reason string, d time.Duration) (CommitResult, error)
	// Unfreeze commits the removal of spec.freeze from every app; seen is,
	// by app, the freeze the UI displayed: a head with another one is
	// refused (*app.FreezeChangedError).
	Unfreeze(ctx context.Context, apps []string, reason string, seen map[string]*app.Freeze) (CommitResult, error)
	// FreezeResource commits a resource freeze (fields empty) or a field
	// freeze of each ref on the app; d == 0 means no end time.
	FreezeResource(ctx context.Context, app string, refs []app.ResourceRef, fields []string, reason string, d time.Duration) (CommitResult, error)
	// UnfreezeResource commits lifting ref's freezes (fields empty) or
	// only those fields; seen is the freeze the UI displayed.
	UnfreezeResource(ctx context.Context, app string, ref app.ResourceRef, fields []string, reason string, seen *app.Freeze) (CommitResult, error)
	// Ignore commits an ignoreDifferences rule on the app.
	Ignore(ctx context.Context, app string, rule app.IgnoreRule, reason string) (CommitResult, error)
	// Owners is the field ownership map of every app, from what the
	// engine holds.
	Owners(ctx context.Context, opts diff.OwnerMapOptions) (diff.OwnerMap, error)
	// History lists the commits that touched the app's path, the bases
	// its render reads or its App file, newest first.
	History(ctx context.Context, app string) ([]status.Commit, error)
	// RevertPreview describes what reverting the commit would change (a
	// diff or a summary, plain text, one change per line) and, under it,
	// what the cluster would change.
	RevertPreview(ctx context.Context, hash string) (string, error)
	// Revert commits the undoing of the commit, on top of the branch.
	Revert(ctx context.Context, hash, reason string) (CommitResult, error)
}

// NoApper is a Backend that says why it found no app (engine.NoApps);
// nil when it found one or cannot say.
type NoApper interface {
	NoApps() *engine.NoApps
}

// SyncPlan is what a sync of one app would do: the engine's typed plan.
type SyncPlan = engine.Plan

// SyncRequest is what the person confirmed for a sync.
type SyncRequest struct {
	// Freeze is the freeze the person saw and confirmed syncing over;
	// nil when the UI showed the app unfrozen (a freeze committed since
	// then refuses the sync).
	Freeze *app.Freeze
	// ConfirmPrune: the person confirmed a prune of a large share of the
	// app (SyncPlan.PruneRefused).
	ConfirmPrune bool
	// OverwriteFrozen: the person confirmed putting Git back over the
	// resources and fields a resource or field freeze holds
	// (SyncPlan.LeftFrozen); without it they are left as they are live.
	OverwriteFrozen bool
	// Owned: the person confirmed syncing an app another GitOps engine
	// owns (status.AppStatus.Owner).
	Owned bool
}

// PlanStep is one object a sync would touch, and what it would do to it.
type PlanStep = engine.Step

// CommitResult is the commit an action made.
type CommitResult struct {
	Hash    string
	Subject string
	// Pushed is false when the commit is only local because the remote
	// could not be reached; Warning then says what will happen to it.
	Pushed  bool
	Warning string
	// Refused holds the remote's own lines when it refused the push on
	// purpose and no incident channel took the action: it is in force
	// nowhere, and the UI says so in a dialog.
	Refused []string
	// Channel is the incident channel the freeze went to when the branch
	// refused it.
	Channel string
	// NotTaken says why the channel's readers do not take the record
	// pushed there: it is in force nowhere.
	NotTaken string
	// Note says whether the repository's leader was told to fetch the
	// commit now ("leader told …"); empty when there is no leader to tell.
	Note string
	// Owners say, for a freeze record on the channel, which live
	// declarations of apps another GitOps tool owns now carry it.
	Owners []string
	// OwnerProblems are the live declarations that could not be written
	// (with the command that does it by hand): their tool still heals.
	OwnerProblems []string
}
