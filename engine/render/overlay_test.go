package render_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"

	"kdrift.dev/kdrift/engine/render"
)

// renderWith renders dir of files with overlay o.
func renderWith(t *testing.T, files map[string]string, dir string, o *render.Overlay) ([]*unstructured.Unstructured, error) {
	t.Helper()
	_, snap := repo(t, files)
	return render.NewRenderer().RenderApp(context.Background(), snap(), dir, &render.Helm{Overlay: o})
}

func containerOf(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s has no container", o.GetName())
	}
	return cs[0].(map[string]any)
}

// TestRenderArgoOverlay applies Argo CD's overrides to the prod overlay
// of overlayFiles. What Argo CD would produce, reasoned from `kustomize
// edit` on deploy/overlays/prod/kustomization.yaml:
//   - set nameprefix team- replaces prod-: team-web, team-settings-HASH;
//   - set image nginx=registry.example.com:5000/nginx:1.28: the image;
//   - set replicas web=3: the replica transformer runs after the
//     overlay's own patch (6), so 3;
//   - add label tier:front (with selectors) and annotation;
//   - set namespace staging replaces prod;
//   - patches are appended: the inline one adds an env var;
//   - add component ../../components/debug adds its ConfigMap.
func TestRenderArgoOverlay(t *testing.T) {
	files := map[string]string{
		"deploy/components/debug/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n",
		"deploy/components/debug/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: debug}\n",
	}
	for k, v := range overlayFiles {
		files[k] = v
	}
	o := &render.Overlay{Style: render.ArgoCD, NamePrefix: "team-", Namespace: "staging",
		Images:            []types.Image{{Name: "nginx", NewName: "registry.example.com:5000/nginx", NewTag: "1.28"}},
		Replicas:          []types.Replica{{Name: "web", Count: 3}},
		CommonLabels:      map[string]string{"tier": "front"},
		CommonAnnotations: map[string]string{"team": "a"},
		Patches: []types.Patch{{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        env: [{name: MODE, value: argo}]\n",
			Target: &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Kind: "Deployment"}}}}},
		Components: []string{"../../components/debug"},
	}
	objs, err := renderWith(t, files, "deploy/overlays/prod", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 4 || !strings.HasPrefix(objs[1].GetName(), "team-settings-") {
		t.Fatalf("objects = %s", ids(objs))
	}
	settings := objs[1].GetName()
	if got, want := ids(objs), "ConfigMap/staging/team-debug ConfigMap/staging/"+settings+" Service/staging/team-web Deployment/staging/team-web"; got != want {
		t.Fatalf("objects = %s, want %s", got, want)
	}
	d := find(objs, "Deployment", "team-web")
	c := containerOf(t, d)
	if c["image"] != "registry.example.com:5000/nginx:1.28" {
		t.Errorf("image = %v", c["image"])
	}
	if fmt.Sprint(c["env"]) != "[map[name:MODE value:argo]]" {
		t.Errorf("env = %v, want the Application's patch", c["env"])
	}
	if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 3 {
		t.Errorf("replicas = %d, want 3", n)
	}
	sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
	if sel["tier"] != "front" || d.GetLabels()["tier"] != "front" || d.GetAnnotations()["team"] != "a" {
		t.Errorf("labels %v selector %v annotations %v", d.GetLabels(), sel, d.GetAnnotations())
	}
}

// TestRenderArgoOverlaySemantics checks the edits that differ from
// wrapping the folder in another kustomization: a label already in the
// kustomization, labels without selectors, an image already overridden.
func TestRenderArgoOverlaySemantics(t *testing.T) {
	files := map[string]string{
		"app/kustomization.yaml": "resources: [d.yaml]\ncommonLabels: {tier: back}\nimages:\n- {name: nginx, newTag: '1.0'}\n",
		"app/d.yaml":             strings.Replace(overlayFiles["deploy/base/deployment.yaml"], "        envFrom: [{configMapRef: {name: settings}}]\n", "", 1),
	}
	_, err := renderWith(t, files, "app", &render.Overlay{Style: render.ArgoCD, CommonLabels: map[string]string{"tier": "front"}})
	var oe *render.OverlayError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "label tier is already in the kustomization") || !strings.Contains(err.Error(), "forceCommonLabels") {
		t.Fatalf("error = %v, want the label refused as kustomize edit refuses it", err)
	}
	objs, err := renderWith(t, files, "app", &render.Overlay{Style: render.ArgoCD, CommonLabels: map[string]string{"tier": "front", "env": "prod"}, ForceCommonLabels: true,
		Images: []types.Image{{Name: "nginx", NewName: "mirror/nginx"}}})
	if err != nil {
		t.Fatal(err)
	}
	d := objs[0]
	// set image merges: the new name keeps the kustomization's tag.
	if img := containerOf(t, d)["image"]; img != "mirror/nginx:1.0" || d.GetLabels()["tier"] != "front" {
		t.Errorf("image %v labels %v", img, d.GetLabels())
	}
	objs, err = renderWith(t, files, "app", &render.Overlay{Style: render.ArgoCD, CommonLabels: map[string]string{"env": "prod"}, LabelWithoutSelector: true})
	if err != nil {
		t.Fatal(err)
	}
	sel, _, _ := unstructured.NestedStringMap(objs[0].Object, "spec", "selector", "matchLabels")
	tmpl, _, _ := unstructured.NestedStringMap(objs[0].Object, "spec", "template", "metadata", "labels")
	if objs[0].GetLabels()["env"] != "prod" || sel["env"] != "" || tmpl["env"] != "" {
		t.Errorf("labels %v selector %v template %v: want the label on metadata only", objs[0].GetLabels(), sel, tmpl)
	}
	_, err = renderWith(t, map[string]string{"plain/cm.yaml": cm}, "plain", &render.Overlay{Style: render.ArgoCD, NamePrefix: "x-"})
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "has no kustomization.yaml") {
		t.Errorf("plain folder: error = %v", err)
	}
}

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {env: \"${env}\", region: \"${region:=eu-west-1}\", keep: \"$HOME\"}\n"

// TestRenderFluxOverlay renders a plain folder as Flux does: a generated
// kustomization (YAML files below, a subfolder with a kustomization as
// one resource, the .json file left out), then Flux's fields, then
// substitution and commonMetadata.
func TestRenderFluxOverlay(t *testing.T) {
	files := map[string]string{
		"apps/web/deploy.yaml":               strings.Replace(overlayFiles["deploy/base/deployment.yaml"], "        envFrom: [{configMapRef: {name: settings}}]\n", "", 1),
		"apps/web/config/cm.yaml":            cm,
		"apps/web/raw.json":                  `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json"}}`,
		"apps/web/script/kustomization.yaml": "resources: [script.yaml]\nnamePrefix: s-\n",
		"apps/web/script/script.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: script\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata: {run: \"echo ${env}\"}\n",
	}
	o := &render.Overlay{Style: render.Flux, NamePrefix: "p-", Namespace: "apps",
		Images: []types.Image{{Name: "nginx", NewTag: "1.29"}},
		Patches: []types.Patch{
			{Patch: "- op: add\n  path: /metadata/annotations/patched\n  value: json6902\n", Target: &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Kind: "Deployment"}}}},
			{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-used}\ndata: {extra: \"${env}-x\"}\n", Target: &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Kind: "ConfigMap"}, Name: "cfg"}}},
		},
		Substitute:     map[string]string{"env": "prod\n"},
		MetadataLabels: map[string]string{"team": "web"},
	}
	objs, err := renderWith(t, files, "apps/web", o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(objs), "ConfigMap/apps/p-cfg ConfigMap/apps/p-s-script Deployment/apps/p-web"; got != want {
		t.Fatalf("objects = %s, want %s", got, want)
	}
	cfg := find(objs, "ConfigMap", "p-cfg")
	data, _, _ := unstructured.NestedStringMap(cfg.Object, "data")
	want := map[string]string{"env": "prod", "region": "eu-west-1", "keep": "$HOME", "extra": "prod-x"}
	if fmt.Sprint(data) != fmt.Sprint(want) {
		t.Errorf("cfg data = %v, want %v", data, want)
	}
	if run, _, _ := unstructured.NestedString(find(objs, "ConfigMap", "p-s-script").Object, "data", "run"); run != "echo ${env}" {
		t.Errorf("opted-out script = %q, want ${env} kept", run)
	}
	d := find(objs, "Deployment", "p-web")
	if img := containerOf(t, d)["image"]; img != "nginx:1.29" || d.GetAnnotations()["patched"] != "json6902" || d.GetLabels()["team"] != "web" {
		t.Errorf("image %v annotations %v labels %v", img, d.GetAnnotations(), d.GetLabels())
	}
	sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
	if sel["team"] != "" {
		t.Errorf("commonMetadata reached the selector: %v", sel)
	}
}

// TestRenderOverlayHostile: an overlay is untrusted input. A huge patch,
// a patch file outside the app's folder or the repository, a
// substitution that expands past the budget and nested expressions are
// each refused, quickly.
func TestRenderOverlayHostile(t *testing.T) {
	files := map[string]string{
		"apps/web/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: \"" + strings.Repeat("${a}", 20_000) + "\"}\n",
		"apps/nest/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nest}\ndata: {a: \"" + strings.Repeat("${a:=", 200) + "x" + strings.Repeat("}", 200) + "\"}\n",
		"apps/secret.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n",
		"apps/trim/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: trim}\ndata: {a: \"${a%%*x}\"}\n",
	}
	_, snap := repo(t, files)
	s := snap()
	run := func(dir string, o *render.Overlay) error {
		r := render.NewRenderer()
		r.Options.MaxRenderBytes = 8 << 20
		_, err := r.RenderApp(context.Background(), s, dir, &render.Helm{Overlay: o})
		return err
	}
	var le *render.LimitError
	err := run("apps/web", &render.Overlay{Style: render.ArgoCD, Patches: []types.Patch{{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {b: \"" + strings.Repeat("x", render.MaxOverlayPatchBytes) + "\"}\n"}}})
	if !errors.As(err, &le) || le.Limit != "overlay patch size" {
		t.Errorf("huge patch: %v", err)
	}
	err = run("apps/web", &render.Overlay{Style: render.ArgoCD, Patches: []types.Patch{{Patch: "a: &a [*a]\n"}}})
	if !errors.As(err, &le) {
		t.Errorf("recursive alias in a patch: %v", err)
	}
	for _, p := range []string{"../../etc/passwd", "../../../../etc/passwd", "../secret.yaml", "/etc/passwd"} {
		err = run("apps/web", &render.Overlay{Style: render.ArgoCD, Patches: []types.Patch{{Path: p}}})
		t.Logf("patch path %s: %v", p, err)
		if err == nil || strings.Contains(err.Error(), "root:") {
			t.Errorf("patch path %s: error = %v, want it refused", p, err)
		}
	}
	err = run("apps/web", &render.Overlay{Style: render.Flux, Substitute: map[string]string{"a": strings.Repeat("y", 1000)}})
	if !errors.As(err, &le) || le.Limit != "rendered size" {
		t.Errorf("substitution bomb: %v", err)
	}
	err = run("apps/nest", &render.Overlay{Style: render.Flux, Substitute: map[string]string{"a": "y"}})
	if !errors.As(err, &le) || le.Limit != "substitution nesting" {
		t.Errorf("nested substitution: %v", err)
	}
	err = run("apps/trim", &render.Overlay{Style: render.Flux, Substitute: map[string]string{"a": strings.Repeat("y", 100_000)}})
	if !errors.As(err, &le) || le.Limit != "substitution work" {
		t.Errorf("quadratic trim: %v", err)
	}
	err = run("apps/nest", &render.Overlay{Style: render.Flux, Substitute: map[string]string{"a-b": "y"}})
	if err == nil || !strings.Contains(err.Error(), "not a valid variable name") {
		t.Errorf("bad variable name: %v", err)
	}
}

// BenchmarkRenderOverlay renders BenchmarkRender's 20-object overlay cold,
// plain and with an overlay of each engine (Argo CD's edits; Flux's edits
// and post-build substitution): the overlay's cost beside the build's.
func BenchmarkRenderOverlay(b *testing.B) {
	_, snap := repo(b, benchFiles())
	s := snap()
	patch := []types.Patch{{Patch: "- op: add\n  path: /metadata/annotations/x\n  value: y\n", Target: &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Kind: "Deployment"}}}}}
	for _, c := range []struct {
		name string
		o    *render.Overlay
	}{
		{"plain", nil},
		{"argocd", &render.Overlay{Style: render.ArgoCD, NamePrefix: "t-", CommonLabels: map[string]string{"tier": "a"}, Patches: patch}},
		{"flux", &render.Overlay{Style: render.Flux, NamePrefix: "t-", Patches: patch, Substitute: map[string]string{"x": "y"}, MetadataLabels: map[string]string{"o": "f"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				objs, err := render.NewRenderer().RenderApp(context.Background(), s, "deploy/overlays/prod", &render.Helm{Overlay: c.o})
				if err != nil || len(objs) != 20 {
					b.Fatalf("rendered %d objects, %v", len(objs), err)
				}
			}
		})
	}
}
