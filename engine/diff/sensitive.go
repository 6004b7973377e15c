package diff

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/status"
)

// minSensitive is the shortest value MaskSensitive looks for: shorter
// ones ("1", "true") would mask unrelated fields.
const minSensitive = 4

// MaskSensitive masks, in every field of results, a desired or live value
// that holds one of values: strings a render took from a Secret outside
// Secret objects (a Flux HelmRelease's valuesFrom). The field still shows
// as changed or not; its values read MaskedValue.
func MaskSensitive(results []status.ResourceStatus, values []string) {
	if len(values) == 0 {
		return
	}
	for i := range results {
		for j := range results[i].Fields {
			f := &results[i].Fields[j]
			if holds(f.Desired, values) || holds(f.Live, values) {
				f.Desired, f.Live, f.Masked = maskValue(f.Desired), maskValue(f.Live), true
			}
		}
	}
}

// MaskSensitiveObject returns obj (a copy, when anything is masked) with
// every string value that holds one of values replaced by MaskedValue.
func MaskSensitiveObject(obj *unstructured.Unstructured, values []string) *unstructured.Unstructured {
	if obj == nil || len(values) == 0 || !holds(obj.Object, values) {
		return obj
	}
	out := obj.DeepCopy()
	out.Object = maskStrings(out.Object, values).(map[string]any)
	return out
}

// holds says whether v, or a value inside it, contains one of values.
func holds(v any, values []string) bool {
	switch x := v.(type) {
	case nil:
		return false
	case map[string]any:
		for _, e := range x {
			if holds(e, values) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range x {
			if holds(e, values) {
				return true
			}
		}
		return false
	}
	s := fmt.Sprint(v)
	for _, val := range values {
		if len(val) >= minSensitive && strings.Contains(s, val) {
			return true
		}
	}
	return false
}

func maskStrings(v any, values []string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = maskStrings(e, values)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = maskStrings(e, values)
		}
		return x
	}
	if holds(v, values) {
		return MaskedValue
	}
	return v
}
