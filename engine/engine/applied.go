package engine

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
)

// appliedKey is the key of e.applied for a declaration.
func appliedKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// noteApplied keeps, of the live declarations objs of gk, the revision
// each tool's controller last applied (app.AppliedReader). A nil objs
// (the kind is not served, or the list failed) forgets that kind.
func (e *core) noteApplied(gk schema.GroupKind, objs []map[string]any) {
	reader, ok := app.ToolOfKind(gk).(app.AppliedReader)
	if !ok {
		return
	}
	kind := gk.Kind
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.applied == nil {
		e.applied = map[string]string{}
	}
	for k := range e.applied {
		if strings.HasPrefix(k, kind+"/") {
			delete(e.applied, k)
		}
	}
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		if rev := reader.Applied(o); rev != "" {
			e.applied[appliedKey(kind, u.GetNamespace(), u.GetName())] = rev
		}
	}
}

// appliedOf is what the owner of a last applied, as its live declaration
// said at the last head load ("" when unknown).
func (e *core) appliedOf(a app.App) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.applied[appliedKey(a.Origin.Kind, a.Origin.Namespace, a.Origin.Name)]
}

// liveFluxLists are the live Flux declarations readFluxApplied listed on
// one context; nil lists when they were not listed.
type liveFluxLists struct {
	kustomizations, helmReleases []map[string]any
	context                      string
	// repos are the live GitRepositories' URLs and refs, listed when
	// resolveFlux did not list them (a cluster folder named by
	// --cluster-path); nil otherwise.
	repos *app.FluxCluster
}

// readFluxApplied lists the live Flux Kustomizations and HelmReleases of
// the destination context, when snap declares Flux, for the revisions and
// chart versions they applied; it returns the lists.
func (e *core) readFluxApplied(ctx context.Context, snap *source.Snapshot) liveFluxLists {
	if snap.Apps().Flux == nil {
		return liveFluxLists{}
	}
	cs, err := e.clients.For(e.opts.Context)
	if err != nil {
		return liveFluxLists{}
	}
	ctx, cancel := context.WithTimeout(ctx, liveFluxTimeout)
	defer cancel()
	out := liveFluxLists{context: cs.Context}
	for _, gvk := range []schema.GroupVersionKind{fluxKustomizationGVK, fluxHelmReleaseGVK} {
		ks, err := listFlux(ctx, cs, gvk)
		if err != nil {
			return liveFluxLists{} // the pass reports an unreachable cluster
		}
		objs := make([]map[string]any, 0, len(ks))
		for _, k := range ks {
			objs = append(objs, k.Object)
		}
		e.noteApplied(gvk.GroupKind(), objs)
		switch {
		case ks == nil:
		case gvk == fluxKustomizationGVK:
			out.kustomizations = objs
		default:
			out.helmReleases = objs
		}
	}
	e.mu.Lock()
	known := e.fluxRepos != nil
	e.mu.Unlock()
	if out.kustomizations != nil && !known {
		grs, err := listFlux(ctx, cs, fluxGitRepositoryGVK)
		if err != nil {
			return liveFluxLists{}
		}
		out.repos = liveGitRepositories(grs)
	}
	return out
}

// ownerApplied says which revision the owner of a last applied, from its
// live declaration, and how it stands against rev, the revision kdrift
// compares: "" when the live declaration carries none.
func (e *core) ownerApplied(a app.App, rev source.Revision) string {
	if a.Origin == nil || a.Spec.Chart != nil {
		// A remote chart's version is compared once it is resolved
		// (chartApplied).
		return ""
	}
	applied := e.appliedOf(a)
	if applied == "" {
		return ""
	}
	if _, ok := app.ToolOf(a.Origin).(app.ChartReleaser); ok {
		// A release names its chart's version, not a commit.
		return fmt.Sprintf("%s last released %s, from the chart folder %s", a.Origin.Engine, applied, a.Spec.Path)
	}
	if rev.Hash != "" && strings.Contains(applied, rev.Hash) {
		return fmt.Sprintf("%s applied %s, the revision kdrift compares", a.Origin.Engine, applied)
	}
	return fmt.Sprintf("%s applied %s; kdrift compares %s (the owner has not applied it yet, or Git moved on since)", a.Origin.Engine, applied, rev.Short())
}
