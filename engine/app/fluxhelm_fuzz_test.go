package app

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	yaml3 "gopkg.in/yaml.v3"
)

// FuzzFluxHelmRelease: whatever a HelmRelease that a Kustomization renders
// holds, it is an App that renders a chart folder of the repository under
// a release name Helm takes, or an Invalid entry whose error is an *Error;
// never a panic.
func FuzzFluxHelmRelease(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: p, namespace: n}\nspec:\n  chart: {spec: {chart: ./c, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}, valuesFiles: [c/values.yaml]}}\n  values: {a: [1, {b: c}]}\n  targetNamespace: t\n  install: {crds: Skip}\n  driftDetection: {mode: enabled, ignore: [{paths: [/spec/replicas], target: {kind: Deployment}}]}\n  postRenderers: [{kustomize: {patches: [{patch: 'x: y', target: {kind: D}}], images: [{name: i, newTag: t}]}}]\n",
		"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: " + strings.Repeat("long", 20) + "}\nspec: {targetNamespace: " + strings.Repeat("ns", 20) + ", chart: {spec: {chart: c, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}}}\n",
		"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: p}\nspec: {chartRef: {kind: OCIRepository, name: o}}\n",
		"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: p}\nspec: {chart: {spec: {chart: ../../etc, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}}, valuesFrom: [{kind: Secret}]}\n",
		"apiVersion: helm.toolkit.fluxcd.io/v2beta1\nkind: HelmRelease\nmetadata: {name: p}\nspec: 3\n",
	} {
		f.Add(seed)
	}
	fsys := fstest.MapFS{
		"c/Chart.yaml":  {Data: []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")},
		"c/values.yaml": {Data: []byte("a: 1\n")},
	}
	repos := map[string]gitRepository{FluxBootstrapRepo: {self: true}}
	f.Fuzz(func(t *testing.T, data string) {
		var root yaml3.Node
		if len(data) > 1<<16 || yaml3.Unmarshal([]byte(data), &root) != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml3.MappingNode {
			return
		}
		got := fluxHelmApp(fsys, pendingKustomization{body: root.Content[0], generatedBy: "apps", from: "apps", helm: true}, repos, nil, "")
		switch {
		case got.app != nil:
			h := got.app.RenderHelm()
			remote := got.app.Spec.Chart != nil && strings.HasPrefix(got.app.Spec.Path, RemoteChartRoot+"/")
			if (got.app.Spec.Path != "c" && !remote) || h.ReleaseName == "" || len(h.ReleaseName) > maxReleaseName || got.app.Origin == nil {
				t.Fatalf("app %+v renders as %+v", got.app.Spec, h)
			}
		case got.invalid != nil:
			var e *Error
			if !errors.As(got.invalid.Err, &e) {
				t.Fatalf("%T is not an *Error", got.invalid.Err)
			}
		default:
			t.Fatal("neither an app nor an invalid entry")
		}
	})
}
