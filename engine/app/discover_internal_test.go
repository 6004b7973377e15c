package app

import (
	"context"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/render"
)

// mapTree is a MapFS with tree hashes, enough for discovery.
type mapTree struct{ fstest.MapFS }

func (mapTree) TreeHash(dir string) (string, error) { return dir, nil }

// countingRenderer counts renders and yields nothing.
type countingRenderer struct{ n int }

func (c *countingRenderer) RenderApp(context.Context, render.Tree, string, *render.Helm) ([]*unstructured.Unstructured, error) {
	c.n++
	return nil, nil
}
func (c *countingRenderer) Inputs(string) []string { return nil }

// TestDiscoverRendersOnlyWhenSomethingMentionsArgoOrFlux: a repository of
// kdrift Apps pays no extra render for app-of-apps discovery; one whose
// chart templates mention Argo CD renders its built apps.
func TestDiscoverRendersOnlyWhenSomethingMentionsArgoOrFlux(t *testing.T) {
	files := fstest.MapFS{
		".kdrift/a.yaml":               {Data: []byte("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: a}\nspec: {path: deploy/a}\n")},
		"deploy/a/kustomization.yaml":  {Data: []byte("resources: [cm.yaml]\n")},
		"deploy/a/cm.yaml":             {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")},
		"charts/apps/Chart.yaml":       {Data: []byte("apiVersion: v2\nname: apps\nversion: 1.0.0\n")},
		"charts/apps/templates/a.yaml": {Data: []byte("kind: ConfigMap\n")},
	}
	c := &countingRenderer{}
	if res := Discover(mapTree{files}, DiscoverOptions{Renderer: c}); len(res.Apps) != 1 || c.n != 0 {
		t.Fatalf("apps %+v, %d renders; want one App and no render", res.Apps, c.n)
	}
	files["charts/apps/templates/a.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {{ .Values.name }}\n")}
	if res := Discover(mapTree{files}, DiscoverOptions{Renderer: c}); len(res.Apps) != 1 || len(res.Invalid) != 0 || c.n != 1 {
		t.Fatalf("apps %+v invalid %+v, %d renders; want the App rendered once and the template not read as a document", res.Apps, res.Invalid, c.n)
	}
}
