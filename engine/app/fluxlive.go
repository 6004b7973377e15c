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
	declared := map[string]gitRepository{}
	for k, u := range res.Flux.Repos {
		declared[k] = gitRepository{url: u, file: "the GitRepository " + k + " of this repository"}
	}
	known := withClusterRepos(declared, &FluxCluster{Path: res.Flux.ClusterPath, Repos: repos})
	return addLive(res, live, context, "Kustomization", func(obj map[string]any) (found, bool) {
		kind, _, _ := unstructured.NestedString(obj, "spec", "sourceRef", "kind")
		name, _, _ := unstructured.NestedString(obj, "spec", "sourceRef", "name")
		ns, _, _ := unstructured.NestedString(obj, "spec", "sourceRef", "namespace")
		own, _, _ := unstructured.NestedString(obj, "metadata", "namespace")
		if kind != "GitRepository" {
			return found{}, false
		}
		full, repo, ok := fluxGitRepository(ns, name, own, known)
		if !ok || repo.foreign(full, opts.SameRepo) != "" {
			return found{}, false
		}
		node, ok := liveDocument("kustomize.toolkit.fluxcd.io/v1", "Kustomization", obj)
		if !ok {
			return found{}, false
		}
		return fluxApp(fsys, pendingKustomization{body: node}, known, nil, opts.SameRepo), true
	})
}
