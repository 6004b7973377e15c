package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/fight"
	"kdrift.dev/kdrift/engine/status"
)

// mayHeal says whether this pass may apply: a sync always (unless the
// app is frozen and the person did not confirm), self-heal only when the
// App asks for it and is not frozen.
func (p *pass) mayHeal() bool {
	if !p.opts.heal || !p.mayWrite() {
		return false
	}
	if p.app.Spec.Freeze.ActiveAt(p.now) && !p.opts.allowFrozen {
		return false
	}
	if p.app.Origin != nil {
		// Another GitOps engine heals it: two healers would fight. Only
		// a person's sync that named the owner applies.
		return p.opts.force && p.opts.allowOwned
	}
	return p.opts.force || p.app.Spec.SyncPolicy.SelfHeal
}

// mayWrite asks Options.MayWrite, right before a write, whether a pass
// the engine started itself may still write; a person's sync and a dry
// run are not gated.
func (p *pass) mayWrite() bool {
	if p.opts.force || p.opts.dryRun || p.e.opts.MayWrite == nil {
		return true
	}
	return p.e.opts.MayWrite(p.name)
}

// healItem is one object the heal phase applies.
type healItem struct {
	desired *unstructured.Unstructured
	live    *unstructured.Unstructured
	res     status.ResourceStatus
	// fields are the drifted fields kdrift puts back (not fighting).
	fields []string
	// fighting are fields kdrift stopped healing; they are left out.
	fighting []string
	// frozen are the pointers a field freeze holds; left out like
	// fighting fields (handed over first when kdrift alone owned them).
	frozen []string
	// delegated are the fields a scaler or delivery controller keeps;
	// left out the same way, whatever else of the object is healed.
	delegated []string
}

// phaseHeal applies what drifted: Namespaces and CRDs first, then the
// rest; ignored and fighting fields are left out (handed over first when
// kdrift alone owned them) and person-owned extra fields are patched away.
// An immutable change is reported, never forced. It reports whether it
// changed anything.
func (p *pass) phaseHeal(ctx context.Context) bool {
	if !p.mayHeal() {
		return false
	}
	items := p.healItems()
	if len(items) == 0 {
		return false
	}
	if p.backWhy != "" {
		if p.status.Error != "" {
			p.status.Error += "; " + p.backWhy
		} else {
			p.status.Error = p.backWhy
		}
		return false
	}
	var objs []*unstructured.Unstructured
	byObj := map[*unstructured.Unstructured]healItem{}
	for _, it := range items {
		objs = append(objs, it.desired)
		byObj[it.desired] = it
	}
	changed := false
	// An object that is not a Namespace or CRD first waits until the CRDs
	// applied before it (since the last wait) are established: sync waves
	// may put a CRD after other objects.
	var crds []*unstructured.Unstructured
	for _, o := range objs {
		if apply.PhaseOf(o) == apply.PhaseFoundation {
			crds = append(crds, o)
		}
	}
	waitFrom := 0
	ns := p.app.Spec.Destination.Namespace
	if ns == "" {
		ns = "default"
	}
	ordered := apply.Order(objs)
	for i, o := range ordered {
		if ctx.Err() != nil {
			break
		}
		it := byObj[o]
		if !p.mayWrite() {
			// The Lease was lost: not one more write.
			break
		}
		if apply.PhaseOf(o) == apply.PhaseRest && i > waitFrom && len(crds) > 0 {
			if err := p.cl.applier.WaitEstablished(ctx, ordered[waitFrom:i]); err != nil {
				p.record(failed(it.res.Ref, ActionApply, nil, err))
			}
			waitFrom = i
		}
		if p.lacksNamespace(ctx, o) {
			// Its kind may be served only now that its CRD is established.
			it.desired = p.namespaced(o, ns)
		}
		if err := p.healObject(ctx, it); err != nil {
			msg := p.scrubObjects(err.Error(), it.desired, it.live)
			r := failed(it.res.Ref, ActionApply, it.fields, err)
			r.Error = msg
			p.record(r)
			p.e.bus.publish(status.ErrorEvent{Base: status.Base{App: p.name, Time: p.e.opts.Now()}, Ref: &it.res.Ref, Message: msg})
			continue
		}
		changed = !p.opts.dryRun
		p.record(ObjectResult{Ref: it.res.Ref, Action: ActionApply, Fields: it.fields})
		if p.opts.dryRun {
			continue
		}
		p.e.applies.Add(1)
		p.appliedSome = true
		for _, f := range it.fields {
			p.e.fights.Healed(fight.Key{App: p.name, Ref: it.res.Ref, Field: f}, rvOf(it.live))
		}
		p.e.bus.publish(status.Healed{Base: status.Base{App: p.name, Time: p.e.opts.Now()}, Ref: it.res.Ref, Fields: it.fields})
	}
	return changed
}

// healItems picks the objects to apply.
func (p *pass) healItems() []healItem {
	var out []healItem
	for _, r := range p.results {
		key := refKey(r.Ref)
		d := p.st.desired[key]
		if d == nil || r.Status == status.ResourceRequiresReplace || p.unreadable[key] {
			continue
		}
		if apply.TrackedElsewhere(p.live[key], p.e.repoID) {
			// Another repository's: never applied over; a sync says so.
			if p.opts.force {
				p.record(ObjectResult{Ref: r.Ref, Action: ActionApply, Error: r.Message})
			}
			continue
		}
		lv := p.live[key]
		if r.Frozen != nil && !p.opts.overwriteFrozen {
			p.leftFrozen(r)
			continue
		}
		it := healItem{desired: d, live: lv, res: r, delegated: diff.DelegatedPointers(r)}
		if lv != nil && !p.opts.overwriteFrozen {
			// A missing object is created whole: leaving a frozen field
			// out would let the apiserver default it.
			it.frozen = p.frozenPointers(r.Ref)
			p.leftFrozen(r)
		}
		for _, f := range r.Fields {
			if f.Ignored || f.Delegated != nil || (f.Frozen != nil && len(it.frozen) > 0) {
				continue
			}
			if _, ok := p.e.fights.Fighting(fight.Key{App: p.name, Ref: r.Ref, Field: f.Path}); ok {
				it.fighting = append(it.fighting, f.Path)
				continue
			}
			it.fields = append(it.fields, f.Path)
		}
		switch r.Status {
		case status.ResourceMissing, status.ResourceError:
			out = append(out, it)
		case status.ResourceOutOfSync:
			if len(it.fields) > 0 {
				out = append(out, it)
			}
		case status.ResourceSynced, status.ResourceIgnored:
			if lv != nil {
				if need, err := apply.NeedsRelease(lv, diff.ExpandJQ(p.app.Spec.IgnoreDifferences, d, lv)); err == nil && need {
					out = append(out, it)
				}
			}
		}
	}
	return out
}

// healObject hands over what kdrift stops applying, applies the object
// without ignored and fighting fields, and removes person-owned extras.
func (p *pass) healObject(ctx context.Context, it healItem) error {
	if it.live != nil {
		it.live = it.live.DeepCopy() // the pass's live objects may be an informer cache's
	}
	rules := diff.ExpandJQ(p.app.Spec.IgnoreDifferences, it.desired, it.live)
	if len(it.fighting) > 0 {
		rules = append(append([]app.IgnoreRule(nil), rules...), app.IgnoreRule{
			Group: it.res.Ref.Group, Kind: it.res.Ref.Kind, Namespace: it.res.Ref.Namespace, Name: it.res.Ref.Name, JSONPointers: it.fighting,
		})
	}
	if len(it.delegated) > 0 && it.live != nil {
		// Applying a delegated field would take it back from its
		// controller (Git's replicas over the HPA's).
		rules = append(append([]app.IgnoreRule(nil), rules...), app.IgnoreRule{
			Group: it.res.Ref.Group, Kind: it.res.Ref.Kind, Namespace: it.res.Ref.Namespace, Name: it.res.Ref.Name, JSONPointers: it.delegated,
		})
	}
	if len(it.frozen) > 0 {
		// The applied object must not carry a frozen field: kdrift would
		// take it back from whoever wrote it live.
		rules = append(append([]app.IgnoreRule(nil), rules...), app.IgnoreRule{
			Group: it.res.Ref.Group, Kind: it.res.Ref.Kind, Namespace: it.res.Ref.Namespace, Name: it.res.Ref.Name, JSONPointers: it.frozen,
		})
	}
	if it.live != nil && !p.opts.dryRun {
		fields, err := apply.HandoverFields(it.live, rules)
		if err != nil {
			return fmt.Errorf("%s hand-over failed: %w", it.res.Ref, err)
		}
		err = p.cl.applier.Handover(ctx, it.live, fields)
		if len(fields) > 0 {
			p.e.opts.Observer.Request(VerbApply, err)
		}
		if err != nil {
			return err
		}
	}
	body, err := apply.Omit(it.desired, it.live, rules)
	if err != nil {
		return err
	}
	out, err := p.cl.applier.Apply(ctx, body, p.opts.dryRun)
	p.e.opts.Observer.Request(applyVerb(p.opts.dryRun), err)
	if err != nil {
		return err
	}
	var extras []apply.Extra
	for _, x := range apply.ExtrasOf(it.res, it.live) {
		if !slices.Contains(it.fighting, x.Path) && !underAny(x.Path, it.frozen) {
			extras = append(extras, x)
		}
	}
	if len(extras) > 0 && out != nil {
		err := p.cl.applier.RemoveExtras(ctx, out, extras, p.opts.dryRun)
		if !p.opts.dryRun {
			p.e.opts.Observer.Request(VerbPatch, err)
		}
		return err
	}
	return nil
}

// applyVerb is the Verb of an apply, real or dry-run.
func applyVerb(dryRun bool) Verb {
	if dryRun {
		return VerbDryRunApply
	}
	return VerbApply
}

// underAny reports whether the pointer ptr is one of ptrs or inside one.
func underAny(ptr string, ptrs []string) bool {
	for _, p := range ptrs {
		if ptr == p || strings.HasPrefix(ptr, p+"/") {
			return true
		}
	}
	return false
}

// rvOf is an object's resourceVersion; "" for nil.
func rvOf(o *unstructured.Unstructured) string {
	if o == nil {
		return ""
	}
	return o.GetResourceVersion()
}
