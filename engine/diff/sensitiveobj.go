package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/status"
)

// MaskAll masks every field of res, as a Secret's values are masked: for
// an object that received values from a Secret (a HelmRelease's
// valuesFrom), where a value may hold them in any form (encoded,
// upper-cased, split). Fields still show as changed or not.
func MaskAll(res *status.ResourceStatus) {
	for j := range res.Fields {
		f := &res.Fields[j]
		f.Desired, f.Live, f.Masked = maskValue(f.Desired), maskValue(f.Live), true
	}
}

// MaskAllValues returns a copy of obj with every value masked but its
// apiVersion, kind, name and namespace (see MaskAll); nil stays nil.
func MaskAllValues(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	out := obj.DeepCopy()
	VisitValues(out, func(v any, set func(any)) { set(maskLeaves(v)) })
	return out
}

// VisitValues calls f with every top-level value of obj, and every
// metadata value, but its apiVersion, kind, name and namespace (which every
// message names): the parts of an object that may carry a Secret's value.
// set replaces the value in obj; a visit that does not call it leaves obj
// untouched, so a shared object may be read this way.
func VisitValues(obj *unstructured.Unstructured, f func(v any, set func(any))) {
	for k, v := range obj.Object {
		switch k {
		case "apiVersion", "kind":
		case "metadata":
			md, _ := v.(map[string]any)
			for mk, mv := range md {
				if mk != "name" && mk != "namespace" {
					f(mv, func(n any) { md[mk] = n })
				}
			}
		default:
			f(v, func(n any) { obj.Object[k] = n })
		}
	}
}

// maskLeaves replaces every leaf of v with MaskedValue.
func maskLeaves(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = maskLeaves(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = maskLeaves(e)
		}
		return x
	}
	return MaskedValue
}
