package app_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/source"
)

// ArgoKustomizeApplication is an Application with kustomize overrides over
// the prod overlay of overlayRepo.
const ArgoKustomizeApplication = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
spec:
  source:
    repoURL: https://github.com/example/gitops
    path: web/overlays/prod
    kustomize:
      version: v5.4.3   # Argo CD's kustomize binary; kdrift builds with its own
      namePrefix: team-
      nameSuffix: -v2
      images:
        - nginx=registry.example.com/nginx:1.28
      replicas:
        - name: web
          count: "3"
      commonLabels: {tier: front}
      commonAnnotations: {team: a}
      patches:
        - target: {kind: Deployment, name: web}
          patch: |-
            - op: add
              path: /spec/template/spec/containers/0/env
              value: [{name: MODE, value: argo}]
      components: [../../components/debug, ../../components/missing]
      ignoreMissingComponents: true
  destination:
    name: in-cluster
    namespace: web
`

// FluxOverlayKustomization is a Flux Kustomization with the fields Flux
// applies over a plain folder.
const FluxOverlayKustomization = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: https://github.com/example/gitops}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: plain, namespace: flux-system}
spec:
  sourceRef: {kind: GitRepository, name: flux-system}
  path: ./plain
  targetNamespace: plain
  namePrefix: f-
  components: [../web/components/debug, ./missing]
  ignoreMissingComponents: true
  images:
    - {name: nginx, newTag: "1.29"}
  patches:
    - target: {kind: ConfigMap, labelSelector: "app=web"}
      patch: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: any}
        data: {patched: "yes"}
  commonMetadata:
    labels: {owner: flux}
  postBuild:
    substitute: {cluster: prod}
`

var overlayRepo = map[string]string{
	"web/base/kustomization.yaml":             "resources: [deployment.yaml]\n",
	"web/base/deployment.yaml":                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1.27}]\n",
	"web/overlays/prod/kustomization.yaml":    "namePrefix: prod-\nresources: [../../base]\n",
	"web/components/debug/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n",
	"web/components/debug/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: debug}\n",
	"plain/cm.yaml":                           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, labels: {app: web}}\ndata: {cluster: \"${cluster}\", zone: \"${zone:=a}\"}\n",
	"plain/web.yaml":                          "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1.27}]\n",
	"apps/web.yaml":                           ArgoKustomizeApplication,
	"clusters/flux.yaml":                      FluxOverlayKustomization,
}

// discoverAndRender discovers the apps of files and renders name as the
// engine does (through App.RenderHelm).
func discoverAndRender(t *testing.T, files map[string]string, name string) (app.App, []*unstructured.Unstructured) {
	t.Helper()
	snap := snapshotOf(t, files, source.Options{})
	a, ok := snap.Apps().Find(name)
	if !ok {
		t.Fatalf("%s not discovered: %+v", name, snap.Apps().Invalid)
	}
	objs, err := render.NewRenderer().RenderApp(context.Background(), snap, a.Spec.Path, a.RenderHelm())
	if err != nil {
		t.Fatal(err)
	}
	return a, objs
}

func byKind(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

// TestDiscoverArgoKustomizeOverrides: Argo CD runs `kustomize edit` in
// web/overlays/prod and builds. set nameprefix team- replaces prod-, so
// the Deployment is team-web-v2; set image gives registry.example.com/
// nginx:1.28; set replicas web=3 (the count as a string, as Argo CD takes
// it); the JSON patch adds env; add component adds the debug ConfigMap
// (the missing one is skipped: ignoreMissingComponents).
func TestDiscoverArgoKustomizeOverrides(t *testing.T) {
	t.Parallel()
	a, objs := discoverAndRender(t, overlayRepo, "web")
	if a.Spec.Overlay == nil || a.Spec.Overlay.Style != render.ArgoCD {
		t.Fatalf("overlay = %+v", a.Spec.Overlay)
	}
	if got := ids(objs); got != "ConfigMap/team-debug-v2 Deployment/team-web-v2" {
		t.Fatalf("objects = %s", got)
	}
	d := byKind(objs, "Deployment")
	c, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	ctr := c[0].(map[string]any)
	if ctr["image"] != "registry.example.com/nginx:1.28" || len(ctr["env"].([]any)) != 1 {
		t.Errorf("container = %v", ctr)
	}
	if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 3 {
		t.Errorf("replicas = %d", n)
	}
	if d.GetLabels()["tier"] != "front" || d.GetAnnotations()["team"] != "a" {
		t.Errorf("labels %v annotations %v", d.GetLabels(), d.GetAnnotations())
	}
}

// TestDiscoverFluxOverlay: Flux generates a kustomization for plain/
// (both files), adds the debug component (the missing one is skipped:
// ignoreMissingComponents), sets namespace plain and prefix f-, replaces the nginx
// tag, patches the ConfigMap its label selector matches, substitutes
// ${cluster} and defaults ${zone}, then labels every object owner=flux.
func TestDiscoverFluxOverlay(t *testing.T) {
	t.Parallel()
	a, objs := discoverAndRender(t, overlayRepo, "plain")
	if a.Spec.Overlay == nil || a.Spec.Overlay.Style != render.Flux {
		t.Fatalf("overlay = %+v", a.Spec.Overlay)
	}
	if got := ids(objs); got != "ConfigMap/plain/f-cfg ConfigMap/plain/f-debug Deployment/plain/f-web" {
		t.Fatalf("objects = %s", got)
	}
	data, _, _ := unstructured.NestedStringMap(byKind(objs, "ConfigMap").Object, "data")
	if data["cluster"] != "prod" || data["zone"] != "a" || data["patched"] != "yes" {
		t.Errorf("data = %v", data)
	}
	for _, o := range objs {
		if o.GetLabels()["owner"] != "flux" {
			t.Errorf("%s labels = %v", o.GetName(), o.GetLabels())
		}
	}
}

// TestDiscoverOverlayErrors: what still cannot be followed is an Error
// app naming the field.
func TestDiscoverOverlayErrors(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for k, v := range overlayRepo {
		files[k] = v
	}
	files["clusters/flux.yaml"] = strings.Replace(FluxOverlayKustomization, "substitute: {cluster: prod}", "substituteFrom: [{kind: ConfigMap, name: vars}]", 1)
	files["apps/web.yaml"] = strings.Replace(ArgoKustomizeApplication, "namePrefix: team-", "apiVersions: [v1]", 1)
	files["apps/label.yaml"] = strings.NewReplacer("name: web\n  namespace: argocd", "name: label\n  namespace: argocd", "path: web/overlays/prod", "path: web/base",
		"commonAnnotations: {team: a}", "commonAnnotationsEnvsubst: true\n      commonAnnotations: {rev: \"${ARGOCD_APP_REVISION}\"}").Replace(ArgoKustomizeApplication)
	res := discoverFromGit(t, files)
	for name, want := range map[string]string{
		"plain": "spec.postBuild.substituteFrom: takes variables from ConfigMaps and Secrets in the cluster",
		"web":   "spec.source.kustomize.apiVersions: is not followed by kdrift",
		"label": "spec.source.kustomize.commonAnnotations.rev",
	} {
		in, ok := res.FindInvalid(name)
		if !ok || !strings.Contains(in.Err.Error(), want) {
			t.Errorf("%s: %+v, want an error containing %q", name, in, want)
		}
	}
}

// ids lists objects as KIND/NAMESPACE/NAME (KIND/NAME when cluster-wide
// or unset), in render order.
func ids(objs []*unstructured.Unstructured) string {
	var out []string
	for _, o := range objs {
		id := o.GetKind() + "/" + o.GetName()
		if o.GetNamespace() != "" {
			id = o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		}
		out = append(out, id)
	}
	return strings.Join(out, " ")
}
