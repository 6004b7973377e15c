package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/fight"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/engine/status"
)

// phaseCompare compares every desired object with the cluster and finds
// tracked objects that left Git. An object kdrift's own last apply left as
// Git wants it is judged locally (compareLocally); any other pays a
// server-side dry-run. A comparison is reused while the desired object and
// the live resourceVersion are unchanged, so a pass with nothing changed
// sends no dry-run. New drift is published as
// DriftDetected; a field another manager rewrote after kdrift healed it is
// counted towards a fight.
func (p *pass) phaseCompare(ctx context.Context) bool {
	p.unreadable = nil
	start := time.Now()
	defer func() { p.e.opts.Observer.Timed(PhaseCompare, p.name, time.Since(start), nil) }()
	results := make([]status.ResourceStatus, 0, len(p.desired))
	seen := map[string]bool{}
	kinds := map[schema.GroupVersionKind]bool{}
	for gvk := range p.st.kinds {
		kinds[gvk] = true
	}
	// Objects are compared in parallel: each is a dry-run round trip.
	type one struct {
		res  status.ResourceStatus
		lv   *unstructured.Unstructured
		hash string
	}
	out := make([]one, len(p.desired))
	p.prefetch(ctx)
	var g errgroup.Group
	g.SetLimit(compareParallelism)
	for i, d := range p.desired {
		g.Go(func() error {
			// A panic here would end the process, whatever the pass
			// recovers: it is this object's error instead.
			defer func() {
				if v := recover(); v != nil {
					out[i] = one{res: status.ResourceStatus{Ref: live.RefOf(d), Status: status.ResourceError,
						Message: fmt.Sprintf("comparison panicked: %v; the other objects and apps are not affected (please report this)", v)}}
				}
			}()
			hash := desiredHash(d, compareRules(p.app))
			res, lv := p.compareOne(ctx, d, live.RefOf(d), hash)
			out[i] = one{res, lv, hash}
			return nil
		})
	}
	_ = g.Wait() // compareOne reports failures in its result
	// Fights and override bursts end when what the app renders (or its
	// ignore rules) changed: the person may have answered them. A commit
	// that changes nothing this app renders leaves them be.
	inputs := sha256.New()
	for _, o := range out {
		inputs.Write([]byte(o.hash))
	}
	if key := hex.EncodeToString(inputs.Sum(nil)); p.st.rulesKey != key {
		if p.st.rulesKey != "" {
			p.e.fights.ResetApp(p.name)
		}
		p.st.rulesKey = key
	}
	tool := app.ToolOf(p.app.Origin)
	for i, d := range p.desired {
		key := refKey(live.RefOf(d))
		seen[key] = true
		kinds[d.GroupVersionKind()] = true
		p.live[key] = out[i].lv
		p.st.desired[key] = d
		if lv := out[i].lv; apply.TrackedElsewhere(lv, p.e.repoID) {
			// Never applied over: the heal phase leaves it alone.
			out[i].res.Status, out[i].res.Message = status.ResourceError, fmt.Sprintf("%s is tracked by repository %s (app %s); kdrift does not take over another repository's objects: render it from one repository only, or hand it over by removing its annotation %s", live.RefOf(d), apply.RepoOf(lv), lv.GetAnnotations()[apply.AnnotationApp], apply.AnnotationRepo)
		}
		if why := tool.Leaves(d); why != "" && out[i].res.Message == "" {
			out[i].res.Message = why
		}
		results = append(results, out[i].res)
	}
	if p.app.Spec.Delegates() {
		// Fields a scaler or delivery controller of the app keeps are
		// theirs: never drift, never healed, never a fight.
		objs := make([]*unstructured.Unstructured, 0, len(p.desired))
		for _, d := range p.desired {
			if lv := p.live[refKey(live.RefOf(d))]; lv != nil {
				objs = append(objs, lv)
			} else {
				objs = append(objs, d)
			}
		}
		if dl := diff.FindDelegations(objs); dl != nil {
			for i := range results {
				diff.Delegate(&results[i], dl)
			}
		}
	}
	// Tracked objects of this app that Git no longer renders.
	var desiredRefs []status.ObjectRef
	for _, d := range p.desired {
		desiredRefs = append(desiredRefs, live.RefOf(d))
	}
	if p.mayPrune() {
		// A kind that left Git entirely (its last object removed) while no
		// kdrift ran is known only from the cluster.
		have := map[schema.GroupKind]bool{}
		for gvk := range kinds {
			have[gvk.GroupKind()] = true
		}
		for _, gvk := range p.cl.trackedKinds(ctx, p.name) {
			if !have[gvk.GroupKind()] {
				kinds[gvk] = true
			}
		}
	}
	p.extra = nil
	p.pruneHold = ""
	var others map[string]string // rendered by other Apps, read once if needed
	for gvk := range kinds {
		tracked, err := p.cl.listTracked(ctx, gvk, p.name)
		if err != nil {
			// A kind no longer served (its CRD was removed) has no
			// objects to prune; anything else is worth saying.
			if ctx.Err() == nil && !isNoMatch(err) {
				results = append(results, status.ResourceStatus{Ref: status.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}, Status: status.ResourceError, Health: status.HealthUnknown, Message: fmt.Sprintf("list tracked objects: %v", err)})
			}
			continue
		}
		for _, o := range apply.Extraneous(p.name, p.e.repoID, tracked, desiredRefs) {
			ref := live.RefOf(o)
			if seen[refKey(ref)] {
				continue
			}
			if others == nil {
				var err error
				if others, err = p.renderedByOthers(ctx); err != nil {
					p.pruneHold = err.Error()
				}
			}
			if others[refKey(ref)] != "" {
				// Moved to another App of the repository at this
				// revision: that App adopts it on its next apply.
				continue
			}
			o = o.DeepCopy() // listTracked's objects are shared, read-only
			p.live[refKey(ref)] = o
			if parent, ok := p.parentOf(o); ok {
				// Made by another controller from an object of the app
				// (a SealedSecret's Secret): not drift, never pruned.
				seen[refKey(ref)] = true
				r := p.judged(ref, status.ResourceGenerated, o)
				r.Parent = &parent
				results = append(results, r)
				continue
			}
			p.extra = append(p.extra, o)
			msg := p.held[refKey(ref)]
			if msg == "" && apply.RepoOf(o) == "" {
				msg = p.legacyHold()
			}
			if msg == "" && !p.prunable(o) {
				msg = "not pruned: an Encrypted object of the app has this kind and namespace, and its generated name may be this one"
			}
			r := p.judged(ref, status.ResourceExtraneous, o)
			r.Message = msg
			results = append(results, r)
		}
	}
	results = append(results, p.generatedSecrets(ctx, seen)...)
	results = append(results, p.generatedByDelivery(ctx, seen)...)
	p.st.kinds = kinds
	for k := range p.st.desired {
		if !seen[k] {
			delete(p.st.desired, k)
			delete(p.st.cache, k)
		}
	}
	sortResults(results)
	diff.MaskSensitive(results, p.sensitive)
	for i := range results {
		if sensitiveRef(p.sensitiveObjs, results[i].Ref) {
			diff.MaskAll(&results[i])
			// An apiserver message may quote a value of the object.
			if d := p.st.desired[refKey(results[i].Ref)]; d != nil {
				results[i].Message = sops.Scrub(results[i].Message, objectValues(d))
			}
		}
	}
	p.st.sensitive, p.st.sensitiveObjs = p.sensitive, p.sensitiveObjs
	p.markFrozen(results)
	p.classify(results)
	p.publishDrift(results)
	p.results = results
	p.result.Plan = results
	return true
}

// compareParallelism bounds the dry-runs one app has in flight.
const compareParallelism = 8

// compareOne compares one desired object, from the cache when neither side
// changed.
// hash is desiredHash of d and the app's ignore rules.
func (p *pass) compareOne(ctx context.Context, d *unstructured.Unstructured, ref status.ObjectRef, hash string) (status.ResourceStatus, *unstructured.Unstructured) {
	key := refKey(ref)
	if err := p.cl.watch(ctx, d.GroupVersionKind(), d.GetNamespace()); err != nil && !isNoMatch(err) {
		return p.unread(ref, fmt.Errorf("%s watch failed: %w", ref, err)), nil
	}
	if why, ok := p.encrypted[key]; ok {
		return p.compareEncrypted(ctx, d, ref, why)
	}
	// lv may be the informer cache's own object: the pass only reads it
	// (heal copies before changing), and the comparison gets a copy.
	lv, err := p.cl.peek(ctx, ref)
	if err != nil && isNoMatch(err) {
		// Its kind is not served (yet: its CRD may come in this sync), so
		// no such object can exist; the heal applies it once the CRD is
		// established.
		return status.ResourceStatus{Ref: ref, Status: status.ResourceError, Health: status.HealthUnknown, Message: err.Error()}, nil
	}
	if err != nil {
		return p.unread(ref, err), nil
	}
	rv := ""
	if lv != nil {
		rv = lv.GetResourceVersion()
	}
	p.cacheMu.Lock()
	c, ok := p.st.cache[key]
	p.cacheMu.Unlock()
	if ok && c.desiredHash == hash && c.liveRV == rv && lv != nil {
		return c.result, lv
	}
	if res, ok := p.compareLocally(d, ref, lv); ok {
		p.cacheMu.Lock()
		p.st.cache[key] = cacheEntry{desiredHash: hash, liveRV: rv, result: res}
		p.cacheMu.Unlock()
		return res, lv
	}
	p.e.dryRuns.Add(1)
	p.compared(status.DecidedDryRun)
	dry, dryErr := p.cl.cs.DryRunApply(ctx, d)
	p.e.opts.Observer.Request(VerbDryRunApply, dryErr)
	in := diff.Input{Desired: d, DryRun: dry, DryRunErr: dryErr, Live: lv.DeepCopy(), Ignore: p.app.Spec.IgnoreDifferences, Options: p.e.opts.Diff, Health: p.healthChecks()}
	res := diff.Compare(in)
	if diff.NeedsDefaults(res) {
		// An object first made imperatively (kubectl create, Helm) leaves
		// its creator owning every field the apiserver defaulted; those are
		// not a person's hand-added drift. A dry-run create gives the
		// defaults to tell them apart. When it fails (Git pins an already
		// allocated nodePort, say) the first comparison stands.
		p.e.dryRuns.Add(1)
		defaulted, err := p.cl.cs.DryRunCreate(ctx, d)
		p.e.opts.Observer.Request(VerbDryRunCreate, err)
		if err == nil {
			in.Defaulted = defaulted
			res = diff.Compare(in)
		}
	}
	if res.Ref.Kind == "" {
		res.Ref = ref
	}
	res.Decided = status.DecidedDryRun
	res.Message = p.scrubObjects(res.Message, d, lv)
	p.cacheMu.Lock()
	if dryErr == nil && lv != nil {
		p.st.cache[key] = cacheEntry{desiredHash: hash, liveRV: rv, result: res}
	} else {
		delete(p.st.cache, key)
	}
	p.cacheMu.Unlock()
	return res, lv
}

// compareLocally is tier 1 of the comparison: when applying d over lv
// would change no value (diff.NoOpApply, from lv's managedFields), the
// comparison runs on lv as the dry-run's answer, with no request. It
// declines (false) whenever the dry-run must decide: no live object,
// ciphertext the dry-run would refuse, an apply that may change
// something, or a result that needs the apiserver's defaults.
func (p *pass) compareLocally(d *unstructured.Unstructured, ref status.ObjectRef, lv *unstructured.Unstructured) (status.ResourceStatus, bool) {
	if lv == nil {
		return status.ResourceStatus{}, false
	}
	if _, found := sops.Find(d.Object); found {
		return status.ResourceStatus{}, false
	}
	if noop, _ := diff.NoOpApply(withoutLegacyAppLabel(d, lv, p.e.opts.Diff), lv, live.FieldManager); !noop {
		return status.ResourceStatus{}, false
	}
	// A dry-run of a no-op answers with live's values, so live stands in
	// for it: owners, extra fields, ignore rules and health are judged
	// exactly as after a dry-run.
	lc := lv.DeepCopy()
	res := diff.Compare(diff.Input{Desired: d, DryRun: lc, Live: lc, Ignore: p.app.Spec.IgnoreDifferences, Options: p.e.opts.Diff, Health: p.healthChecks()})
	if res.Status == status.ResourceError || diff.NeedsDefaults(res) {
		return status.ResourceStatus{}, false
	}
	if res.Ref.Kind == "" {
		res.Ref = ref
	}
	res.Decided = status.DecidedLocal
	res.Message = p.scrubObjects(res.Message, d, lv)
	p.e.localCompares.Add(1)
	p.compared(status.DecidedLocal)
	return res, true
}

// withoutLegacyAppLabel is d without kdrift's App label when lv, applied
// by a kdrift from before that label, lacks it and the comparison ignores
// it. Applying would add only that label, which the dry-run's comparison
// ignores too, so both tiers reach the same verdict; without this, every
// object of an upgraded fleet would pay a dry-run until its next apply.
func withoutLegacyAppLabel(d, lv *unstructured.Unstructured, opts diff.Options) *unstructured.Unstructured {
	if _, want := d.GetLabels()[apply.LabelApp]; !want || !slices.Contains(opts.IgnoredLabels, apply.LabelApp) {
		return d
	}
	if _, has := lv.GetLabels()[apply.LabelApp]; has {
		return d
	}
	out := d.DeepCopy()
	labels := out.GetLabels()
	delete(labels, apply.LabelApp)
	if len(labels) == 0 {
		labels = nil
	}
	out.SetLabels(labels)
	return out
}

// compared tells the Observer, if it wants to know, which tier decided a
// comparison.
func (p *pass) compared(tier status.Decided) {
	if o, ok := p.e.opts.Observer.(CompareObserver); ok {
		o.Compared(tier)
	}
}

// unread is the result for an object whose live state could not be read
// (a list, watch or get that failed: 403, 429, 5xx, a timeout, an
// informer that never synced). It is an Error with the cause, never
// Missing, and the heal phase leaves it alone: applying blind could
// overwrite fields it never saw or skip the hand-over.
func (p *pass) unread(ref status.ObjectRef, err error) status.ResourceStatus {
	msg := err.Error()
	if !strings.Contains(msg, ref.String()) {
		msg = ref.String() + ": " + msg
	}
	p.cacheMu.Lock()
	if p.unreadable == nil {
		p.unreadable = map[string]bool{}
	}
	p.unreadable[refKey(ref)] = true
	p.cacheMu.Unlock()
	return status.ResourceStatus{Ref: ref, Status: status.ResourceError, Health: status.HealthUnknown, Message: "live state could not be read, nothing applied: " + msg}
}

// compareRules are what an App adds to a comparison besides the object:
// its ignore rules and, when it has any, its health checks.
func compareRules(a app.App) any {
	if a.Spec.Health == nil {
		return a.Spec.IgnoreDifferences
	}
	return []any{a.Spec.IgnoreDifferences, a.Spec.Health}
}

// healthChecks are the App's CEL health checks, compiled (once per
// expression, healthcel keeps them).
func (p *pass) healthChecks() *diff.HealthChecks {
	if p.app.Spec.Health == nil {
		return nil
	}
	return diff.NewHealthChecks(p.app.Spec.Health.Checks)
}

// judged is a result for an object that is not compared (Extraneous,
// Generated): its health, judged.
func (p *pass) judged(ref status.ObjectRef, st status.Resource, o *unstructured.Unstructured) status.ResourceStatus {
	r := status.ResourceStatus{Ref: ref, Status: st}
	diff.JudgeInto(&r, o, p.healthChecks())
	return r
}

// desiredHash identifies a desired object and the rules it is compared
// with.
func desiredHash(d *unstructured.Unstructured, rules any) string {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(d.Object); err != nil {
		return ""
	}
	if err := json.NewEncoder(h).Encode(rules); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// publishDrift sends DriftDetected for every object whose drift is new or
// changed since the last pass, and counts rewrites of healed fields.
func (p *pass) publishDrift(results []status.ResourceStatus) {
	for _, r := range results {
		key := refKey(r.Ref)
		prev, had := p.st.results[key]
		p.st.results[key] = r
		drift := r.Drifted() > 0 || r.Status == status.ResourceMissing || r.Status == status.ResourceRequiresReplace || r.Status == status.ResourceExtraneous
		for _, f := range r.Fields {
			if f.Ignored || f.Delegated != nil || f.Frozen != nil || r.Frozen != nil {
				// A frozen field is the person's to keep, a delegated one
				// its controller's: no fight, and no advice to freeze it.
				continue
			}
			m, class := rewriter(f.Owners)
			if m == "" {
				continue
			}
			k := fight.Key{App: p.name, Ref: r.Ref, Field: f.Path}
			// Only controllers fight; a person is healed every time and
			// told once per burst that a freeze is the way to keep it.
			if class == status.OwnerController {
				if ev, ok := p.e.fights.Rewritten(k, m, rvOf(p.live[key])); ok {
					p.e.bus.publish(ev)
				}
			} else if ev, ok := p.e.fights.Overridden(k, m, rvOf(p.live[key])); ok {
				p.e.bus.publish(ev)
			}
		}
		if !drift || r.Status == status.ResourceError {
			continue
		}
		if had && prev.Status == r.Status && reflect.DeepEqual(prev.Fields, r.Fields) {
			continue
		}
		p.e.bus.publish(status.DriftDetected{Base: status.Base{App: p.name, Time: p.e.opts.Now()}, Resource: r})
	}
}

// rewriter is the manager other than kdrift that owns a drifted field, and
// its class; a controller comes first when several own it.
func rewriter(owners []status.Owner) (string, status.OwnerClass) {
	var m string
	var class status.OwnerClass
	for _, o := range owners {
		if o.Class == status.OwnerKdrift || o.Class == status.OwnerDefaulted || o.Manager == apply.Manager || o.Manager == apply.HandoverManager {
			continue
		}
		if o.Class == status.OwnerController {
			return o.Manager, o.Class
		}
		if m == "" {
			m, class = o.Manager, o.Class
		}
	}
	return m, class
}
