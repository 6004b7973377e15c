package engine

import (
	"time"

	"kdrift.dev/kdrift/engine/status"
)

// Observer is told what the statuses and events do not carry: how long
// the steps of the work took and how the apiserver answered each request
// kdrift sent. The controller's metrics implement it; its methods must be
// quick and must not block, as the engine calls them from its passes.
type Observer interface {
	// Heartbeat is called every HeartbeatInterval by Run's loop while it
	// runs, after taking and releasing the engine's lock: a liveness
	// probe's proof that the loop is neither stopped nor deadlocked.
	Heartbeat(at time.Time)
	// Timed reports how long one step took: a phase of app's pass, or a
	// Git fetch (app empty). err is the step's failure, nil on success.
	Timed(phase Phase, app string, took time.Duration, err error)
	// Request reports one request kdrift sent to change (or dry-run a
	// change to) an object, and its outcome (nil on success); a request
	// retried after a conflict counts once, with its last outcome.
	Request(verb Verb, err error)
}

// CompareObserver is an Observer that is also told which tier decided
// each comparison that was not reused from an earlier pass. The engine
// asks an Observer for it; the controller's metrics implement it.
type CompareObserver interface {
	// Compared reports one object judged by tier.
	Compared(tier status.Decided)
}

// HeartbeatInterval is how often Run calls Observer.Heartbeat.
const HeartbeatInterval = 5 * time.Second

// Phase names a timed step of the engine's work.
type Phase string

// Phase values.
const (
	PhaseFetch Phase = "fetch"
	// PhaseGit reads the branch head and its commit (no network).
	PhaseGit Phase = "git"
	// PhaseDiscover finds the apps declared at a commit (App files, Argo
	// CD and Flux declarations, the apps those generate).
	PhaseDiscover Phase = "discover"
	// PhaseCluster reaches a cluster: connection, version check and,
	// the first time, API discovery.
	PhaseCluster Phase = "cluster"
	PhaseRender  Phase = "render"
	PhaseCompare Phase = "compare"
)

// Verb names a request kdrift sends to change an object.
type Verb string

// Verb values.
const (
	// VerbApply is a server-side apply (heal and sync, and the hand-over
	// of fields kdrift stops applying).
	VerbApply Verb = "apply"
	// VerbDryRunApply is a server-side apply with dryRun=All: one per
	// compared object that changed, and a sync --dry-run.
	VerbDryRunApply Verb = "dry-run-apply"
	// VerbDryRunCreate learns the apiserver's defaults for an object
	// first made by hand.
	VerbDryRunCreate Verb = "dry-run-create"
	// VerbPatch removes fields a person added.
	VerbPatch Verb = "patch"
	// VerbDelete is a prune.
	VerbDelete Verb = "delete"
)

// noObserver is the default Observer: it does nothing.
type noObserver struct{}

func (noObserver) Heartbeat(time.Time)                       {}
func (noObserver) Timed(Phase, string, time.Duration, error) {}
func (noObserver) Request(Verb, error)                       {}

// Declared returns the revision Git was last read at ("" before it was
// read) and the Apps the engine looks after there, sorted: what readiness
// waits for a first pass of.
func (e *core) Declared() (revision string, apps []string) {
	names := e.appNames()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.snap == nil {
		return "", names
	}
	return e.head.Hash, names
}
