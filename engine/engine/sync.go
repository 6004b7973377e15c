package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// Actions an ObjectResult reports.
const (
	// ActionApply is a forced server-side apply (with hand-over and extra
	// field removal as needed).
	ActionApply = "apply"
	// ActionPrune is a foreground deletion of a tracked object.
	ActionPrune = "prune"
)

// SyncOptions say what an explicit sync may do.
type SyncOptions struct {
	// Prune also deletes tracked objects that left Git.
	Prune bool
	// DryRun asks the apiserver (dry-run) and changes nothing: the result
	// is the plan.
	DryRun bool
	// AllowFrozen syncs a frozen app; the person confirmed.
	AllowFrozen bool
	// OverwriteFrozen also applies the resources and fields a resource
	// or field freeze (spec.freezes) holds; the person confirmed (the
	// CLI's --force, the UI's second question). Without it a sync
	// applies everything else and lists what it left frozen in
	// SyncResult.LeftFrozen.
	OverwriteFrozen bool
	// SeenFreeze is the freeze the person confirmed syncing over (the UI
	// passes what it displayed); with AllowFrozen, a head frozen by
	// another freeze refuses the sync with an *app.FreezeChangedError (a
	// head no longer frozen syncs). Nil means any freeze (the CLI's
	// --force).
	SeenFreeze *app.Freeze
	// ConfirmPrune lets Prune delete more than apply.MaxPruneShare of the
	// app's objects, or all of them; the person confirmed.
	ConfirmPrune bool
	// AllowOwned syncs an app another GitOps engine owns (an Argo CD
	// Application, a Flux Kustomization); the person was told the owner
	// and confirmed. Without it such a sync is an *OwnedError.
	AllowOwned bool
	// AllowOlder applies a revision that does not contain the one kdrift
	// last applied to the app (the upstream was force-pushed or reset, a
	// mirror is stale); the person gave OlderReason, recorded with the
	// app's new mark (status.Mark) with OlderBy. Without it such a sync
	// is an *OlderError.
	AllowOlder  bool
	OlderReason string
	OlderBy     string
}

// OwnedError is a sync refused because another GitOps engine owns the
// app: kdrift applying it would make two healers. The person confirms
// with the owner named (SyncOptions.AllowOwned).
type OwnedError struct {
	App string
	// Owner is the declaration: "Argo CD Application argocd/guestbook".
	Owner string
	// Where is the declaration's file, or the app that generates it.
	Where string
}

// Error names the app and its owner and says how to go ahead.
func (e *OwnedError) Error() string {
	return fmt.Sprintf("app %s is owned by %s (%s), which heals it: kdrift compares it but does not apply it on its own; to apply Git now anyway, confirm with `kdrift sync %s --owned` (the owner may put back its own revision); to stop the owner healing, `kdrift freeze %s` writes into its declaration; nothing was applied", e.App, e.Owner, e.Where, e.App, e.App)
}

// ObjectResult is what a sync did, or would do, to one object.
type ObjectResult struct {
	Ref status.ObjectRef `json:"ref"`
	// Action is "apply" or "prune".
	Action string `json:"action"`
	// Fields are the drifted fields the apply puts back.
	Fields []string `json:"fields,omitempty"`
	// Error is the failure, object first; empty on success.
	Error string `json:"error,omitempty"`
	// Cause is the failure with its type (an *apply.ObjectError and what
	// it wraps); Error is its message. Nil on success and after JSON.
	Cause error `json:"-"`
}

// failed is the result of an operation on one object that returned err.
func failed(ref status.ObjectRef, action string, fields []string, err error) ObjectResult {
	return ObjectResult{Ref: ref, Action: action, Fields: fields, Error: err.Error(), Cause: err}
}

// SyncResult is the outcome of a sync: the comparison it started from (the
// plan), what it did per object, and the app's status after it.
type SyncResult struct {
	App string `json:"app"`
	// Plan is the comparison before anything changed.
	Plan []status.ResourceStatus `json:"plan"`
	// Objects lists each apply and prune, in the order they ran.
	Objects []ObjectResult `json:"objects"`
	// Status is the app's status after the sync.
	Status status.AppStatus `json:"status"`
	// LeftFrozen lists what the heal left as it is live because a
	// resource or field freeze holds it (a sync without AllowFrozen).
	LeftFrozen []FrozenPart `json:"leftFrozen,omitempty"`
	// PruneRefused is set when the prune needs a person's confirmation
	// (SyncOptions.ConfirmPrune) and did not get it; nothing was pruned.
	PruneRefused *PruneRefusedError `json:"pruneRefused,omitempty"`
	// Err is an app-level failure (invalid App, render error, cluster
	// unreachable); empty otherwise.
	Err string `json:"error,omitempty"`
	// Cause is Err with its type (a *render.Error, an *app.Error, a
	// *live.ClusterError, …); nil when Err is empty and after JSON.
	Cause error `json:"-"`
}

// Failed counts the objects whose operation failed.
func (r SyncResult) Failed() int {
	n := 0
	for _, o := range r.Objects {
		if o.Error != "" {
			n++
		}
	}
	return n
}

// ErrFrozen is returned by Sync for a frozen app without AllowFrozen.
var ErrFrozen = errors.New("app is frozen")

// ObjectsFailedError is Sync's error when some objects failed: each
// failed object's result, whose Cause keeps its type.
type ObjectsFailedError struct {
	App    string
	Failed []ObjectResult
}

// Error says how many failed; each object's own error says why.
func (e *ObjectsFailedError) Error() string {
	return fmt.Sprintf("app %s: %d object(s) failed; see each object's error", e.App, len(e.Failed))
}

// Unwrap is every failed object's error.
func (e *ObjectsFailedError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed))
	for _, o := range e.Failed {
		if o.Cause != nil {
			out = append(out, o.Cause)
		} else {
			out = append(out, errors.New(o.Error))
		}
	}
	return out
}

// ErrReadOnly is returned by Sync (other than a dry run) on an engine
// opened with Options.ReadOnly.
var ErrReadOnly = errors.New("kdrift is read-only (--readonly or readonly: true in the config): nothing is applied")

// record adds one object's outcome to the pass's result.
func (p *pass) record(r ObjectResult) {
	p.result.Objects = append(p.result.Objects, r)
}

// Sync applies Git to one app now, whatever its selfHeal says: Namespaces
// and CRDs first, ignored fields left out, person-owned extras removed,
// and, with Prune, tracked objects that left Git deleted. A frozen app is
// refused (ErrFrozen) unless AllowFrozen. With DryRun nothing changes and
// the result is the plan.
func (e *core) Sync(ctx context.Context, name string, opts SyncOptions) (SyncResult, error) {
	if e.opts.ReadOnly && !opts.DryRun {
		return SyncResult{App: name}, fmt.Errorf("app %s: %w", name, ErrReadOnly)
	}
	e.freshReads()
	if err := e.loadHead(ctx, true); err != nil {
		return SyncResult{App: name}, err
	}
	e.mu.Lock()
	name = e.apps.Canonical(name)
	e.mu.Unlock()
	if !e.known(name) {
		return SyncResult{App: name}, e.unknownApp(name)
	}
	if err := e.selected(name); err != nil {
		return SyncResult{App: name}, err
	}
	e.mu.Lock()
	a, _, _, valid := e.findApp(name, e.opts.Now())
	e.mu.Unlock()
	if valid && opts.AllowFrozen && opts.SeenFreeze != nil && !opts.DryRun && a.Spec.Freeze.ActiveAt(e.opts.Now()) && !opts.SeenFreeze.Same(a.Spec.Freeze) {
		return SyncResult{App: name}, &app.FreezeChangedError{App: name, Seen: opts.SeenFreeze, Now: a.Spec.Freeze}
	}
	if valid && a.Spec.Freeze.ActiveAt(e.opts.Now()) && !opts.AllowFrozen && !opts.DryRun {
		f := a.Spec.Freeze
		return SyncResult{App: name}, fmt.Errorf("app %s: %w by %s since %s: %s; sync anyway only if the incident allows it", name, ErrFrozen, f.By, f.At.Format("2006-01-02 15:04 MST"), f.Reason)
	}
	if valid && a.Origin != nil && !opts.AllowOwned && !opts.DryRun {
		return SyncResult{App: name}, &OwnedError{App: name, Owner: a.Origin.Owner(), Where: a.Origin.Where()}
	}
	if opts.AllowOlder && strings.TrimSpace(opts.OlderReason) == "" && !opts.DryRun {
		return SyncResult{App: name}, fmt.Errorf("app %s: applying an older revision needs a reason (--reason \"…\"), recorded with the app's applied revision", name)
	}
	res := e.reconcileApp(ctx, name, passOptions{heal: true, force: true, prune: opts.Prune, confirmPrune: opts.ConfirmPrune, allowFrozen: opts.AllowFrozen || opts.DryRun, overwriteFrozen: opts.OverwriteFrozen, dryRun: opts.DryRun, allowOwned: opts.AllowOwned || opts.DryRun,
		allowOlder: opts.AllowOlder, olderReason: strings.TrimSpace(opts.OlderReason), olderBy: opts.OlderBy})
	if res.Err != "" {
		if res.Cause != nil {
			return res, fmt.Errorf("app %s: %w", name, res.Cause)
		}
		return res, fmt.Errorf("app %s: %s", name, res.Err)
	}
	if res.PruneRefused != nil && !opts.DryRun {
		return res, res.PruneRefused
	}
	var replace []string
	for _, r := range res.Status.Resources {
		if r.Status == status.ResourceRequiresReplace {
			replace = append(replace, r.Ref.String())
		}
	}
	if len(replace) > 0 {
		return res, fmt.Errorf("app %s: %v changed an immutable field and need to be replaced (deleted and re-created); kdrift never does that on its own: do it by hand or revert the change in Git", name, replace)
	}
	if res.Failed() > 0 {
		fe := &ObjectsFailedError{App: name}
		for _, o := range res.Objects {
			if o.Error != "" {
				fe.Failed = append(fe.Failed, o)
			}
		}
		return res, fe
	}
	return res, nil
}
