package engine

import (
	"context"
	"path"
	"reflect"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/engine/status"
)

// PreviewLimit bounds the objects one PreviewTree reads or compares with
// the cluster (a compare is a server-side dry-run); the objects past it
// are counted in AppPreview.NotCompared.
const PreviewLimit = 200

// PreviewChange is what the cluster would see happen to one object.
type PreviewChange string

// PreviewChange values.
const (
	// PreviewUpdate changes fields of a live object (Fields).
	PreviewUpdate PreviewChange = "update"
	// PreviewCreate creates an object the cluster lacks.
	PreviewCreate PreviewChange = "create"
	// PreviewSame is an object whose render changes while the cluster
	// already holds what the new render asks for.
	PreviewSame PreviewChange = "unchanged"
	// PreviewPrune deletes a live object that leaves Git (the App
	// prunes).
	PreviewPrune PreviewChange = "prune"
	// PreviewLeave is a live object that leaves Git and stays in the
	// cluster, untouched (the App does not prune).
	PreviewLeave PreviewChange = "leave"
	// PreviewReplace changes an immutable field: a sync refuses it.
	PreviewReplace PreviewChange = "replace"
	// PreviewError is an object the comparison could not settle
	// (Message says why: a refused dry-run, an unreadable object, a
	// ciphertext no key decrypts).
	PreviewError PreviewChange = "error"
)

// ObjectPreview is what another tree would change in one object.
type ObjectPreview struct {
	Ref    status.ObjectRef `json:"ref"`
	Change PreviewChange    `json:"change"`
	// Fields are the fields that change, live value → the tree's value,
	// as the comparison gives them (a dry-run apply, so defaults do not
	// show; Secret values masked). Only for PreviewUpdate.
	Fields []status.FieldChange `json:"fields,omitempty"`
	// Message explains PreviewError and PreviewReplace.
	Message string `json:"message,omitempty"`
	// Frozen is the resource freeze that holds the whole object: healing
	// leaves it as it is live.
	Frozen *app.Freeze `json:"frozen,omitempty"`
}

// AppPreview is what another tree would change in one app's objects.
type AppPreview struct {
	App string `json:"app"`
	// RenderError says the app does not render from the tree (or its App
	// is invalid there): applying it would leave the app in Error.
	RenderError string `json:"renderError,omitempty"`
	// ClusterError says why the app's cluster could not be compared.
	ClusterError string `json:"clusterError,omitempty"`
	// Added is an App the tree declares and the current head does not.
	Added bool `json:"added,omitempty"`
	// Removed is an App the tree no longer declares: kdrift stops
	// managing its objects, which stay in the cluster as they are.
	Removed bool `json:"removed,omitempty"`
	// Prune and SelfHeal are the App's policy in the tree.
	Prune    bool `json:"prune"`
	SelfHeal bool `json:"selfHeal"`
	// Frozen is the App's freeze active in the tree: self-heal applies
	// nothing until it is lifted (a sync still can).
	Frozen *app.Freeze `json:"frozen,omitempty"`
	// Objects are the objects whose render changes, by reference.
	Objects []ObjectPreview `json:"objects"`
	// NotCompared counts the changed objects past PreviewLimit.
	NotCompared int `json:"notCompared,omitempty"`
}

// TreePreview is what the cluster would change if a tree of the
// repository replaced the current one: app by app, the objects whose
// render changes.
type TreePreview struct {
	Apps []AppPreview `json:"apps"`
	// Unavailable says why there is no cluster part (no cluster, an
	// engine that could not start); set by callers, empty otherwise.
	Unavailable string `json:"unavailable,omitempty"`
}

// PreviewTree renders every App of the repository at commit before and at
// the stored root tree after (source.Repo.TreeSnapshot: a revert not yet
// committed), exactly as a pass renders (budgets, SOPS, tracking,
// namespaces), and compares each object whose render differs with the
// cluster by a server-side dry-run, as the comparison of a pass does. It
// never writes and publishes nothing. An App that does not render from
// after is reported in its AppPreview, not as an error.
func (e *core) PreviewTree(ctx context.Context, before, after string) (TreePreview, error) {
	bs, err := e.repo.Snapshot(before)
	if err != nil {
		return TreePreview{}, err
	}
	as, err := e.repo.TreeSnapshot(after)
	if err != nil {
		return TreePreview{}, err
	}
	ba, aa := settledApps(bs), settledApps(as)
	// The cluster as it is now, not as an earlier command listed it.
	e.freshReads()
	names := map[string]bool{}
	for _, a := range append(append([]app.App(nil), ba.Apps...), aa.Apps...) {
		names[a.Metadata.Name] = true
	}
	for _, inv := range aa.Invalid {
		// An App broken before and after is not the tree's doing.
		if _, was := ba.FindInvalid(inv.Name); inv.Name != "" && !was {
			names[inv.Name] = true
		}
	}
	order := make([]string, 0, len(names))
	for n := range names {
		order = append(order, n)
	}
	sort.Strings(order)
	out := TreePreview{Apps: []AppPreview{}}
	budget := PreviewLimit
	for _, name := range order {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		aBefore, inBefore := ba.Find(name)
		aAfter, inAfter := aa.Find(name)
		dest := aAfter
		if !inAfter {
			dest = aBefore
		}
		if !e.wanted(name) || !e.inContext(dest.Spec.Destination.Context) {
			continue
		}
		if ap, changed := e.previewApp(ctx, name, bs, as, aBefore, inBefore, aAfter, inAfter, aa, &budget); changed {
			out.Apps = append(out.Apps, ap)
		}
	}
	return out, nil
}

// previewApp is the AppPreview of one app; changed is false when the
// tree changes nothing the app renders.
func (e *core) previewApp(ctx context.Context, name string, bs, as *source.Snapshot, aBefore app.App, inBefore bool, aAfter app.App, inAfter bool, aa app.LoadResult, budget *int) (AppPreview, bool) {
	ap := AppPreview{App: name, Objects: []ObjectPreview{}, Added: !inBefore && inAfter}
	if !inAfter {
		if inv, bad := aa.FindInvalid(name); bad {
			ap.RenderError = inv.Wrap(name).Error()
			return ap, true
		}
		ap.Removed = true
		return ap, true
	}
	ap.Prune, ap.SelfHeal = aAfter.Spec.SyncPolicy.Prune, aAfter.Spec.SyncPolicy.SelfHeal
	if f := aAfter.Spec.Freeze; f.ActiveAt(e.opts.Now()) {
		ap.Frozen = f
	}
	if inBefore && e.rendersSame(ctx, bs, aBefore, as, aAfter) {
		// A tree that changes neither the App nor a folder its render
		// reads changes nothing of it: a revert of one app's commit does
		// not render and compare every app of the repository.
		return ap, false
	}
	pa := e.previewPass(name, as, aAfter)
	if !pa.phaseRender(ctx) {
		if pa.status.Sync == status.SyncError {
			ap.RenderError = pa.scrubbed(pa.status.Error)
			return ap, true
		}
		// No cluster to compare with: an app whose render the tree does
		// not change is not worth a line.
		ap.ClusterError = pa.scrubbed(pa.status.Error)
		return ap, !inBefore || policyChanged(aBefore, aAfter) || e.rendersDiffer(ctx, bs, aBefore, as, aAfter)
	}
	// What the current head renders; an App new in the tree, or one that
	// does not render now, changes every object it renders.
	was := map[string]*unstructured.Unstructured{}
	if inBefore {
		pb := e.previewPass(name, bs, aBefore)
		if pb.phaseRender(ctx) {
			for _, d := range pb.desired {
				was[refKey(live.RefOf(d))] = d
			}
		}
	}
	// A changed policy (a freeze lifted, self-heal or ignore rules
	// changed) changes what the heal does to every object: each is
	// compared, and listed when it would change live.
	policy := inBefore && policyChanged(aBefore, aAfter)
	var changed []*unstructured.Unstructured
	rendered := map[string]bool{} // objects whose render changes
	now := map[string]bool{}
	var refs []status.ObjectRef
	for _, d := range pa.desired {
		ref := live.RefOf(d)
		now[refKey(ref)] = true
		refs = append(refs, ref)
		if b, ok := was[refKey(ref)]; ok && desiredHash(b, compareRules(aBefore)) == desiredHash(d, compareRules(aAfter)) {
			if policy {
				changed = append(changed, d)
			}
			continue
		}
		rendered[refKey(ref)] = true
		changed = append(changed, d)
	}
	var gone []*unstructured.Unstructured
	for k, d := range was {
		if !now[k] {
			gone = append(gone, d)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return refKey(live.RefOf(gone[i])) < refKey(live.RefOf(gone[j])) })
	if len(changed) == 0 && len(gone) == 0 && inBefore {
		return ap, false
	}

	// Each object is a dry-run (or a read) of its own: in parallel, as a
	// pass compares, and no more than the budget.
	take := func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		n := min(len(objs), *budget)
		*budget -= n
		ap.NotCompared += len(objs) - n
		return objs[:n]
	}
	changed, gone = take(changed), take(gone)
	results := make([]*ObjectPreview, len(changed)+len(gone))
	var g errgroup.Group
	g.SetLimit(compareParallelism)
	for i, d := range changed {
		g.Go(func() error {
			ref := live.RefOf(d)
			res, _ := pa.compareOne(ctx, d, ref, desiredHash(d, compareRules(aAfter)))
			rs := []status.ResourceStatus{res}
			pa.markFrozen(rs)
			results[i] = objectPreview(rs[0])
			return nil
		})
	}
	for i, d := range gone {
		g.Go(func() error {
			ref := live.RefOf(d)
			err := pa.cl.watch(ctx, d.GroupVersionKind(), d.GetNamespace())
			var lv *unstructured.Unstructured
			if err == nil {
				lv, err = pa.cl.peek(ctx, ref)
			}
			switch {
			case err != nil && !isNoMatch(err):
				results[len(changed)+i] = &ObjectPreview{Ref: ref, Change: PreviewError, Message: "live state could not be read: " + err.Error()}
			case lv == nil || len(apply.Extraneous(name, e.repoID, []*unstructured.Unstructured{lv}, refs)) == 0:
				// Not in the cluster, or not kdrift's to prune: nothing
				// changes.
			case ap.Prune && !wholeFrozen(pa.freezesOf(ref)):
				results[len(changed)+i] = &ObjectPreview{Ref: ref, Change: PreviewPrune}
			default:
				results[len(changed)+i] = &ObjectPreview{Ref: ref, Change: PreviewLeave}
			}
			return nil
		})
	}
	_ = g.Wait() // each object reports its own failure
	for _, r := range results {
		if r != nil && (r.Change != PreviewSame || rendered[refKey(r.Ref)]) {
			r.Message = pa.scrubbed(r.Message)
			ap.Objects = append(ap.Objects, *r)
		}
	}
	sort.Slice(ap.Objects, func(i, j int) bool { return ap.Objects[i].Ref.String() < ap.Objects[j].Ref.String() })
	// Only a policy change, and nothing it changes live: no line.
	quiet := len(rendered) == 0 && len(gone) == 0 && len(ap.Objects) == 0 && ap.NotCompared == 0
	return ap, !quiet
}

// previewPass is a pass over app a at snapshot snap with a state of its
// own: its comparisons neither use nor fill the app's cache, and it
// publishes nothing.
func (e *core) previewPass(name string, snap *source.Snapshot, a app.App) *pass {
	return &pass{e: e, st: newAppState(name), name: name, now: e.opts.Now(), opts: passOptions{dryRun: true}, snap: snap, app: a,
		status: status.AppStatus{Name: name, Sync: status.SyncUnknown, Health: status.HealthUnknown, SelfHeal: status.SelfHealOff, Resources: []status.ResourceStatus{}},
		live:   map[string]*unstructured.Unstructured{},
	}
}

// objectPreview reads a comparison as what the cluster would see.
func objectPreview(r status.ResourceStatus) *ObjectPreview {
	op := &ObjectPreview{Ref: r.Ref, Frozen: r.Frozen, Message: r.Message}
	switch r.Status {
	case status.ResourceMissing:
		op.Change, op.Message = PreviewCreate, ""
	case status.ResourceRequiresReplace:
		op.Change = PreviewReplace
	case status.ResourceError, status.ResourceEncrypted:
		op.Change = PreviewError
	default:
		for _, f := range r.Fields {
			if f.IsDrift() {
				op.Fields = append(op.Fields, f)
			}
		}
		op.Change, op.Message = PreviewUpdate, ""
		if len(op.Fields) == 0 {
			op.Change = PreviewSame
		}
	}
	return op
}

// wholeFrozen reports whether one of fz holds the whole resource.
func wholeFrozen(fz []app.ResourceFreeze) bool {
	for _, f := range fz {
		if f.Whole() {
			return true
		}
	}
	return false
}

// rendersSame reports whether App b at snapshot bs and App a at as are
// the same App rendering the same objects: equal declarations, and a
// render (not a chart's, which also depends on the cluster) whose every
// input folder is unchanged between the snapshots.
func (e *core) rendersSame(ctx context.Context, bs *source.Snapshot, b app.App, as *source.Snapshot, a app.App) bool {
	dir := path.Clean(a.Spec.Path)
	if !reflect.DeepEqual(b, a) || render.IsChart(bs, dir) || render.IsChart(as, dir) {
		return false
	}
	return e.renderer.SameRender(ctx, bs, as, a.Spec.Path, a.RenderHelm())
}

// rendersDiffer reports whether app a renders differently from snapshot
// bs (as App b) and from as (as App a), comparing the rendered objects
// alone (no cluster); a failed render counts as different.
func (e *core) rendersDiffer(ctx context.Context, bs *source.Snapshot, b app.App, as *source.Snapshot, a app.App) bool {
	key := func(snap *source.Snapshot, x app.App) (string, bool) {
		objs, err := e.renderer.RenderApp(ctx, snap, x.Spec.Path, x.RenderHelm())
		if err != nil {
			return "", false
		}
		hashes := make([]string, 0, len(objs))
		for _, o := range objs {
			hashes = append(hashes, desiredHash(o, []any{x.Spec.Destination, x.Spec.IgnoreDifferences}))
		}
		sort.Strings(hashes)
		return strings.Join(hashes, ","), true
	}
	kb, okB := key(bs, b)
	ka, okA := key(as, a)
	return !okB || !okA || kb != ka
}

// policyChanged reports whether the App's spec other than its path
// differs: freezes, self-heal, prune, ignore rules.
func policyChanged(b, a app.App) bool {
	return !reflect.DeepEqual(b.Spec, a.Spec)
}
