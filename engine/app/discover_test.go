package app_test

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
)

// ArgoApplication is a literal Application with comments, as a team keeps
// it; its repoURL is this repository in another spelling.
const ArgoApplication = `# The guestbook, deployed by Argo CD.
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://GitHub.com/example/gitops.git/  # same repository
    targetRevision: HEAD
    path: guestbook
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
  syncPolicy:
    automated:
      selfHeal: true # Argo CD heals
      prune: true
  ignoreDifferences:
    - group: apps
      kind: Deployment
      jsonPointers: [/spec/replicas]
    - kind: ConfigMap
      jqPathExpressions: ['.data.cache']
    - managedFieldsManagers: [kube-controller-manager]
`

// FluxSync is Flux's GitRepository and Kustomization for this repository.
const FluxSync = `# Flux syncs the apps folder.
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: ssh://git@github.com/example/gitops
  ref: {branch: main}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: podinfo # the podinfo app
  namespace: flux-system
spec:
  interval: 10m
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: ./podinfo
  prune: true
  targetNamespace: podinfo
  decryption:
    provider: sops
    secretRef:
      name: sops-age
`

func discoverFromGit(t *testing.T, files map[string]string) app.LoadResult {
	t.Helper()
	return discoverWith(t, files, source.Options{})
}

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"

func TestDiscoverArgoAndFlux(t *testing.T) {
	t.Parallel()
	res := discoverFromGit(t, map[string]string{
		"argocd/guestbook.yaml":               ArgoApplication,
		"guestbook/cm.yaml":                   cm,
		"podinfo/cm.yaml":                     cm,
		"clusters/prod/flux-system/gotk.yaml": FluxSync,
	})
	if len(res.Invalid) > 0 {
		t.Fatalf("invalid: %+v", res.Invalid)
	}
	gb, ok := res.Find("guestbook")
	if !ok {
		t.Fatalf("guestbook not discovered: %+v", res)
	}
	if gb.Origin == nil || gb.Origin.Owner() != "Argo CD Application argocd/guestbook" || gb.Origin.File != "argocd/guestbook.yaml" {
		t.Errorf("origin = %+v", gb.Origin)
	}
	if gb.Spec.Path != "guestbook" || gb.Spec.Destination.Namespace != "guestbook" || gb.Spec.Destination.Context != "" {
		t.Errorf("spec = %+v", gb.Spec)
	}
	if !gb.Spec.SyncPolicy.SelfHeal || !gb.Spec.SyncPolicy.Prune || !gb.Origin.Heals {
		t.Errorf("sync policy = %+v", gb.Spec.SyncPolicy)
	}
	if len(gb.Spec.IgnoreDifferences) != 3 || gb.Spec.IgnoreDifferences[1].JQPathExpressions == nil || gb.Spec.IgnoreDifferences[2].ManagedFieldsManagers[0] != "kube-controller-manager" {
		t.Errorf("ignoreDifferences = %+v", gb.Spec.IgnoreDifferences)
	}
	if _, ok := res.Find("argocd/guestbook"); !ok {
		t.Error("NAMESPACE/NAME does not find the app")
	}
	pi, ok := res.Find("podinfo")
	if !ok {
		t.Fatalf("podinfo not discovered: %+v", res)
	}
	if pi.Origin.Engine != app.EngineFlux || pi.Spec.Path != "podinfo" || pi.Spec.Destination.Namespace != "podinfo" || !pi.Spec.SyncPolicy.Prune || !pi.Origin.Heals {
		t.Errorf("podinfo = %+v / %+v", pi.Spec, pi.Origin)
	}
	if d := pi.Origin.Decryption; d == nil || d.Provider != "sops" || d.SecretRef != "flux-system/sops-age" {
		t.Errorf("decryption = %+v", d)
	}
}

func TestDiscoverUnsupportedAreErrors(t *testing.T) {
	t.Parallel()
	argo := func(name, source string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\n  namespace: argocd\nspec:\n" + source +
			"  destination:\n    name: in-cluster\n    namespace: x\n"
	}
	res := discoverFromGit(t, map[string]string{
		"guestbook/cm.yaml": cm,
		"apps/multi.yaml":   argo("multi", "  sources:\n    - repoURL: https://github.com/example/gitops\n      path: guestbook\n    - repoURL: https://github.com/example/values\n      path: x\n"),
		"apps/other.yaml":   argo("other", "  source:\n    repoURL: https://github.com/example/elsewhere.git\n    path: guestbook\n"),
		"apps/jsonnet.yaml": argo("jsonnet", "  source:\n    repoURL: git@github.com:example/gitops.git\n    path: guestbook\n    directory:\n      jsonnet:\n        extVars: [{name: rev, value: $ARGOCD_APP_REVISION}]\n"),
		"apps/plugin.yaml":  argo("plugin", "  source:\n    repoURL: https://github.com/example/gitops\n    path: guestbook\n    plugin: {name: cmp}\n"),
		"apps/prefix.yaml":  argo("prefix", "  source:\n    repoURL: https://github.com/example/gitops\n    path: guestbook\n    kustomize:\n      namePrefix: prod-\n"),
		"apps/kubever.yaml": argo("kubever", "  source:\n    repoURL: https://github.com/example/gitops\n    path: guestbook\n    kustomize:\n      kubeVersion: \"1.30\"\n"),
		"apps/argoenv.yaml": argo("argoenv", "  source:\n    repoURL: https://github.com/example/gitops\n    path: guestbook\n    kustomize:\n      images: [\"web=registry/web:${ARGOCD_APP_REVISION}\"]\n"),
		"apps/chart.yaml":   argo("chart", "  source:\n    repoURL: https://charts.example.com/stable\n    chart: nginx\n    targetRevision: 1.0.0\n    kustomize: {namePrefix: x-}\n"),
	})
	want := map[string]string{
		"multi":   "spec.sources[1].repoURL: names another repository (https://github.com/example/values), which kdrift cannot fetch yet",
		"other":   "spec.source.repoURL: names another repository",
		"jsonnet": "spec.source.directory.jsonnet: $ARGOCD_APP_REVISION is the commit Argo CD renders",
		"plugin":  "spec.source.plugin: config management plugins run programs",
		"prefix":  "spec.source.kustomize: guestbook has no kustomization.yaml; Argo CD applies these overrides with `kustomize edit`",
		"kubever": "spec.source.kustomize.kubeVersion: is not followed by kdrift",
		"argoenv": "spec.source.kustomize.images[0]: \"web=registry/web:${ARGOCD_APP_REVISION}\" uses Argo CD's build environment",
		"chart":   `spec.source.kustomize: is set on a chart source, which Argo CD renders with Helm only`,
	}
	if len(res.Apps) != 0 {
		t.Errorf("apps = %+v", res.Apps)
	}
	for name, msg := range want {
		in, ok := res.FindInvalid(name)
		if !ok {
			t.Errorf("%s is not listed as invalid: %+v", name, res.Invalid)
			continue
		}
		if !strings.Contains(in.Err.Error(), msg) || !strings.HasPrefix(in.Err.Error(), "apps/"+name+".yaml:") {
			t.Errorf("%s: error %q, want %q", name, in.Err, msg)
		}
	}
}

func TestDiscoverAppOfApps(t *testing.T) {
	t.Parallel()
	child := func(name, source string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\nspec:\n" + source +
			"  destination:\n    server: https://kubernetes.default.svc\n    namespace: x\n"
	}
	res := discoverFromGit(t, map[string]string{
		"bootstrap/root.yaml":          child("root", "  source:\n    repoURL: https://github.com/example/gitops\n    path: apps-root\n"),
		"apps-root/kustomization.yaml": "namePrefix: prod-\nnamespace: argocd\nresources: [a.yaml, multi.yaml]\n",
		"apps-root/a.yaml":             child("a", "  source:\n    repoURL: https://github.com/example/gitops\n    path: guestbook\n"),
		"apps-root/multi.yaml":         child("multi", "  sources:\n    - repoURL: https://github.com/example/gitops\n      path: guestbook\n    - repoURL: https://charts.example.com\n      chart: nginx\n"),
		"guestbook/cm.yaml":            cm,
	})
	var names []string
	for _, a := range res.Apps {
		names = append(names, a.Metadata.Name)
	}
	if strings.Join(names, ",") != "prod-a,root" {
		t.Fatalf("apps = %v (invalid %+v); want prod-a and root, not the bases a and multi", names, res.Invalid)
	}
	a, _ := res.Find("prod-a")
	if a.Origin.GeneratedBy != "root" || a.Origin.File != "" || !strings.Contains(a.Origin.Where(), "generated by App root (apps-root)") {
		t.Errorf("prod-a origin = %+v", a.Origin)
	}
	in, ok := res.FindInvalid("prod-multi")
	if !ok || !strings.Contains(in.Err.Error(), "is a second thing to render") || !strings.Contains(in.Err.Error(), "generated by App root") {
		t.Errorf("prod-multi = %+v, %v", in, ok)
	}
}

func TestDiscoverNameCollisions(t *testing.T) {
	t.Parallel()
	app2 := strings.ReplaceAll(ArgoApplication, "namespace: argocd", "namespace: team-b")
	res := discoverFromGit(t, map[string]string{
		"argocd/guestbook.yaml": ArgoApplication,
		"team-b/guestbook.yaml": app2,
		"guestbook/cm.yaml":     cm,
		"dup/guestbook.yaml":    ArgoApplication,
		"clusters/flux.yaml":    strings.ReplaceAll(FluxSync, "name: podinfo", "name: team-b-app"),
		"podinfo/cm.yaml":       cm,
	})
	if _, ok := res.Find("team-b/guestbook"); !ok {
		t.Errorf("team-b/guestbook not found: %+v", res.Apps)
	}
	if _, ok := res.Find("guestbook"); ok {
		t.Error("a name two declarations share finds one of them")
	}
	in, ok := res.FindInvalid("argocd/guestbook")
	if !ok || !strings.Contains(in.Err.Error(), "argocd/guestbook is declared 2 times (argocd/guestbook.yaml, dup/guestbook.yaml)") {
		t.Errorf("argocd/guestbook = %+v %v", in, ok)
	}
	if _, ok := res.Find("team-b-app"); !ok {
		t.Errorf("a unique name is not qualified: %+v", res.Apps)
	}
}

// TestArgoChartSource: an Application whose source is a chart of a Helm
// repository or an OCI registry (written without a scheme, as Argo CD
// takes it) is an app with a remote chart at the version it asks for,
// its Helm settings kept; where it may be fetched from is the engine's
// to decide, not the file's.
func TestArgoChartSource(t *testing.T) {
	t.Parallel()
	argo := func(name, source string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\n  namespace: argocd\nspec:\n" + source +
			"  destination:\n    name: in-cluster\n    namespace: x\n"
	}
	res := discoverFromGit(t, map[string]string{
		"apps/nginx.yaml": argo("nginx", "  source:\n    repoURL: https://charts.example.com/stable\n    chart: nginx\n    targetRevision: 1.2.3\n    helm:\n      releaseName: web\n      valueFiles: [values-prod.yaml]\n"),
		"apps/oci.yaml":   argo("podinfo", "  source:\n    repoURL: ghcr.io/stefanprodan/charts\n    chart: podinfo\n    targetRevision: 6.x\n"),
	})
	if len(res.Invalid) != 0 {
		t.Fatalf("invalid: %+v", res.Invalid)
	}
	nginx, ok := res.Find("nginx")
	if !ok || nginx.Spec.Chart == nil || *nginx.Spec.Chart != (app.RemoteChart{RepoURL: "https://charts.example.com/stable", Chart: "nginx", Version: "1.2.3"}) ||
		nginx.Spec.Path != "@charts/application/argocd/nginx" || nginx.Spec.Helm == nil || nginx.Spec.Helm.ReleaseName != "web" || nginx.Spec.Helm.ValueFiles[0] != "values-prod.yaml" {
		t.Fatalf("nginx: %+v chart %+v helm %+v", nginx.Spec, nginx.Spec.Chart, nginx.Spec.Helm)
	}
	pi, ok := res.Find("podinfo")
	if !ok || pi.Spec.Chart == nil || pi.Spec.Chart.RepoURL != "oci://ghcr.io/stefanprodan/charts" || pi.Spec.Chart.Version != "6.x" {
		t.Fatalf("podinfo: %+v", pi.Spec.Chart)
	}
}
