package app

import (
	"strings"
	"testing"
	"testing/fstest"
)

// multiSource is an Application whose chart and values both live in this
// repository, the values through a ref source.
func multiSource(sources string) mapTree {
	return mapTree{fstest.MapFS{
		"argocd/app.yaml": {Data: []byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec:
  project: default
  sources:
` + sources + `
  destination: {server: https://kubernetes.default.svc, namespace: guestbook}
`)},
		"charts/guestbook/Chart.yaml":          {Data: []byte("apiVersion: v2\nname: guestbook\nversion: 1.0.0\n")},
		"charts/guestbook/templates/cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")},
		"envs/prod/values.yaml":                {Data: []byte("replicas: 3\n")},
		"charts/guestbook/values.yaml":         {Data: []byte("replicas: 1\n")},
		"envs/prod/argocd-values-readme.txt":   {Data: []byte("x")},
		"envs/prod/unrelated/kustomization.md": {Data: []byte("x")},
	}}
}

func TestArgoMultiSourceValuesRef(t *testing.T) {
	res := Discover(multiSource(`  - repoURL: https://git.example.com/team/gitops.git
    targetRevision: HEAD
    path: charts/guestbook
    helm:
      valueFiles: [$values/envs/prod/values.yaml, values.yaml]
  - repoURL: https://git.example.com/team/gitops
    targetRevision: HEAD
    ref: values`), DiscoverOptions{SameRepo: sameRepo})
	a, ok := res.Find("guestbook")
	if !ok || len(res.Invalid) != 0 {
		t.Fatalf("the app must be read:\n%s", invalidText(res))
	}
	if a.Spec.Path != "charts/guestbook" || a.Spec.Helm == nil || strings.Join(a.Spec.Helm.ValueFiles, ",") != "/envs/prod/values.yaml,values.yaml" {
		t.Fatalf("path %q helm %+v", a.Spec.Path, a.Spec.Helm)
	}
}

// TestArgoMultiSourceRemoteChart: a chart of a Helm repository paired
// with values kept in this repository (a ref source) is an app with a
// remote chart whose $values files are read from this repository's root.
func TestArgoMultiSourceRemoteChart(t *testing.T) {
	res := Discover(multiSource(`  - repoURL: https://stefanprodan.github.io/podinfo
    chart: podinfo
    targetRevision: 6.5.0
    helm: {valueFiles: [$values/envs/prod/values.yaml, values-small.yaml]}
  - repoURL: https://git.example.com/team/gitops.git
    ref: values`), DiscoverOptions{SameRepo: sameRepo})
	a, ok := res.Find("guestbook")
	if !ok || len(res.Invalid) != 0 {
		t.Fatalf("the app must be read:\n%s", invalidText(res))
	}
	if a.Spec.Chart == nil || *a.Spec.Chart != (RemoteChart{RepoURL: "https://stefanprodan.github.io/podinfo", Chart: "podinfo", Version: "6.5.0", ArgoSource: 1}) ||
		a.Spec.Helm == nil || strings.Join(a.Spec.Helm.ValueFiles, ",") != "/envs/prod/values.yaml,values-small.yaml" {
		t.Fatalf("chart %+v helm %+v", a.Spec.Chart, a.Spec.Helm)
	}
}

func TestArgoMultiSourceRefusals(t *testing.T) {
	for _, c := range []struct{ name, sources, want string }{
		{"chart and path", `  - repoURL: https://stefanprodan.github.io/podinfo
    chart: podinfo
    targetRevision: 6.5.0
  - repoURL: https://git.example.com/team/gitops.git
    path: charts/guestbook`, `spec.sources[1].path: is a second folder to render (after spec.sources[0])`},
		{"two charts", `  - repoURL: https://stefanprodan.github.io/podinfo
    chart: podinfo
    targetRevision: 6.5.0
  - repoURL: registry.example.com/charts
    chart: redis
    targetRevision: 1.0.0`, `spec.sources[1].chart: is a second thing to render (after spec.sources[0])`},
		{"values outside the repository", `  - repoURL: https://stefanprodan.github.io/podinfo
    chart: podinfo
    targetRevision: 6.5.0
    helm: {valueFiles: [$values/envs/../../../etc/passwd]}
  - repoURL: https://git.example.com/team/gitops.git
    ref: values`, `spec.sources[0].helm.valueFiles[0]: "$values/envs/../../../etc/passwd" leaves the repository of ref "values"`},
		{"values names no file", `  - repoURL: https://stefanprodan.github.io/podinfo
    chart: podinfo
    targetRevision: 6.5.0
    helm: {valueFiles: [$values/envs/..]}
  - repoURL: https://git.example.com/team/gitops.git
    ref: values`, `names no file`},
		{"ref of another repository", `  - repoURL: https://stefanprodan.github.io/podinfo
    chart: podinfo
    targetRevision: 6.5.0
    helm: {valueFiles: [$values/envs/prod/values.yaml]}
  - repoURL: https://git.example.com/other/values.git
    ref: values`, `spec.sources[1].repoURL: is ref "values" of another repository (https://git.example.com/other/values.git)`},
		{"chart with an unknown ref", `  - repoURL: https://stefanprodan.github.io/podinfo
    chart: podinfo
    targetRevision: 6.5.0
    helm: {valueFiles: [$vals/envs/prod/values.yaml]}
  - repoURL: https://git.example.com/team/gitops.git
    ref: values`, `spec.sources[0].helm.valueFiles[0]: "$vals/envs/prod/values.yaml" names ref "vals"`},
		{"chart with kustomize", `  - repoURL: https://stefanprodan.github.io/podinfo
    chart: podinfo
    targetRevision: 6.5.0
    kustomize: {namePrefix: x-}`, `spec.sources[0].kustomize: is set on a chart source`},
		{"missing values file", `  - repoURL: https://stefanprodan.github.io/podinfo
    chart: podinfo
    targetRevision: 6.5.0
    helm: {valueFiles: [$values/envs/staging/values.yaml]}
  - repoURL: https://git.example.com/team/gitops.git
    ref: values`, `envs/staging/values.yaml does not exist in this revision`},
		{"other repository", `  - repoURL: https://git.example.com/team/gitops.git
    path: charts/guestbook
    helm: {valueFiles: [$values/envs/prod/values.yaml]}
  - repoURL: https://git.example.com/other/values.git
    ref: values`, `spec.sources[1].repoURL: is ref "values" of another repository (https://git.example.com/other/values.git)`},
		{"folder of another repository", `  - repoURL: https://git.example.com/team/gitops.git
    path: charts/guestbook
  - repoURL: https://git.example.com/other/values.git
    path: envs`, `spec.sources[1].repoURL: names another repository (https://git.example.com/other/values.git), which kdrift cannot fetch yet`},
		{"nothing to say", `  - repoURL: https://git.example.com/team/gitops.git
    path: charts/guestbook
  - repoURL: https://git.example.com/team/gitops.git
    targetRevision: main`, `spec.sources[1]: has no path, chart or ref`},
		{"unknown ref", `  - repoURL: https://git.example.com/team/gitops.git
    path: charts/guestbook
    helm: {valueFiles: [$vals/envs/prod/values.yaml]}`, `names ref "vals", which no source of spec.sources declares`},
		{"two paths", `  - repoURL: https://git.example.com/team/gitops.git
    path: charts/guestbook
  - repoURL: https://git.example.com/team/gitops.git
    path: envs/prod`, `spec.sources[1].path: is a second folder to render`},
		{"no path", `  - repoURL: https://git.example.com/team/gitops.git
    ref: values`, `has no source with a path or a chart`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Discover(multiSource(c.sources), DiscoverOptions{SameRepo: sameRepo})
			in, ok := res.FindInvalid("guestbook")
			if !ok || len(res.Apps) != 0 || !strings.Contains(in.Err.Error(), c.want) {
				t.Fatalf("want an Error with %q; apps %v invalid:\n%s", c.want, appNames(res), invalidText(res))
			}
		})
	}
}

// TestArgoMultiSourceChartFull: the usual pairing, the chart second-to-
// last and an OCI registry written without a scheme, every helm setting
// Argo CD gives a chart source kept.
func TestArgoMultiSourceChartFull(t *testing.T) {
	res := Discover(multiSource(`  - repoURL: https://git.example.com/team/gitops
    targetRevision: main
    ref: values
  - repoURL: registry.example.com/charts
    chart: podinfo
    targetRevision: 6.5.*
    helm:
      releaseName: web
      valueFiles: [$values/envs//prod/./values.yaml]
      valuesObject: {replicaCount: 4}
      parameters: [{name: image.tag, value: "6.5.4"}]`), DiscoverOptions{SameRepo: sameRepo})
	a, ok := res.Find("guestbook")
	if !ok || len(res.Invalid) != 0 {
		t.Fatalf("the app must be read:\n%s", invalidText(res))
	}
	c, h := a.Spec.Chart, a.Spec.Helm
	if c == nil || *c != (RemoteChart{RepoURL: "oci://registry.example.com/charts", Chart: "podinfo", Version: "6.5.*", ArgoSource: 2}) || a.Spec.Path != RemoteChartPath("Application", "argocd", "guestbook") {
		t.Fatalf("chart %+v path %q", c, a.Spec.Path)
	}
	if h == nil || h.ReleaseName != "web" || strings.Join(h.ValueFiles, ",") != "/envs/prod/values.yaml" || len(h.Parameters) != 1 || h.ValuesObject == nil {
		t.Fatalf("helm %+v", h)
	}
}

// TestArgoSyncedRevision: the version Argo CD last synced is the one of
// the chart's own source, never another source's commit.
func TestArgoSyncedRevision(t *testing.T) {
	live := func(st map[string]any) string {
		return argoCDTool{}.Applied(map[string]any{"status": map[string]any{"sync": st}})
	}
	multi := live(map[string]any{"revisions": []any{"6.5.4", "3f2a9c0e1b2d3f4a5b6c7d8e9f0a1b2c3d4e5f6a"}})
	for _, c := range []struct {
		applied    string
		source     int
		want, from string
	}{
		{multi, 1, "6.5.4", "status.sync.revisions[0]"},
		{multi, 2, "3f2a9c0e1b2d3f4a5b6c7d8e9f0a1b2c3d4e5f6a", "status.sync.revisions[1]"},
		{multi, 3, "", "status.sync.revisions[2]"},
		{"", 1, "", "status.sync.revisions[0]"},
		{live(map[string]any{"revision": "1.2.0"}), 0, "1.2.0", "status.sync.revision"},
	} {
		got, from := (&RemoteChart{ArgoSource: c.source}).ArgoSynced(c.applied)
		if got != c.want || from != c.from {
			t.Errorf("source %d of %q: %q from %s, want %q from %s", c.source, c.applied, got, from, c.want, c.from)
		}
	}
}

// TestArgoMultiSourceUnusedForeignRef: a ref source of another
// repository that no values file reads changes nothing kdrift renders.
func TestArgoMultiSourceUnusedForeignRef(t *testing.T) {
	res := Discover(multiSource(`  - repoURL: https://git.example.com/team/gitops.git
    path: charts/guestbook
    helm: {valueFiles: [$values/envs/prod/values.yaml]}
  - repoURL: https://git.example.com/team/gitops.git
    ref: values
  - repoURL: https://git.example.com/other/config.git
    ref: config`), DiscoverOptions{SameRepo: sameRepo})
	if a, ok := res.Find("guestbook"); !ok || a.Spec.Path != "charts/guestbook" {
		t.Fatalf("the app must be read:\n%s", invalidText(res))
	}
}
