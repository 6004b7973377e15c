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
	if a.Spec.Chart == nil || *a.Spec.Chart != (RemoteChart{RepoURL: "https://stefanprodan.github.io/podinfo", Chart: "podinfo", Version: "6.5.0"}) ||
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
    path: charts/guestbook`, `spec.sources[1].path: is a second folder to render`},
		{"other repository", `  - repoURL: https://git.example.com/team/gitops.git
    path: charts/guestbook
  - repoURL: https://git.example.com/other/values.git
    ref: values`, `spec.sources[1].repoURL: names another repository (https://git.example.com/other/values.git), which kdrift cannot fetch yet`},
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
