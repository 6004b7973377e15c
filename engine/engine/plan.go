package engine

import "kdrift.dev/kdrift/engine/status"

// StepAction is what a sync does to one object.
type StepAction string

// StepAction values.
const (
	// StepCreate applies an object Git renders and the cluster lacks.
	StepCreate StepAction = "create"
	// StepApply puts Git's values back on drifted fields.
	StepApply StepAction = "apply"
	// StepPrune deletes a tracked object Git no longer renders.
	StepPrune StepAction = "prune"
	// StepReplace is an immutable-field change: the object would have to
	// be deleted and created again, which kdrift never does on its own.
	StepReplace StepAction = "replace"
	// StepHandOver gives fields kdrift stops applying (now ignored) to
	// their live owner; Git's values do not change.
	StepHandOver StepAction = "hand over"
)

// Step is one object a sync would touch.
type Step struct {
	Ref    status.ObjectRef `json:"ref"`
	Action StepAction       `json:"action"`
	// Fields are the JSON pointers an apply puts back; empty for the
	// other actions.
	Fields []string `json:"fields,omitempty"`
	// Err is why the apiserver refused the step in the dry run; nil when
	// it accepted it.
	Err error `json:"-"`
}

// Plan is what a sync of one app would do, object by object, in the order
// the sync would do it; objects that need replacing come last, since the
// sync leaves them alone.
type Plan struct {
	App   string `json:"app"`
	Steps []Step `json:"steps"`
	// PruneRefused, when set, says the prune steps would delete so much of
	// the app that a person must confirm them (a second question in the
	// UI, --confirm-prune on the command line).
	PruneRefused *PruneRefusedError `json:"pruneRefused,omitempty"`
	// LeftFrozen are the resources and fields the sync would leave as
	// they are live because a resource or field freeze holds them.
	LeftFrozen []FrozenPart `json:"leftFrozen,omitempty"`
}

// PlanOf reads the plan out of a dry-run sync's result: the applies and
// prunes it would make, named by what each does to the object (the
// comparison tells a create from an apply from a hand-over), and the
// objects that need replacing.
func PlanOf(res SyncResult) Plan {
	byRef := make(map[status.ObjectRef]status.ResourceStatus, len(res.Plan))
	for _, r := range res.Plan {
		byRef[r.Ref] = r
	}
	p := Plan{App: res.App, LeftFrozen: res.LeftFrozen}
	held := map[status.ObjectRef][]string{}
	for _, f := range res.LeftFrozen {
		held[f.Ref] = append(held[f.Ref], f.Fields...)
	}
	for _, o := range res.Objects {
		st := Step{Ref: o.Ref, Err: o.Cause}
		switch r := byRef[o.Ref]; {
		case o.Action == ActionPrune:
			st.Action = StepPrune
		case r.Status == status.ResourceMissing:
			st.Action = StepCreate
		case r.Status == status.ResourceSynced || r.Status == status.ResourceIgnored:
			st.Action = StepHandOver
		default:
			st.Action = StepApply
			for _, f := range r.Fields {
				if f.IsDrift() && !underAny(f.Path, held[o.Ref]) {
					st.Fields = append(st.Fields, f.Path)
				}
			}
		}
		p.Steps = append(p.Steps, st)
	}
	if res.PruneRefused != nil {
		p.PruneRefused = res.PruneRefused
		for _, ref := range res.PruneRefused.Refs {
			p.Steps = append(p.Steps, Step{Ref: ref, Action: StepPrune})
		}
	}
	for _, r := range res.Plan {
		if r.Status == status.ResourceRequiresReplace {
			p.Steps = append(p.Steps, Step{Ref: r.Ref, Action: StepReplace})
		}
	}
	return p
}
