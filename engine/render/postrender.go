package render

import (
	"bytes"
	"context"
	"fmt"
	"path"

	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// PostRender is one of a Flux HelmRelease's postRenderers: a kustomize
// pass over the chart's output with these patches and images.
type PostRender struct {
	// Patches are strategic merge or JSON 6902 patches, inline, with
	// optional target selectors.
	Patches []types.Patch `json:"patches,omitempty"`
	// Images replace the images of the entries of the same name.
	Images []types.Image `json:"images,omitempty"`
}

// postRenderFile is where the chart's output is served to the post
// render's kustomize build, beside the kustomization generated for it;
// neither exists in Git.
const postRenderFile = ".kdrift-post-render.yaml"

// postRender runs each step over objs in order, as helm-controller does:
// the objects are written into a kustomization held in memory in the
// chart's folder (which has none: a chart with one is built by
// kustomize instead) with the step's patches and images, and built by
// the render worker like any kustomization.
func (r *Renderer) postRender(ctx context.Context, fsys *treeFS, dir string, opts Options, steps []PostRender, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	rendered := path.Join(dir, postRenderFile)
	kfile := path.Join(dir, konfig.DefaultKustomizationFileName())
	for i, s := range steps {
		var out bytes.Buffer
		for _, o := range objs {
			js, err := yaml.Marshal(o.Object)
			if err != nil {
				return nil, fmt.Errorf("postRenderers[%d]: %s/%s: %w", i, o.GetKind(), o.GetName(), err)
			}
			out.WriteString("---\n")
			out.Write(js)
		}
		if int64(out.Len()) > opts.MaxRenderBytes {
			return nil, limitf("", "rendered size", "the chart rendered more than %d bytes", opts.MaxRenderBytes)
		}
		k := map[string]any{"apiVersion": types.KustomizationVersion, "kind": types.KustomizationKind, "resources": []any{postRenderFile}}
		ov := &Overlay{Style: Flux, Patches: s.Patches, Images: s.Images}
		for j, p := range s.Patches {
			if p.Path != "" || p.Patch == "" {
				return nil, &OverlayError{Field: fmt.Sprintf("postRenderers[%d].kustomize.patches[%d]", i, j), Problem: "is not an inline patch", Fix: "give the patch inline, as Flux takes it"}
			}
		}
		if err := ov.edit(k, opts); err != nil {
			return nil, fmt.Errorf("postRenderers[%d]: %w", i, err)
		}
		kdata, err := yaml3.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("postRenderers[%d]: %w", i, err)
		}
		if fsys.virtual == nil {
			fsys.virtual = map[string][]byte{}
		}
		fsys.virtual[kfile], fsys.virtual[rendered] = kdata, out.Bytes()
		js, err := r.runKustomize(ctx, fsys, dir, opts)
		delete(fsys.virtual, kfile)
		delete(fsys.virtual, rendered)
		if err != nil {
			return nil, fmt.Errorf("postRenderers[%d]: %w", i, err)
		}
		objs = objs[:0:0]
		var size int64
		for _, raw := range js {
			if size += int64(len(raw)); size > opts.MaxRenderBytes {
				return nil, limitf("", "rendered size", "the post-rendered objects come to more than %d bytes", opts.MaxRenderBytes)
			}
			if err := fsys.spendJSON("", raw); err != nil {
				return nil, err
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(raw); err != nil {
				return nil, fmt.Errorf("postRenderers[%d]: render worker sent an object that is not one: %w", i, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs, nil
}
