package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// PruneRefusedError says a prune was refused because it would delete every
// object the app tracks, or more than apply.MaxPruneShare of them, and no
// person confirmed it (kdrift sync --prune --confirm-prune, or the UI's
// second question). Nothing was pruned. The background self-heal never
// confirms; it reports the refusal.
type PruneRefusedError struct {
	App string `json:"app"`
	// Count is how many objects the prune would delete, of Total the app
	// tracks (rendered from Git plus the prune candidates).
	Count int `json:"count"`
	Total int `json:"total"`
	// Refs are the objects it would delete.
	Refs []status.ObjectRef `json:"refs"`
}

// Error names the app, says how many objects and how to confirm.
func (e *PruneRefusedError) Error() string {
	share := "all of them"
	if e.Count < e.Total {
		share = fmt.Sprintf("more than %.0f%%", apply.MaxPruneShare*100)
	}
	return fmt.Sprintf("app %s: prune refused: it would delete %d of the %d objects the app tracks (%s); if Git really dropped them, confirm with `kdrift sync %s --prune --confirm-prune` (or answer yes to the UI's second question); nothing was deleted",
		e.App, e.Count, e.Total, share, e.App)
}

// mayPrune says whether this pass may delete: prune must be asked for (the
// App's syncPolicy.prune in the background, --prune on a sync) and the app
// must not be frozen.
func (p *pass) mayPrune() bool {
	if !p.opts.prune || !p.mayWrite() || p.app.Spec.Freeze.ActiveAt(p.now) || p.app.Origin != nil {
		// An owned app's objects are its owner's to delete; kdrift does
		// not track them, so it could not tell which left Git anyway.
		return false
	}
	return p.opts.force || p.app.Spec.SyncPolicy.Prune
}

// phasePrune deletes tracked objects of this app that Git no longer
// renders, in the foreground, with UID and resourceVersion preconditions.
// It holds back what it cannot delete safely (an object tracked before
// kdrift recorded repositories, a Namespace or PersistentVolumeClaim the
// App did not opt in to prune, anything while another App's render cannot
// be read), saying why on the object, and refuses a prune of too large a
// share of the app unless confirmed. It reports whether it deleted
// anything.
func (p *pass) phasePrune(ctx context.Context) bool {
	if !p.mayPrune() || len(p.extra) == 0 {
		p.st.pruneRefusal = ""
		return false
	}
	if p.pruneHold != "" {
		for _, o := range p.extra {
			p.holdPrune(live.RefOf(o), "not pruned: cannot tell whether another App of the repository renders it: "+p.pruneHold)
		}
		if !p.opts.dryRun {
			p.reportRefusal(p.pruneHold)
		}
		return false
	}
	var doomed []*unstructured.Unstructured
	for _, o := range p.extra {
		ref := live.RefOf(o)
		fz := p.freezesOf(ref)
		switch field, ok := apply.OptInField(ref, p.app.Spec.SyncPolicy); {
		case len(fz) > 0 && !p.opts.overwriteFrozen:
			p.holdPrune(ref, "not pruned: frozen; "+fz[0].Mark().Describe())
			p.result.LeftFrozen = append(p.result.LeftFrozen, FrozenPart{Ref: ref, Whole: true, Freeze: fz[0].Mark()})
		case !p.prunable(o):
			// Said on the object by the comparison.
		case apply.RepoOf(o) == "":
			p.holdPrune(ref, p.legacyHold())
		case !ok:
			p.holdPrune(ref, fmt.Sprintf("not pruned: the App prunes a %s only with %s: true", ref.Kind, field))
		default:
			doomed = append(doomed, o)
		}
	}
	if len(doomed) == 0 {
		return false
	}
	total := len(p.desired) + len(p.extra)
	if apply.PruneNeedsConfirm(len(doomed), total) && !p.opts.confirmPrune {
		refused := &PruneRefusedError{App: p.name, Count: len(doomed), Total: total}
		for _, o := range doomed {
			ref := live.RefOf(o)
			refused.Refs = append(refused.Refs, ref)
			p.holdPrune(ref, fmt.Sprintf("not pruned: the prune would delete %d of the app's %d objects and needs confirming", refused.Count, total))
		}
		p.result.PruneRefused = refused
		if !p.opts.dryRun {
			p.reportRefusal(refused.Error())
		}
		return false
	}
	p.st.pruneRefusal = ""
	changed := false
	for _, o := range doomed {
		if !p.mayWrite() {
			break
		}
		ref := live.RefOf(o)
		err := p.cl.applier.Prune(ctx, p.name, p.e.repoID, o, p.opts.dryRun)
		if !p.opts.dryRun {
			p.e.opts.Observer.Request(VerbDelete, err)
		}
		if err != nil {
			p.record(failed(ref, ActionPrune, nil, err))
			var changedErr *apply.ChangedError
			if errors.As(err, &changedErr) {
				p.holdPrune(ref, err.Error())
				continue
			}
			p.e.bus.publish(status.ErrorEvent{Base: status.Base{App: p.name, Time: p.e.opts.Now()}, Ref: &ref, Message: p.scrubbed(err.Error())})
			continue
		}
		p.record(ObjectResult{Ref: ref, Action: ActionPrune})
		if !p.opts.dryRun {
			changed = true
			p.e.bus.publish(status.Pruned{Base: status.Base{App: p.name, Time: p.e.opts.Now()}, Ref: ref})
		}
	}
	return changed
}

// legacyHold is what an Extraneous object tracked before kdrift recorded
// repositories says: kdrift never prunes it until it is annotated.
func (p *pass) legacyHold() string {
	return fmt.Sprintf("not pruned: tracked before kdrift recorded repositories (no annotation %s); delete it by hand, or annotate it %s=%s to let kdrift prune it", apply.AnnotationRepo, apply.AnnotationRepo, p.e.repoID)
}

// holdPrune says on an Extraneous resource why it was not pruned.
func (p *pass) holdPrune(ref status.ObjectRef, why string) {
	key := refKey(ref)
	if p.held == nil {
		p.held = map[string]string{}
	}
	p.held[key] = why
	for i := range p.results {
		if refKey(p.results[i].Ref) == key {
			p.results[i].Message = why
			return
		}
	}
}

// reportRefusal publishes an app-level Error event for a prune held back
// or refused, once per distinct reason.
func (p *pass) reportRefusal(msg string) {
	if p.st.pruneRefusal == msg {
		return
	}
	p.st.pruneRefusal = msg
	p.e.bus.publish(status.ErrorEvent{Base: status.Base{App: p.name, Time: p.e.opts.Now()}, Message: msg})
}

// renderedByOthers maps, by refKey, the objects every other App of the
// repository renders at this pass's revision into this pass's cluster to
// the App's name: an object that moved from this app to another in one
// commit is that App's to adopt, never a prune candidate. An App that is
// invalid or does not render is an error (kdrift cannot tell what it
// would render); the map is never nil.
func (p *pass) renderedByOthers(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	apps := p.snap.Apps()
	var bad []string
	for _, inv := range apps.Invalid {
		switch {
		case inv.Name == "":
			bad = append(bad, fmt.Sprintf("App file %s is invalid", inv.File))
		case inv.Name != p.name:
			bad = append(bad, fmt.Sprintf("App %s %s is invalid", inv.Name, app.In(inv.File)))
		}
	}
	for _, a := range apps.Apps {
		if a.Metadata.Name == p.name {
			continue
		}
		cl, err := p.e.clusterFor(a.Spec.Destination.Context)
		if err != nil || cl.name != p.cl.name {
			// Another cluster, or a context this kubeconfig does not
			// have: its objects are not in this cluster.
			continue
		}
		tree, _, err := p.e.chartTree(ctx, a, p.snap)
		h := cl.withCapabilities(a.RenderHelm())
		if err == nil {
			_, _, err = p.e.withValuesFrom(ctx, a, cl, h)
		}
		var objs []*unstructured.Unstructured
		if err == nil {
			objs, err = p.e.renderer.RenderApp(ctx, tree, a.Spec.Path, h)
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("App %s does not render (%v)", a.Metadata.Name, err))
			continue
		}
		ns := a.Spec.Destination.Namespace
		if ns == "" {
			ns = "default"
		}
		for _, o := range objs {
			if p.lacksNamespace(ctx, o) {
				o = apply.CopyMetadata(o)
				o.SetNamespace(ns)
			}
			out[refKey(live.RefOf(o))] = a.Metadata.Name
		}
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("%s at %s; fix it, then prune runs again", strings.Join(bad, "; "), p.rev.Short())
	}
	return out, nil
}
