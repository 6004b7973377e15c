package status

import "time"

// Difference says what kind of difference between Git and the cluster a
// field or an app is. The owner class of a field says who wrote it; it
// never decides whether the field is out of sync: a field whose live
// value differs from the desired revision is, whoever owns it.
type Difference string

// Difference values.
const (
	// DifferenceDrift is a change by a person or a controller (or one
	// nobody can attribute): what self-heal puts back.
	DifferenceDrift Difference = "drift"
	// DifferenceWaiting is a field the app's owning GitOps engine (Argo
	// CD, Flux) wrote at an older revision than the desired one: it
	// differs until the owner applies the desired revision.
	DifferenceWaiting Difference = "waiting"
	// DifferenceRender is a field the owning engine wrote at the desired
	// revision itself, and that still differs from kdrift's render of
	// that revision: the two renders disagree.
	DifferenceRender Difference = "render"
)

// differenceRank orders kinds by what a person must act on first: drift,
// then a render disagreement, then an owner that has not applied yet.
var differenceRank = map[Difference]int{DifferenceDrift: 0, DifferenceRender: 1, DifferenceWaiting: 2}

// Worse is the kind that matters more of d and o; "" counts for nothing.
func (d Difference) Worse(o Difference) Difference {
	if d == "" {
		return o
	}
	if o == "" {
		return d
	}
	if differenceRank[o] < differenceRank[d] {
		return o
	}
	return d
}

// OwnerRevision is what the GitOps engine that owns an app last applied,
// from its live declaration, against the revision kdrift compares.
type OwnerRevision struct {
	// Engine is the owner's GitOps engine ("Argo CD", "Flux").
	Engine string `json:"engine"`
	// Applied is the revision as the owner records it: a commit, or
	// Flux's "main@sha1:…".
	Applied string `json:"applied"`
	// AppliedAt is when the owner finished applying it, when its
	// declaration says (Argo CD's status.operationState.finishedAt).
	AppliedAt *time.Time `json:"appliedAt,omitempty"`
	// Desired is the commit kdrift compares, and DesiredRef the ref it was
	// read from ("origin/main").
	Desired    string `json:"desired"`
	DesiredRef string `json:"desiredRef,omitempty"`
	// Behind says Applied is not Desired: the owner has not applied the
	// desired revision yet (or Git moved on since).
	Behind bool `json:"behind"`
}

// SyncLabel is the app's sync as views show it: "OutOfSync (waiting for
// Argo CD)" or "OutOfSync (render disagreement with Flux)" when nothing
// but the owner's revision or render explains the difference; Sync
// itself otherwise.
func (a AppStatus) SyncLabel() string {
	if a.Sync != SyncOutOfSync || a.OwnerEngine == "" {
		return string(a.Sync)
	}
	switch a.Difference {
	case DifferenceWaiting:
		return string(a.Sync) + " (waiting for " + a.OwnerEngine + ")"
	case DifferenceRender:
		return string(a.Sync) + " (render disagreement with " + a.OwnerEngine + ")"
	}
	return string(a.Sync)
}

// AppDifference is the kind of difference that explains an OutOfSync
// app: the worst among its drifted fields and differing objects (see
// Difference.Worse); "" for an app that does not differ.
func AppDifference(rs []ResourceStatus) Difference {
	var out Difference
	for _, r := range rs {
		if r.Status.Neutral() || r.Status == ResourceError {
			continue
		}
		if r.Status != ResourceOutOfSync {
			out = out.Worse(r.Difference.OrDrift())
			continue
		}
		for _, f := range r.Fields {
			if f.IsDrift() {
				out = out.Worse(f.Difference.OrDrift())
			}
		}
	}
	return out
}

// OrDrift is d, or DifferenceDrift when d is unset.
func (d Difference) OrDrift() Difference {
	if d == "" {
		return DifferenceDrift
	}
	return d
}
