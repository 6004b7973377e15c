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
		"bucket":        {"chart:\n    spec:\n      chart: podinfo\n      version: 6.x\n      sourceRef: {kind: Bucket, name: podinfo}\n", `spec.chart.spec.sourceRef.kind: is "Bucket" (podinfo, chart podinfo 6.x): kdrift reads charts from a GitRepository of this repository or a HelmRepository`},
		"chartref kind": {"chartRef: {kind: GitRepository, name: podinfo}\n", `spec.chartRef.kind: is "GitRepository"; Flux takes a chart from an OCIRepository, a HelmChart or an ExternalArtifact`},
		"no chart name": {"chart:\n    spec:\n      sourceRef: {kind: HelmRepository, name: podinfo}\n", "spec.chart.spec.chart: is missing"},
		"valuesfrom":    {"chart:\n    spec:\n      chart: ./charts/podinfo\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n  valuesFrom: [{kind: Bucket, name: values}]\n", `spec.valuesFrom[0].kind: is "Bucket"; Flux takes values from a ConfigMap or a Secret`},
		"postrenderer":  {"chart:\n    spec:\n      chart: ./charts/podinfo\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n  postRenderers: [{kustomize: {patches: [{patch: ''}]}}]\n", "spec.postRenderers[0].kustomize.patches[0].patch: is missing"},
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

// TestFluxHelmReleaseRemoteChart: a HelmRelease whose chart is in a Helm
// repository or an OCI registry is an app whose chart is remote, named by
// its Flux source (never by a URL the repository gives), with the version
// it asks for; its values files are the chart's own.
func TestFluxHelmReleaseRemoteChart(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		spec string
		want app.RemoteChart
	}{
		"helmrepository": {"chart:\n    spec:\n      chart: podinfo\n      version: 6.x\n      valuesFiles: [values-prod.yaml]\n      sourceRef: {kind: HelmRepository, name: podinfo, namespace: flux-system}\n",
			app.RemoteChart{SourceKind: "HelmRepository", SourceNamespace: "flux-system", SourceName: "podinfo", Chart: "podinfo", Version: "6.x", HelmChart: "podinfo-podinfo"}},
		"no version": {"chart:\n    spec:\n      chart: podinfo\n      sourceRef: {kind: HelmRepository, name: podinfo}\n",
			app.RemoteChart{SourceKind: "HelmRepository", SourceNamespace: "podinfo", SourceName: "podinfo", Chart: "podinfo", Version: "*", HelmChart: "podinfo-podinfo"}},
		"ocirepository": {"chartRef: {kind: OCIRepository, name: podinfo}\n",
			app.RemoteChart{SourceKind: "OCIRepository", SourceNamespace: "podinfo", SourceName: "podinfo"}},
		"helmchart": {"chartRef: {kind: HelmChart, name: shared, namespace: flux-system}\n",
			app.RemoteChart{SourceKind: "HelmChart", SourceNamespace: "flux-system", SourceName: "shared", HelmChart: "shared"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			files := fluxtest.ReferenceLayout("https://github.com/example/gitops", "podinfo")
			files["apps/base/podinfo/release.yaml"] = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo, namespace: podinfo}\nspec:\n  " + c.spec
			res := discoverWith(t, files, source.Options{Flux: &app.FluxCluster{Path: "clusters/staging", From: "--cluster-path"}})
			pi, ok := res.Find("podinfo")
			if !ok {
				t.Fatalf("no app: %+v", res.Invalid)
			}
			if pi.Spec.Chart == nil || *pi.Spec.Chart != c.want {
				t.Fatalf("chart: %+v, want %+v", pi.Spec.Chart, c.want)
			}
			if pi.Spec.Path != "@charts/helmrelease/podinfo/podinfo" {
				t.Fatalf("path %q", pi.Spec.Path)
			}
			if name == "helmrepository" && (pi.Spec.Helm == nil || len(pi.Spec.Helm.ValueFiles) != 1 || pi.Spec.Helm.ValueFiles[0] != "values-prod.yaml") {
				t.Fatalf("values files are the chart's: %+v", pi.Spec.Helm)
			}
		})
	}
}

// TestFluxHelmReleaseCommittedSource: the HelmRepository or OCIRepository
// a HelmRelease names is kept as Git declares it (URL, type, ref), for a
// cluster that has no live source of that name; one the release's own
// render yields wins over another file's, and declarations that still
// disagree are a conflict, never a guess.
func TestFluxHelmReleaseCommittedSource(t *testing.T) {
	t.Parallel()
	const helmRepo = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: podinfo, namespace: podinfo}\nspec: {url: URL, type: TYPE}\n"
	const ociRepo = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: podinfo, namespace: podinfo}\nspec:\n  url: oci://ghcr.io/stefanprodan/charts/podinfo\n  ref: {tag: 6.7.1, digest: 'sha256:abcd'}\n"
	const byRelease = "generated by apps (apps/staging)"
	cases := map[string]struct {
		spec   string
		source string // in apps/base/podinfo/source.yaml, rendered with the release
		other  string // in infrastructure/sources.yaml, outside any render
		want   app.CommittedSource
	}{
		"helmrepository": {
			spec:   "chart:\n    spec: {chart: podinfo, version: 6.7.1, sourceRef: {kind: HelmRepository, name: podinfo}}\n",
			source: strings.NewReplacer("URL", "https://stefanprodan.github.io/podinfo", "TYPE", "default").Replace(helmRepo),
			want:   app.CommittedSource{URL: "https://stefanprodan.github.io/podinfo", Type: "default", File: byRelease},
		},
		"oci helmrepository": {
			spec:   "chart:\n    spec: {chart: podinfo, version: 6.7.1, sourceRef: {kind: HelmRepository, name: podinfo}}\n",
			source: strings.NewReplacer("URL", "oci://ghcr.io/stefanprodan/charts", "TYPE", "oci").Replace(helmRepo),
			want:   app.CommittedSource{URL: "oci://ghcr.io/stefanprodan/charts", Type: "oci", File: byRelease},
		},
		"ocirepository": {
			spec:   "chartRef: {kind: OCIRepository, name: podinfo}\n",
			source: ociRepo,
			want:   app.CommittedSource{URL: "oci://ghcr.io/stefanprodan/charts/podinfo", Tag: "6.7.1", Digest: "sha256:abcd", File: byRelease},
		},
		"only a file": {
			spec:  "chart:\n    spec: {chart: podinfo, version: 6.7.1, sourceRef: {kind: HelmRepository, name: podinfo}}\n",
			other: strings.NewReplacer("URL", "https://charts.example.com", "TYPE", "default").Replace(helmRepo),
			want:  app.CommittedSource{URL: "https://charts.example.com", Type: "default", File: "infrastructure/sources.yaml"},
		},
		"the release's render wins": {
			spec:   "chart:\n    spec: {chart: podinfo, version: 6.7.1, sourceRef: {kind: HelmRepository, name: podinfo}}\n",
			source: strings.NewReplacer("URL", "https://stefanprodan.github.io/podinfo", "TYPE", "default").Replace(helmRepo),
			other:  strings.NewReplacer("URL", "https://charts.example.com", "TYPE", "default").Replace(helmRepo),
			want:   app.CommittedSource{URL: "https://stefanprodan.github.io/podinfo", Type: "default", File: byRelease},
		},
		"none": {
			spec: "chart:\n    spec: {chart: podinfo, version: 6.7.1, sourceRef: {kind: HelmRepository, name: podinfo}}\n",
		},
		"another namespace's": {
			spec:   "chart:\n    spec: {chart: podinfo, version: 6.7.1, sourceRef: {kind: HelmRepository, name: podinfo, namespace: flux-system}}\n",
			source: strings.NewReplacer("URL", "https://stefanprodan.github.io/podinfo", "TYPE", "default").Replace(helmRepo),
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			files := fluxtest.ReferenceLayout("https://github.com/example/gitops", "podinfo")
			files["apps/base/podinfo/release.yaml"] = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo, namespace: podinfo}\nspec:\n  " + c.spec
			if c.source != "" {
				files["apps/base/podinfo/source.yaml"] = c.source
				files["apps/base/podinfo/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [release.yaml, source.yaml]\n"
			}
			if c.other != "" {
				files["infrastructure/sources.yaml"] = c.other
			}
			res := discoverWith(t, files, source.Options{Flux: &app.FluxCluster{Path: "clusters/staging", From: "--cluster-path"}})
			pi, ok := res.Find("podinfo")
			if !ok || pi.Spec.Chart == nil {
				t.Fatalf("no remote chart app: %+v", res.Invalid)
			}
			if pi.Spec.Chart.Committed != c.want {
				t.Fatalf("committed source: %+v, want %+v", pi.Spec.Chart.Committed, c.want)
			}
		})
	}
	t.Run("conflict", func(t *testing.T) {
		t.Parallel()
		decls := []string{
			"apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: podinfo, namespace: podinfo}\nspec: {url: https://a.example.com}\n",
			"apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: podinfo, namespace: podinfo}\nspec: {url: https://b.example.com}\n",
		}
		files := fluxtest.ReferenceLayout("https://github.com/example/gitops", "podinfo")
		files["apps/base/podinfo/release.yaml"] = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo, namespace: podinfo}\nspec:\n  chart:\n    spec: {chart: podinfo, version: 6.7.1, sourceRef: {kind: HelmRepository, name: podinfo}}\n"
		files["infrastructure/a.yaml"], files["infrastructure/b.yaml"] = decls[0], decls[1]
		res := discoverWith(t, files, source.Options{Flux: &app.FluxCluster{Path: "clusters/staging", From: "--cluster-path"}})
		pi, ok := res.Find("podinfo")
		if !ok || pi.Spec.Chart == nil {
			t.Fatalf("no remote chart app: %+v", res.Invalid)
		}
		if got := pi.Spec.Chart.Committed; got.URL != "" || got.Conflict != "Git declares it differently in infrastructure/a.yaml and infrastructure/b.yaml" {
			t.Fatalf("committed source: %+v", got)
		}
	})
}

func names(apps []app.App) []string {
	var out []string
	for _, a := range apps {
		out = append(out, a.Metadata.Name)
	}
	return out
}

// TestFluxArtifactGenerator: Flux 2.7's layout, where each cluster's
// apps Kustomization reads an ExternalArtifact that an ArtifactGenerator
// makes of the repository's apps/ folder. kdrift rebuilds the artifact
// from the revision with the generator's copy rules, renders the
// Kustomization's path inside it and finds the HelmRelease it applies,
// with that environment's values; the list is the same when it is kept
// and read back.
func TestFluxArtifactGenerator(t *testing.T) {
	t.Parallel()
	files := fluxtest.ReferenceLayout("ssh://git@github.com/example/gitops", "podinfo")
	fluxtest.WithArtifactGenerator(files)
	snap := snapshotOf(t, files, source.Options{Flux: &app.FluxCluster{Path: "clusters/production", From: "--cluster-path"}})
	res := snap.Apps()
	for _, in := range res.Invalid {
		t.Errorf("invalid: %s: %v", in.Name, in.Err)
	}
	if got := strings.Join(names(res.Apps), " "); got != "apps flux-system infra-configs podinfo" {
		t.Fatalf("apps of clusters/production: %s", got)
	}
	apps, _ := res.Find("apps")
	if apps.Spec.Path != "@artifacts/flux-system/apps/production" || apps.Spec.Artifact == nil || apps.Spec.Artifact.Generator != "flux-system/apps" {
		t.Fatalf("apps: path %q artifact %+v", apps.Spec.Path, apps.Spec.Artifact)
	}
	files2, _, err := app.BuildArtifact(snap, apps.Spec.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files2["README.md"]; ok {
		t.Fatal("an excluded file is in the artifact")
	}
	if _, ok := files2["production/kustomization.yaml"]; !ok {
		t.Fatalf("artifact files: %v", files2)
	}
	pi, _ := res.Find("podinfo")
	if pi.Origin == nil || pi.Origin.GeneratedBy != "apps" {
		t.Fatalf("podinfo: %+v", pi.Origin)
	}
	objs, err := render.NewRenderer().RenderApp(context.Background(), snap, pi.Spec.Path, pi.RenderHelm())
	if err != nil || len(objs) != 1 {
		t.Fatalf("render podinfo: %v %v", objs, err)
	}
	if objs[0].GetLabels()["env"] != "production" {
		t.Fatalf("podinfo has production's values: %v", objs[0].GetLabels())
	}
}

// TestFluxArtifactGeneratorPerCluster: each cluster folder declares its
// own generator of the same artifact name, copying different folders.
// With a cluster folder, that folder's generator makes the artifact;
// without one, no app is taken and the Error says to pass one.
func TestFluxArtifactGeneratorPerCluster(t *testing.T) {
	t.Parallel()
	files := fluxtest.ReferenceLayout("ssh://git@github.com/example/gitops", "podinfo")
	fluxtest.WithArtifactGenerator(files)
	files["clusters/staging/artifacts.yaml"] = strings.Replace(files["clusters/staging/artifacts.yaml"], `exclude: ["*.md"]`, `exclude: ["*.md", "production/**"]`, 1)
	res := snapshotOf(t, files, source.Options{Flux: &app.FluxCluster{Path: "clusters/staging", From: "--cluster-path"}}).Apps()
	for _, in := range res.Invalid {
		t.Errorf("invalid: %s: %v", in.Name, in.Err)
	}
	apps, ok := res.Find("apps")
	if !ok || apps.Spec.Artifact == nil || len(apps.Spec.Artifact.Copy[0].Exclude) != 2 {
		t.Fatalf("staging's generator must make the artifact: %+v", apps.Spec.Artifact)
	}
	res = discoverWith(t, files, source.Options{})
	if _, ok := res.Find("apps"); ok {
		t.Fatal("without a cluster folder, one of two generators was taken")
	}
	found := false
	for _, in := range res.Invalid {
		found = found || strings.Contains(in.Err.Error(), "pass --cluster-path")
	}
	if !found {
		t.Fatalf("without a cluster folder the Error must say to pass --cluster-path: %+v", res.Invalid)
	}
}
