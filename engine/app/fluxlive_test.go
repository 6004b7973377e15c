package app

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestLiveKustomizations: the live Kustomizations that read this
// repository and that Git does not declare (made with `flux create
// kustomization`) are apps read from their live spec, shown as live;
// those Git declares, those of another repository and those reading an
// artifact are not added. Live HelmReleases are added when a live-only
// Kustomization applied them, or nothing did and their chart is a folder
// of this repository.
func TestLiveKustomizations(t *testing.T) {
	tree := mapTree{fstest.MapFS{
		"clusters/prod/flux-system/gotk-sync.yaml": {Data: []byte(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: https://git.example.com/team/gitops.git}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {path: ./clusters/prod, sourceRef: {kind: GitRepository, name: flux-system}}
`)},
		"clusters/prod/apps.yaml": {Data: []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {path: ./apps/podinfo, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`)},
		"apps/podinfo/deploy.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: podinfo}\n")},
		"apps/web/deploy.yaml":     {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")},
		"charts/web/Chart.yaml":    {Data: []byte("apiVersion: v2\nname: web\nversion: 1.0.0\n")},
	}}
	res := Discover(tree, DiscoverOptions{SameRepo: sameRepo})
	if res.Flux == nil || res.Flux.Repos["flux-system/flux-system"] != "https://git.example.com/team/gitops.git" {
		t.Fatalf("the tree's GitRepositories must be kept: %+v", res.Flux)
	}
	k := func(ns, name, path, kind, refName, refNS string) map[string]any {
		ref := map[string]any{"kind": kind, "name": refName}
		if refNS != "" {
			ref["namespace"] = refNS
		}
		return map[string]any{"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":   map[string]any{"path": path, "prune": true, "sourceRef": ref},
			"status": map[string]any{"lastAppliedRevision": "main@sha1:0123"}}
	}
	live := []map[string]any{
		k("flux-system", "apps", "./apps/web", "GitRepository", "flux-system", ""),     // Git declares it
		k("flux-system", "web", "./apps/web", "GitRepository", "flux-system", ""),      // added
		k("team", "apps", "./apps/web", "GitRepository", "flux-system", "flux-system"), // added as team/apps
		k("team", "other", "./x", "GitRepository", "other", ""),                        // another repository
		k("team", "unknown", "./x", "GitRepository", "nowhere", ""),                    // a GitRepository nobody declares
		k("flux-system", "art", "./x", "ExternalArtifact", "art", ""),                  // not a GitRepository
		k("flux-system", "bad", "../../etc", "GitRepository", "flux-system", ""),       // an Error, shown as live
	}
	out, added := LiveKustomizations(res, tree, live, map[string]string{"team/other": "https://git.example.com/team/other.git"}, "prod", DiscoverOptions{SameRepo: sameRepo})
	var names []string
	for _, a := range out.Apps {
		names = append(names, a.Metadata.Name)
	}
	if added != 3 || strings.Join(names, ",") != "apps,flux-system,team/apps,web" {
		t.Fatalf("added %d, apps %v, invalid:\n%s", added, appNames(out), invalidText(out))
	}
	web, _ := out.Find("web")
	if o := web.Origin; o == nil || !o.Live || o.LiveContext != "prod" || o.Engine != EngineFlux || o.Where() != "live in the cluster of context prod (not in Git)" || web.Spec.Path != "apps/web" || !web.Spec.SyncPolicy.Prune {
		t.Fatalf("web: %+v origin %+v", web.Spec, web.Origin)
	}
	if apps, _ := out.Find("apps"); apps.Origin.Live || apps.Spec.Path != "apps/podinfo" {
		t.Fatalf("Git's declaration wins: %+v", apps.Spec)
	}
	bad, ok := out.FindInvalid("bad")
	if !ok || bad.File != "live in the cluster of context prod (not in Git)" || !strings.Contains(bad.Err.Error(), "spec.path") {
		t.Fatalf("a live Kustomization kdrift cannot read is an Error shown as live:\n%s", invalidText(out))
	}
	if out.Flux == nil || len(res.Apps) != 2 {
		t.Fatalf("res must be left as it is and its Flux layout kept: %d apps, %+v", len(res.Apps), out.Flux)
	}

	// HelmReleases: those a live-only Kustomization applied, and those
	// nothing applied whose chart is a folder of this repository.
	hr := func(name, by, kind, chart string) map[string]any {
		md := map[string]any{"name": name, "namespace": "team"}
		if by != "" {
			md["labels"] = map[string]any{"kustomize.toolkit.fluxcd.io/name": by, "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
		}
		return map[string]any{"metadata": md, "spec": map[string]any{"chart": map[string]any{"spec": map[string]any{
			"chart": chart, "version": "1.2.0", "sourceRef": map[string]any{"kind": kind, "name": "flux-system", "namespace": "flux-system"}}}}}
	}
	releases := []map[string]any{
		hr("cache", "web", "HelmRepository", "cache"),         // applied by the live-only web
		hr("podinfo", "apps", "HelmRepository", "podinfo"),    // applied by apps, which Git declares
		hr("chart", "", "GitRepository", "./charts/web"),      // flux create helmrelease, from this repository
		hr("remote", "", "HelmRepository", "remote"),          // nothing says which repository it is of
		hr("elsewhere", "other", "HelmRepository", "podinfo"), // applied by a Kustomization of another repository
	}
	out, added = LiveHelmReleases(out, tree, releases, nil, "prod", DiscoverOptions{SameRepo: sameRepo})
	names = nil
	for _, a := range out.Apps {
		names = append(names, a.Metadata.Name)
	}
	if added != 2 || strings.Join(names, ",") != "apps,cache,chart,flux-system,team/apps,web" {
		t.Fatalf("added %d, apps %v, invalid:\n%s", added, names, invalidText(out))
	}
	if c, _ := out.Find("cache"); c.Spec.Chart == nil || c.Spec.Chart.SourceKind != "HelmRepository" || !c.Origin.Live {
		t.Fatalf("cache: %+v %+v", c.Spec.Chart, c.Origin)
	}
	if c, _ := out.Find("chart"); c.Spec.Path != "charts/web" || c.Spec.Chart != nil || !c.Origin.Live || c.Origin.Kind != "HelmRelease" {
		t.Fatalf("chart: path %q %+v", c.Spec.Path, c.Origin)
	}
}
