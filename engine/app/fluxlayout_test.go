package app_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/fluxtest"
)

// TestFluxReferenceLayout: Flux's reference layout declares the same
// Kustomizations in every cluster folder. Without a cluster folder each
// is an Error that says to pass --cluster-path and lists the folders;
// with one, only what that folder reaches is an app, and its HelmRelease
// renders the in-repository chart with that environment's values.
func TestFluxReferenceLayout(t *testing.T) {
	t.Parallel()
	files := fluxtest.ReferenceLayout("ssh://git@github.com/example/gitops", "podinfo")

	res := discoverWith(t, files, source.Options{})
	if len(res.Apps) != 0 {
		t.Fatalf("apps of two clusters were taken as one: %v", names(res.Apps))
	}
	found := false
	for _, in := range res.Invalid {
		msg := in.Err.Error()
		if strings.Contains(msg, "flux-system/apps is declared 2 times") {
			found = true
			if !strings.Contains(msg, "pass --cluster-path with the folder of the cluster to compare: clusters/production, clusters/staging") {
				t.Fatalf("the duplicate must name the fix and the folders: %s", msg)
			}
		}
	}
	if !found || res.Flux == nil || strings.Join(res.Flux.Candidates, ",") != "clusters/production,clusters/staging" {
		t.Fatalf("duplicates not reported: %+v %+v", res.Invalid, res.Flux)
	}

	snap := snapshotOf(t, files, source.Options{Flux: &app.FluxCluster{Path: "./clusters/production/", From: "--cluster-path"}})
	res = snap.Apps()
	for _, in := range res.Invalid {
		t.Errorf("invalid with a cluster folder: %s: %v", in.Name, in.Err)
	}
	if got := strings.Join(names(res.Apps), " "); got != "apps flux-system infra-configs podinfo" {
		t.Fatalf("apps of clusters/production: %s", got)
	}
	if res.Flux.ClusterPath != "clusters/production" || res.Flux.Left == 0 {
		t.Fatalf("layout: %+v", res.Flux)
	}
	pi, _ := res.Find("podinfo")
	if pi.Origin == nil || pi.Origin.Kind != "HelmRelease" || pi.Origin.GeneratedBy != "apps" || pi.Spec.Path != "charts/podinfo" {
		t.Fatalf("podinfo: %+v origin %+v", pi.Spec, pi.Origin)
	}
	h := pi.RenderHelm()
	if h.ReleaseName != "podinfo" || h.Namespace != "podinfo" || h.ValuesObject["environment"] != "production" || !pi.Origin.Heals {
		t.Fatalf("podinfo renders as %+v heals=%v", h, pi.Origin.Heals)
	}
	if len(pi.Spec.IgnoreDifferences) != 1 || pi.Spec.IgnoreDifferences[0].JSONPointers[0] != "/metadata/annotations/ignored-by-flux" {
		t.Fatalf("driftDetection.ignore: %+v", pi.Spec.IgnoreDifferences)
	}
	// The chart renders in the render worker with production's values,
	// then the post renderers' patch and image.
	objs, err := render.NewRenderer().RenderApp(context.Background(), snap, pi.Spec.Path, h)
	if err != nil || len(objs) != 1 {
		t.Fatalf("render podinfo: %v %v", objs, err)
	}
	d := objs[0]
	image := ""
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) == 1 {
		image, _ = containers[0].(map[string]any)["image"].(string)
	}
	replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	if d.GetNamespace() != "podinfo" || d.GetLabels()["env"] != "production" || replicas != 3 ||
		d.GetAnnotations()["post-rendered"] != "true" || image != "ghcr.io/stefanprodan/podinfo:6.7.1" {
		t.Fatalf("podinfo rendered as %v", d.Object)
	}
	apps, _ := res.Find("apps")
	if apps.Spec.Path != "apps/production" {
		t.Fatalf("apps: %+v", apps.Spec)
	}

	res = discoverWith(t, files, source.Options{Flux: &app.FluxCluster{Path: "clusters/prod", From: "--cluster-path"}})
	if len(res.Invalid) == 0 || !strings.Contains(res.Invalid[0].Err.Error(), "cluster folder clusters/prod (from --cluster-path) is not a folder") ||
		!strings.Contains(res.Invalid[0].Err.Error(), "pass one of: clusters/production, clusters/staging") {
		t.Fatalf("a missing cluster folder: %+v", res.Invalid)
	}
}

// TestFluxHelmReleaseUnreadable: a HelmRelease whose chart or values
// come from where kdrift does not read is an Error that names it.
func TestFluxHelmReleaseUnreadable(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ spec, want string }{
		"helmrepository": {"chart:\n    spec:\n      chart: podinfo\n      version: 6.x\n      sourceRef: {kind: HelmRepository, name: podinfo}\n", "spec.chart.spec.sourceRef.kind: is HelmRepository (podinfo, chart podinfo 6.x): kdrift does not fetch charts from a HelmRepository yet"},
		"ocirepository":  {"chartRef: {kind: OCIRepository, name: podinfo}\n", "spec.chartRef: takes the chart from OCIRepository podinfo, which kdrift does not read yet"},
		"valuesfrom":     {"chart:\n    spec:\n      chart: ./charts/podinfo\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n  valuesFrom: [{kind: ConfigMap, name: values}]\n", "spec.valuesFrom: takes values from ConfigMaps and Secrets"},
		"postrenderer":   {"chart:\n    spec:\n      chart: ./charts/podinfo\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n  postRenderers: [{kustomize: {patches: [{patch: ''}]}}]\n", "spec.postRenderers[0].kustomize.patches[0].patch: is missing"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			files := fluxtest.ReferenceLayout("https://github.com/example/gitops", "podinfo")
			files["apps/base/podinfo/release.yaml"] = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo, namespace: podinfo}\nspec:\n  " + c.spec
			res := discoverWith(t, files, source.Options{Flux: &app.FluxCluster{Path: "clusters/staging", From: "--cluster-path"}})
			if _, ok := res.Find("podinfo"); ok {
				t.Fatal("an unreadable HelmRelease became an app")
			}
			for _, in := range res.Invalid {
				if in.Name == "podinfo" && strings.Contains(in.Err.Error(), c.want) {
					return
				}
			}
			t.Fatalf("want %q among %+v", c.want, res.Invalid)
		})
	}
}

func names(apps []app.App) []string {
	var out []string
	for _, a := range apps {
		out = append(out, a.Metadata.Name)
	}
	return out
}
