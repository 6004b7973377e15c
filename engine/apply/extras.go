package apply

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
)

// Extra is a field that exists live but that Git does not declare, owned
// by a person: a forced apply leaves it in place (facts 2 and 3), so it is
// removed with a JSON patch.
type Extra struct {
	// Path is the field's JSON pointer in the live object.
	Path string
	// Live is the value the comparison saw; the patch only removes the
	// field if it still holds this value.
	Live any
}

// ExtrasOf picks the extra, person-owned, not ignored fields of a
// comparison result. The guard value is read from the live object the
// comparison saw, not from the result: a Secret's values are masked there,
// and a patch testing for the mask would never apply.
func ExtrasOf(r status.ResourceStatus, live *unstructured.Unstructured) []Extra {
	var out []Extra
	for _, f := range r.Fields {
		if f.Extra && !f.Ignored && f.Class == status.OwnerPerson {
			v := f.Live
			if live != nil {
				if lv, ok := diff.ValueAt(live.Object, f.Path); ok {
					v = lv
				}
			}
			out = append(out, Extra{Path: f.Path, Live: v})
		}
	}
	return out
}

// ExtrasPatch builds the JSON patch removing extras: every field is tested
// for its live value first, so a concurrent change makes the whole patch
// fail instead of deleting something nobody saw; removals run deepest and
// highest list index first so earlier ones do not shift later ones. Pure.
func ExtrasPatch(extras []Extra) ([]byte, error) {
	sorted := append([]Extra(nil), extras...)
	sort.SliceStable(sorted, func(i, j int) bool { return pointerAfter(sorted[i].Path, sorted[j].Path) })
	// Maps, not a struct with omitempty: a test of a null value must
	// still send "value": null.
	ops := make([]map[string]any, 0, 2*len(sorted))
	for _, e := range sorted {
		ops = append(ops, map[string]any{"op": "test", "path": e.Path, "value": e.Live})
	}
	for _, e := range sorted {
		ops = append(ops, map[string]any{"op": "remove", "path": e.Path})
	}
	return json.Marshal(ops)
}

// pointerAfter orders pointers so that a deeper one, or a higher list
// index under the same parent, comes first.
func pointerAfter(a, b string) bool {
	ta, tb := splitPointer(a), splitPointer(b)
	for i := 0; i < len(ta) && i < len(tb); i++ {
		if ta[i] == tb[i] {
			continue
		}
		na, errA := strconv.Atoi(ta[i])
		nb, errB := strconv.Atoi(tb[i])
		if errA == nil && errB == nil {
			return na > nb
		}
		return ta[i] > tb[i]
	}
	return len(ta) > len(tb)
}

// RemoveExtras removes person-owned extra fields from live with a guarded
// JSON patch as manager kdrift. When a field changed since the comparison
// the patch fails as a whole and nothing is removed; the next comparison
// sees the new value.
func (a *Applier) RemoveExtras(ctx context.Context, live *unstructured.Unstructured, extras []Extra, dryRun bool) error {
	if len(extras) == 0 {
		return nil
	}
	ref := RefOf(live)
	patch, err := ExtrasPatch(extras)
	if err != nil {
		return &ObjectError{Ref: ref, Op: "remove extra fields", Err: err}
	}
	opts := metav1.PatchOptions{FieldManager: Manager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return a.retry(ctx, ref, "remove extra fields", func() error {
		ri, err := a.resource(live.GroupVersionKind(), live.GetNamespace())
		if err != nil {
			return err
		}
		_, err = ri.Patch(ctx, live.GetName(), types.JSONPatchType, patch, opts)
		return err
	})
}
