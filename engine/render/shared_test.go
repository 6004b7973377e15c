package render_test

import (
	"testing"
	"testing/fstest"

	"kdrift.dev/kdrift/engine/render"
)

// RenderAppShared hands out the cache's own objects; RenderApp hands out
// copies of them, which a caller may change without the cache seeing it.
func TestRenderAppSharedIsTheCache(t *testing.T) {
	tree := memTree{fstest.MapFS{
		"a/kustomization.yaml": {Data: []byte("resources: [cm.yaml]\n")},
		"a/cm.yaml":            {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: v}\n")},
	}}
	r := render.NewRenderer()
	shared, err := r.RenderAppShared(t.Context(), tree, "a", nil)
	if err != nil || len(shared) != 1 {
		t.Fatalf("render: %v, %d objects", err, len(shared))
	}
	again, err := r.RenderAppShared(t.Context(), tree, "a", nil)
	if err != nil || len(again) != 1 || again[0] != shared[0] {
		t.Fatalf("a second shared render is not the cache's object: %v", err)
	}
	own, err := r.RenderApp(t.Context(), tree, "a", nil)
	if err != nil || len(own) != 1 || own[0] == shared[0] {
		t.Fatalf("RenderApp did not copy: %v", err)
	}
	own[0].SetNamespace("changed")
	if ns := shared[0].GetNamespace(); ns != "" {
		t.Fatalf("a change to RenderApp's copy reached the cache: namespace %q", ns)
	}
}
