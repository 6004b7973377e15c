package app

import (
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// LiveKustomizations adds to res (the apps of a tree that declares Flux)
// the live Flux Kustomizations (objects as read from the cluster of
// kubeconfig context, "" the current one) whose sourceRef is a
// GitRepository of this repository and that no declaration in the
// repository already gives (one made with `flux create kustomization`):
// each is read exactly like a committed Kustomization, its path from the
// live spec, its origin the cluster. A GitRepository is known by the
// tree's declarations (res.Flux.Repos), the cluster's live ones (repos,
// URL by NAMESPACE/NAME; nil when not read) and, with a cluster folder
// chosen, as the bootstrap one. It returns the new result (res is not
// modified) and how many it added.
func LiveKustomizations(res LoadResult, fsys fs.FS, live []map[string]any, repos map[string]string, context string, opts DiscoverOptions) (LoadResult, int) {
	if res.Flux == nil {
		return res, 0
	}
	known := fluxKnownRepos(res, repos, opts.Flux)
	return addLive(res, live, context, "Kustomization", func(obj map[string]any) (found, bool) {
		if !readsThisRepo(obj, known, opts, "spec", "sourceRef") {
			return found{}, false
		}
		node, ok := liveDocument("kustomize.toolkit.fluxcd.io/v1", "Kustomization", obj)
		if !ok {
			return found{}, false
		}
		return fluxApp(fsys, pendingKustomization{body: node}, known, nil, opts.SameRepo, opts.Branch), true
	})
}

// Labels kustomize-controller puts on what a Kustomization applies.
const (
	fluxAppliedByName      = "kustomize.toolkit.fluxcd.io/name"
	fluxAppliedByNamespace = "kustomize.toolkit.fluxcd.io/namespace"
)

// LiveHelmReleases adds to res (the result of LiveKustomizations) the
// live Flux HelmReleases (read from the cluster of kubeconfig context)
// that no declaration in the repository gives and that come from this
// repository all the same: applied by a Kustomization res holds from the
// cluster only (kustomize-controller's labels name it; Git does not say
// what it renders), or applied by none and with a chart from a
// GitRepository of this repository (made with `flux create
// helmrelease`). One applied by a Kustomization Git declares is not
// added: Git's render, which does not yield it, is what Flux applies
// next. Each is read like a HelmRelease a render yields, from its live
// spec. It returns the new result and how many it added.
func LiveHelmReleases(res LoadResult, fsys fs.FS, live []map[string]any, repos map[string]string, context string, opts DiscoverOptions) (LoadResult, int) {
	if res.Flux == nil {
		return res, 0
	}
	liveOnly := map[string]bool{}
	for _, a := range res.Apps {
		if o := a.Origin; o != nil && o.Live && o.Engine == EngineFlux && o.Kind == "Kustomization" {
			liveOnly[o.QualifiedName()] = true
		}
	}
	known := fluxKnownRepos(res, repos, opts.Flux)
	return addLive(res, live, context, "HelmRelease", func(obj map[string]any) (found, bool) {
		labels, _, _ := unstructured.NestedStringMap(obj, "metadata", "labels")
		if by := labels[fluxAppliedByName]; by != "" {
			if !liveOnly[labels[fluxAppliedByNamespace]+"/"+by] {
				return found{}, false
			}
		} else if !readsThisRepo(obj, known, opts, "spec", "chart", "spec", "sourceRef") {
			return found{}, false
		}
		node, ok := liveDocument(FluxHelmAPIVersion, "HelmRelease", obj)
		if !ok {
			return found{}, false
		}
		return fluxHelmApp(fsys, pendingKustomization{body: node, helm: true}, known, opts.SameRepo, opts.Branch), true
	})
}

// fluxKnownRepos are the GitRepositories a live Flux declaration may
// name: the tree's (res.Flux.Repos, following res.Flux.Refs), the
// cluster's live ones (repos, following live.Refs when live is not nil)
// and, with a cluster folder chosen and no live one of its name, the
// bootstrap one.
func fluxKnownRepos(res LoadResult, repos map[string]string, live *FluxCluster) map[string]gitRepository {
	declared := map[string]gitRepository{}
	for k, u := range res.Flux.Repos {
		declared[k] = gitRepository{url: u, ref: res.Flux.Refs[k], file: "the GitRepository " + k + " of this repository"}
	}
	fc := &FluxCluster{Path: res.Flux.ClusterPath, Repos: repos}
	if live != nil {
		fc.Refs = live.Refs
	}
	return withClusterRepos(declared, fc)
}

// readsThisRepo reports whether the sourceRef of live Flux object obj
// (at path ref) is a GitRepository of this repository and branch among
// known.
func readsThisRepo(obj map[string]any, known map[string]gitRepository, opts DiscoverOptions, ref ...string) bool {
	field := func(k string) string {
		v, _, _ := unstructured.NestedString(obj, append(append([]string(nil), ref...), k)...)
		return v
	}
	own, _, _ := unstructured.NestedString(obj, "metadata", "namespace")
	if field("kind") != "GitRepository" {
		return false
	}
	full, repo, ok := fluxGitRepository(field("namespace"), field("name"), own, known)
	return ok && repo.foreign(full, opts.SameRepo, opts.Branch) == ""
}
