package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/engine/status"
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
	if e.appliedAt == nil {
		e.appliedAt = map[string]time.Time{}
	}
	for k := range e.applied {
		if strings.HasPrefix(k, kind+"/") {
			delete(e.applied, k)
			delete(e.appliedAt, k)
		}
	}
	timer, timed := reader.(app.AppliedTimeReader)
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		if rev := reader.Applied(o); rev != "" {
			key := appliedKey(kind, u.GetNamespace(), u.GetName())
			e.applied[key] = rev
			if timed {
				if at := timer.AppliedAt(o); !at.IsZero() {
					e.appliedAt[key] = at
				}
			}
		}
	}
}

// appliedTimeOf is when the owner of a finished applying appliedOf, as
// its live declaration said (zero when it does not say).
func (e *core) appliedTimeOf(a app.App) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.appliedAt[appliedKey(a.Origin.Kind, a.Origin.Namespace, a.Origin.Name)]
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
// compares (read from ref; followed says it is the revision the
// declaration follows, not the branch head): the text, and the values
// when the owner records a revision of the repository. "" and nil when
// the live declaration carries none.
func (e *core) ownerApplied(a app.App, rev source.Revision, ref string, followed bool) (string, *status.OwnerRevision) {
	if a.Origin == nil || a.Spec.Chart != nil {
		// A remote chart's version is compared once it is resolved
		// (chartApplied).
		return "", nil
	}
	applied := e.appliedOf(a)
	if applied == "" {
		return "", nil
	}
	if _, ok := app.ToolOf(a.Origin).(app.ChartReleaser); ok {
		// A release names its chart's version, not a commit.
		return fmt.Sprintf("%s last released %s, from the chart folder %s", a.Origin.Engine, applied, a.Spec.Path), nil
	}
	if f := a.Origin.Follows; !followed && followsOther(f, e.readBranch(), rev.Hash) {
		// The owner applies another revision than the one kdrift
		// compares: whether it is behind cannot be told from here.
		return fmt.Sprintf("%s follows %s and applied %s; kdrift compares %s (%s), not the revision %s follows, so what differs is not told apart", a.Origin.Engine, f, shortRevision(applied), rev.Short(), ref, a.Origin.Engine), nil
	}
	ow := &status.OwnerRevision{Engine: string(a.Origin.Engine), Applied: applied, Desired: rev.Hash, DesiredRef: ref}
	if at := e.appliedTimeOf(a); !at.IsZero() {
		at = at.UTC()
		ow.AppliedAt = &at
	}
	if rev.Hash != "" && strings.Contains(applied, rev.Hash) {
		return fmt.Sprintf("%s applied %s, the revision kdrift compares", a.Origin.Engine, applied), ow
	}
	ow.Behind = true
	when := ""
	if ow.AppliedAt != nil {
		when = " at " + ow.AppliedAt.Format("2006-01-02 15:04:05 UTC")
	}
	return fmt.Sprintf("%s applied %s%s; Git is at %s (%s): until %s applies it, what differs is waiting for it", a.Origin.Engine, shortRevision(applied), when, rev.Short(), ref, a.Origin.Engine), ow
}

// shortRevision is a revision as an owner records it with its commit
// hashes cut to 7 characters: "c99a92c", "main@sha1:3f2a1b2".
func shortRevision(r string) string {
	parts := strings.Split(r, ", ")
	for i, p := range parts {
		at := strings.LastIndexAny(p, ":@") + 1
		if h := p[at:]; len(h) == 40 && strings.Trim(h, "0123456789abcdef") == "" {
			parts[i] = p[:at] + h[:7]
		}
	}
	return strings.Join(parts, ", ")
}

// followsOther reports whether a declaration that follows revision f
// (targetRevision) follows something else than branch, whose head is
// hash: another branch, a tag, another commit. HEAD is taken for the
// branch kdrift reads.
func followsOther(f, branch, hash string) bool {
	switch {
	case f == "", f == "HEAD", f == branch, f == "refs/heads/"+branch:
		return false
	case len(f) >= 7 && strings.HasPrefix(hash, f):
		return false
	}
	return true
}
