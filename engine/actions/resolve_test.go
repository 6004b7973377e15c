package actions

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
)

// TestResolveQuery: a reference typed the way kubectl takes it resolves to
// the App's one object of that kind and name, with its group and
// namespace; one that names none is refused with the candidates.
func TestResolveQuery(t *testing.T) {
	objs := []objectID{
		{Group: "apps", Kind: "Deployment", Name: "web"},
		{Kind: "ConfigMap", Name: "web"},
		{Kind: "Service", Namespace: "edge", Name: "web"},
		{Group: "example.com", Kind: "Widget", Name: "w1"},
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
		{Group: "other.io", Kind: "Gadget", Name: "g"},
	}
	kinds := append(builtins(), kindNames{Group: "example.com", Kind: "Widget", Plural: "widgets", Short: []string{"wd"}, Namespaced: true})
	q := func(s, ns string) app.ResourceQuery {
		t.Helper()
		r, err := app.ParseResourceQuery(s, ns)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		in, ns string
		want   app.ResourceRef
	}{
		{"Deployment/web", "", app.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}},
		{"deploy/web", "", app.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}},
		{"deployments.apps/web", "shop", app.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}},
		{"Deployment.v1.apps/web", "", app.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}},
		{"cm/web", "", app.ResourceRef{Kind: "ConfigMap", Namespace: "shop", Name: "web"}},
		{"svc/web", "", app.ResourceRef{Kind: "Service", Namespace: "edge", Name: "web"}},
		{"wd/w1", "", app.ResourceRef{Group: "example.com", Kind: "Widget", Namespace: "shop", Name: "w1"}},
		{"crd/widgets.example.com", "", app.ResourceRef{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}},
		// A kind of unknown scope keeps no namespace.
		{"gadgets/g", "", app.ResourceRef{Group: "other.io", Kind: "Gadget", Name: "g"}},
	} {
		got, err := resolveQuery("shop", "shop", q(c.in, c.ns), objs, kinds, true)
		if err != nil || got != c.want {
			t.Errorf("%s -n %q: %+v %v, want %+v", c.in, c.ns, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, ns, want string }{
		{"Deployment.core/web", "", ""},
		{"Deployment.v1/web", "", "App shop renders no Deployment/web in the core group; did you mean Deployment.apps/web?"},
		{"Deployment/webb", "", "App shop renders no Deployment/webb; did you mean Deployment.apps/web?"},
		{"Deployment/web", "other", "App shop renders no Deployment/web in namespace other; did you mean Deployment.apps/web?"},
		{"StatefulSet/web", "", "did you mean ConfigMap/web or Deployment.apps/web or Service/edge/web?"},
	} {
		_, err := resolveQuery("shop", "shop", q(c.in, c.ns), objs, kinds, true)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -n %q: %v, want %q", c.in, c.ns, err, c.want)
		}
	}
	// Two objects of one name in two namespaces: name one.
	two := append(objs, objectID{Group: "apps", Kind: "Deployment", Namespace: "edge", Name: "web"})
	if _, err := resolveQuery("shop", "shop", q("deploy/web", ""), two, kinds, true); err == nil || !strings.Contains(err.Error(), "names 2 objects") {
		t.Errorf("ambiguous: %v", err)
	}
}

const resolveApps = `apiVersion: kdrift.dev/v1alpha1
kind: App
metadata:
  name: shop
spec:
  path: deploy/shop
  destination: {namespace: shop}
  syncPolicy:
    selfHeal: true
`

const resolveObjects = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data: {a: b}
`

// TestFreezeResourceResolvesTypedReference: freeze --resource
// Deployment/web writes Deployment.apps with the namespace, not a core
// group Deployment that matches nothing; a reference to no object of the
// App commits nothing and lists the candidates; unfreeze and ignore
// resolve the same way.
func TestFreezeResourceResolvesTypedReference(t *testing.T) {
	isolate(t)
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	gitRun(t, root, "init", "-q", "--bare", "-b", "main", remote)
	seed := filepath.Join(root, "seed")
	gitRun(t, root, "clone", "-q", remote, seed)
	writeFile(t, seed, ".kdrift/apps.yaml", resolveApps)
	writeFile(t, seed, "deploy/shop/objects.yaml", resolveObjects)
	gitRun(t, seed, "add", "-A")
	gitRun(t, seed, "commit", "-q", "-m", "shop")
	gitRun(t, seed, "push", "-q", "origin", "main")
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	ctx := context.Background()

	q, _ := app.ParseResourceQuery("Deployment/web", "")
	res, err := r.FreezeResource(ctx, ResourceFreezeRequest{App: "shop", Queries: []app.ResourceQuery{q}, Fields: []string{"/spec/replicas"}, Reason: "INC-1 scaled by hand"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != 1 || res.Resources[0] != "Deployment.apps/shop/web" {
		t.Fatalf("resolved %v", res.Resources)
	}
	apps, errs := app.Parse(".kdrift/apps.yaml", []byte(readFile(t, dir, ".kdrift/apps.yaml")))
	if len(errs) > 0 || len(apps) != 1 || len(apps[0].Spec.Freezes) != 1 {
		t.Fatalf("apps: %+v %v", apps, errs)
	}
	if got := apps[0].Spec.Freezes[0].Resource; got != (app.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}) {
		t.Fatalf("the freeze holds %+v", got)
	}
	if !apps[0].Spec.Freezes[0].Resource.Matches("apps", "Deployment", "shop", "web", "shop") {
		t.Fatal("the written freeze matches no object")
	}

	head := gitRun(t, remote, "rev-parse", "main")
	for in, want := range map[string]string{
		"Deployment.v1/web":  "App shop renders no Deployment/web in the core group; did you mean Deployment.apps/web?",
		"deploy/webb":        "did you mean Deployment.apps/web?",
		"StatefulSet/web":    "did you mean Deployment.apps/web?",
		"ConfigMap/settingz": "did you mean ConfigMap/settings?",
	} {
		q, _ := app.ParseResourceQuery(in, "")
		_, err := r.FreezeResource(ctx, ResourceFreezeRequest{App: "shop", Queries: []app.ResourceQuery{q}, Reason: "x"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("freeze %s: %v, want %q", in, err, want)
		}
		_, err = r.UnfreezeResource(ctx, ResourceUnfreezeRequest{App: "shop", Query: &q, Reason: "x"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("unfreeze %s: %v, want %q", in, err, want)
		}
	}
	if gitRun(t, remote, "rev-parse", "main") != head {
		t.Fatal("a refused freeze committed")
	}

	// ignore --kind deploy writes the kind and group; a kind the App does
	// not render is refused.
	if _, err := r.Ignore(ctx, IgnoreRequest{App: "shop", Rule: app.IgnoreRule{Kind: "statefulset", JSONPointers: []string{"/spec/replicas"}}, Reason: "HPA", Typed: true}); err == nil || !strings.Contains(err.Error(), "renders no statefulset") {
		t.Fatalf("ignore of a kind not rendered: %v", err)
	}
	if _, err := r.Ignore(ctx, IgnoreRequest{App: "shop", Rule: app.IgnoreRule{Kind: "deploy", JSONPointers: []string{"/spec/replicas"}}, Reason: "HPA", Typed: true}); err != nil {
		t.Fatal(err)
	}
	apps, _ = app.Parse(".kdrift/apps.yaml", []byte(readFile(t, dir, ".kdrift/apps.yaml")))
	if rules := apps[0].Spec.IgnoreDifferences; len(rules) != 1 || rules[0].Kind != "Deployment" || rules[0].Group != "apps" {
		t.Fatalf("ignore rule: %+v", rules)
	}

	q, _ = app.ParseResourceQuery("deploy/web", "")
	res, err = r.UnfreezeResource(ctx, ResourceUnfreezeRequest{App: "shop", Query: &q, Reason: "INC-1 over"})
	if err != nil || len(res.Resources) != 1 || res.Resources[0] != "Deployment.apps/shop/web" {
		t.Fatalf("unfreeze deploy/web: %+v %v", res, err)
	}
}
