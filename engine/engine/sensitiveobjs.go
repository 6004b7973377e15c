package engine

import (
	"context"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/status"
)

// probeValue is v with every leaf changed, kept of its type, so that a
// render with it differs wherever a template used a leaf of v in any
// form (b64enc, upper, split, a hash): strings get a suffix, numbers
// move by one, booleans flip.
func probeValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = probeValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = probeValue(e)
		}
		return out
	case string:
		return x + "-kdrift-probe-" + strconv.Itoa(len(x))
	case bool:
		return !x
	case int:
		return x + 1
	case int64:
		return x + 1
	case float64:
		return x + 1
	case nil:
		return "kdrift-probe"
	}
	return v
}

// probeSensitive renders App path of tree again with the probe values
// (see withValuesFrom) and returns the objects of objs that differ from
// that render or are missing from it: they received values from a
// Secret, in some form no scrubber would recognise, and are shown as a
// Secret is (every value masked). A probe that does not render marks
// every object.
func (p *pass) probeSensitive(ctx context.Context, tree render.Tree, h *render.Helm, probe string, objs []*unstructured.Unstructured) []status.ObjectRef {
	if probe == "" {
		return nil
	}
	hp := *h
	hp.Values = probe
	other, err := p.e.renderer.RenderAppShared(ctx, tree, p.app.Spec.Path, &hp)
	seen := map[string]*unstructured.Unstructured{}
	for _, o := range other {
		seen[renderKey(o)] = o
	}
	var out []status.ObjectRef
	for _, o := range objs {
		if q := seen[renderKey(o)]; err != nil || q == nil || !reflect.DeepEqual(o.Object, q.Object) {
			gvk := o.GroupVersionKind()
			out = append(out, status.ObjectRef{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()})
		}
	}
	return out
}

// renderKey names a rendered object before its namespace is defaulted.
func renderKey(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().GroupKind().String() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// sensitiveRef reports whether ref is one of refs; a ref rendered
// without a namespace matches ref in any.
func sensitiveRef(refs []status.ObjectRef, ref status.ObjectRef) bool {
	for _, r := range refs {
		if r.Group == ref.Group && r.Kind == ref.Kind && r.Name == ref.Name && (r.Namespace == "" || r.Namespace == ref.Namespace) {
			return true
		}
	}
	return false
}

// objectValues lists the string values of o but its apiVersion, kind,
// name and namespace (which every message names).
func objectValues(o *unstructured.Unstructured) []string {
	var out []string
	diff.VisitValues(o, func(v any, _ func(any)) { out = append(out, leafStrings(v)...) })
	return out
}
