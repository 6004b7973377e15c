package engine

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/source"
)

// The Flux kinds whose live objects name the cluster folder. kdrift only
// lists them; it never writes them.
var (
	fluxKustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	fluxGitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	fluxHelmReleaseGVK   = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}
)

// fluxBootstrap is the Kustomization `flux bootstrap` creates; its
// spec.path is the cluster folder.
const fluxBootstrap = "flux-system/flux-system"

// liveFluxTimeout bounds the read of the live Flux objects: a cluster
// that does not answer costs one start this long at most, and discovery
// then follows Git alone.
const liveFluxTimeout = 10 * time.Second

// maxLiveFluxObjects bounds how many Kustomizations or GitRepositories
// one list takes (one page): a cluster with more is read in part.
const maxLiveFluxObjects = 5000

// flagCluster is the cluster folder --cluster-path names; nil when empty.
func flagCluster(p string) *app.FluxCluster {
	if strings.TrimSpace(p) == "" {
		return nil
	}
	return &app.FluxCluster{Path: p, From: "--cluster-path"}
}

// resolveFlux, once per engine, reads the destination cluster's live Flux
// objects when the tree declares Flux Kustomizations and no cluster
// folder was named, and makes discovery follow the folder the live
// bootstrap Kustomization applies. A cluster without Flux, or that
// cannot be read, leaves discovery to Git alone (FluxNote says why).
func (e *core) resolveFlux(ctx context.Context, rev source.Revision) {
	e.fluxOnce.Do(func() {
		if e.opts.ClusterPath != "" {
			return
		}
		snap, err := e.repo.Snapshot(rev.Hash)
		if err != nil || snap.Apps().Flux == nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, liveFluxTimeout)
		defer cancel()
		fc, repos, note := e.liveFlux(ctx)
		e.mu.Lock()
		e.fluxNote, e.fluxRepos = note, repos
		e.mu.Unlock()
		if fc != nil {
			e.repo.SetFlux(fc)
		}
	})
}

// liveFlux reads the live Kustomizations and GitRepositories of the
// destination context and returns the cluster folder they name, or nil
// and why not ("" when the cluster runs no Flux), with the live
// GitRepositories' URLs and refs by NAMESPACE/NAME (nil when not read).
func (e *core) liveFlux(ctx context.Context) (*app.FluxCluster, *app.FluxCluster, string) {
	cs, err := e.clients.For(e.opts.Context)
	if err != nil {
		return nil, nil, "Flux's live objects not read: " + err.Error()
	}
	ks, err := listFlux(ctx, cs, fluxKustomizationGVK)
	if err != nil || ks == nil {
		if err != nil {
			return nil, nil, fmt.Sprintf("Flux's live Kustomizations not read on context %q: %v", cs.Context, err)
		}
		return nil, nil, ""
	}
	grs, err := listFlux(ctx, cs, fluxGitRepositoryGVK)
	if err != nil {
		return nil, nil, fmt.Sprintf("Flux's live GitRepositories not read on context %q: %v", cs.Context, err)
	}
	repos := liveGitRepositories(grs)
	fc, note := entryPath(ks, repos, e.repo.SameRepo, e.repo.ReadBranch())
	if fc == nil {
		return nil, repos, fmt.Sprintf("Flux runs on context %q, but %s", cs.Context, note)
	}
	fc.From = fmt.Sprintf("%s on context %q", fc.From, cs.Context)
	return fc, repos, ""
}

// liveGitRepositories are the URLs and refs of the live GitRepositories
// grs, by NAMESPACE/NAME.
func liveGitRepositories(grs []unstructured.Unstructured) *app.FluxCluster {
	out := &app.FluxCluster{Repos: map[string]string{}, Refs: map[string]string{}}
	for _, g := range grs {
		key := g.GetNamespace() + "/" + g.GetName()
		out.Repos[key], _, _ = unstructured.NestedString(g.Object, "spec", "url")
		ref, _, _ := unstructured.NestedMap(g.Object, "spec", "ref")
		if r := app.GitRefOf(ref); r != "" {
			out.Refs[key] = r
		}
	}
	return out
}

// entryPath picks the cluster folder among the live Kustomizations ks
// that read this repository at the branch kdrift reads (sameRepo of
// their GitRepository's URL in repos, app.SameBranch of its ref): the
// bootstrap Kustomization's spec.path, or the only one's. Without one it
// says why.
func entryPath(ks []unstructured.Unstructured, live *app.FluxCluster, sameRepo func(string) bool, branch string) (*app.FluxCluster, string) {
	repos := live.Repos
	type entry struct{ key, path string }
	var ours []entry
	var elsewhere []string // of this repository, at another ref
	for _, k := range ks {
		kind, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "kind")
		name, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "name")
		ns, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "namespace")
		if kind != "GitRepository" {
			continue
		}
		if ns == "" {
			ns = k.GetNamespace()
		}
		if u, ok := repos[ns+"/"+name]; !ok || !sameRepo(u) {
			continue
		}
		if ref := live.Refs[ns+"/"+name]; !app.SameBranch(ref, branch) {
			elsewhere = append(elsewhere, fmt.Sprintf("%s/%s (%s)", k.GetNamespace(), k.GetName(), app.DescribeRef(ref)))
			continue
		}
		p, _, _ := unstructured.NestedString(k.Object, "spec", "path")
		p = path.Clean(strings.Trim(strings.TrimPrefix(strings.TrimSpace(p), "./"), "/"))
		if p == "" {
			p = "."
		}
		ours = append(ours, entry{k.GetNamespace() + "/" + k.GetName(), p})
	}
	if len(ours) == 0 {
		if len(elsewhere) > 0 {
			sort.Strings(elsewhere)
			return nil, fmt.Sprintf("no live Kustomization reads branch %s of this repository (%s read other refs of it)", branch, strings.Join(elsewhere, ", "))
		}
		return nil, "no live Kustomization reads this repository"
	}
	sort.Slice(ours, func(i, j int) bool { return ours[i].key < ours[j].key })
	for _, o := range ours {
		if o.key == fluxBootstrap {
			return &app.FluxCluster{Path: o.path, From: "the live Kustomization " + o.key, Repos: repos, Refs: live.Refs}, ""
		}
	}
	if len(ours) == 1 {
		return &app.FluxCluster{Path: ours[0].path, From: "the live Kustomization " + ours[0].key, Repos: repos, Refs: live.Refs}, ""
	}
	keys := make([]string, len(ours))
	for i, o := range ours {
		keys[i] = o.key
	}
	return nil, fmt.Sprintf("%d live Kustomizations read this repository (%s) and none is %s; pass --cluster-path", len(ours), strings.Join(keys, ", "), fluxBootstrap)
}

// listFlux lists the live objects of one Flux kind in every namespace, or
// in flux-system alone when the cluster refuses the wider list; nil
// without error when the kind is not served (no Flux there).
func listFlux(ctx context.Context, cs *live.ClientSet, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	m, err := cs.Mapping(ctx, gvk)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	opts := metav1.ListOptions{Limit: maxLiveFluxObjects}
	list, err := cs.Dynamic.Resource(m.Resource).List(ctx, opts)
	if apierrors.IsForbidden(err) {
		list, err = cs.Dynamic.Resource(m.Resource).Namespace("flux-system").List(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	if list.Items == nil {
		return []unstructured.Unstructured{}, nil
	}
	return list.Items, nil
}

// FluxCluster says which Flux cluster folder discovery follows and how it
// was chosen ("clusters/production (from --cluster-path)"), or why the
// live Flux objects were not used; "" when the repository declares no
// Flux Kustomization. It is known after the first pass.
func (e *core) FluxCluster() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.apps.Flux
	switch {
	case l == nil:
		return ""
	case l.ClusterPath != "":
		s := fmt.Sprintf("Flux cluster folder %s (from %s)", l.ClusterPath, l.From)
		if l.Left > 0 {
			s += fmt.Sprintf("; %d Flux declarations of other folders left out", l.Left)
		}
		return s
	case e.fluxNote != "":
		return "Flux: every cluster folder of the repository is read (" + e.fluxNote + ")"
	case len(l.Candidates) > 1:
		return "Flux: every cluster folder of the repository is read; pass --cluster-path with one of " + strings.Join(l.Candidates, ", ")
	}
	return ""
}

// withLiveFlux is apps plus the live Flux Kustomizations and
// HelmReleases of lists (as readFluxApplied listed them: no other
// request) that come from this repository and that Git does not declare
// (app.LiveKustomizations, app.LiveHelmReleases), and from, where the
// list came from, with them counted.
func (e *core) withLiveFlux(apps app.LoadResult, snap *source.Snapshot, lists liveFluxLists, from string) (app.LoadResult, string) {
	if lists.kustomizations == nil {
		return apps, from
	}
	e.mu.Lock()
	repos := e.fluxRepos
	e.mu.Unlock()
	if repos == nil {
		// A cluster folder named by --cluster-path: the live
		// GitRepositories still say which repository and branch a live
		// Kustomization reads, and another repository's bootstrap
		// GitRepository is not this one.
		repos = lists.repos
	}
	res, ks := snap.WithLiveKustomizations(apps, lists.kustomizations, repos, lists.context)
	res, hrs := snap.WithLiveHelmReleases(res, lists.helmReleases, repos, lists.context)
	var added []string
	for _, c := range []struct {
		n    int
		kind string
	}{{ks, "Kustomization"}, {hrs, "HelmRelease"}} {
		switch {
		case c.n == 1:
			added = append(added, "1 live Flux "+c.kind)
		case c.n > 1:
			added = append(added, fmt.Sprintf("%d live Flux %ss", c.n, c.kind))
		}
	}
	if len(added) == 0 {
		return res, from
	}
	return res, fmt.Sprintf("%s; %s on context %q that Git does not declare", from, strings.Join(added, " and "), lists.context)
}

// ResolveApps reads Git's head (fetching first) and the live objects, as
// the first pass does, and says how the apps were found beyond Git
// alone: the Flux cluster folder discovery follows and the apps only
// live objects declare. Actions take them, so that every action takes
// every app `status` lists.
func (e *core) ResolveApps(ctx context.Context) (*app.FluxCluster, []app.App, error) {
	if err := e.loadHead(ctx, true); err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var liveOnly []app.App
	for _, a := range e.apps.Apps {
		if a.Origin != nil && a.Origin.Live {
			liveOnly = append(liveOnly, a)
		}
	}
	return e.repo.Flux(), liveOnly, nil
}
