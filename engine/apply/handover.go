package apply

import (
	"context"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
)

// HandoverFields lists the live fields (JSON pointers) that kdrift alone
// owns and that the rules now ignore. If kdrift simply stopped applying
// them the apiserver would delete and default them (a Deployment would
// fall to 1 replica), so they must be handed over first. Pure.
func HandoverFields(live *unstructured.Unstructured, rules []app.IgnoreRule) ([]string, error) {
	ptrs := IgnoredPointers(rules, live)
	if len(ptrs) == 0 {
		return nil, nil
	}
	owned, err := ownedLeaves(live)
	if err != nil {
		return nil, err
	}
	var out []string
	for leaf, mgrs := range owned {
		if len(mgrs) != 1 || mgrs[0] != Manager {
			continue
		}
		for _, p := range ptrs {
			if underPointer(p, leaf) {
				out = append(out, leaf)
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// handoverObject builds the apply body that gives the named live fields to
// HandoverManager with their live values: identity plus each field, list
// elements carried by their keys.
func handoverObject(live *unstructured.Unstructured, fields []string) (*unstructured.Unstructured, error) {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(live.GetAPIVersion())
	out.SetKind(live.GetKind())
	out.SetName(live.GetName())
	out.SetNamespace(live.GetNamespace())
	want := map[string]bool{}
	for _, f := range fields {
		want[f] = true
	}
	for _, e := range live.GetManagedFields() {
		if e.Manager != Manager {
			continue
		}
		s, err := managedSet(e)
		if err != nil {
			return nil, err
		}
		s.Leaves().Iterate(func(p fieldpath.Path) {
			ptr, ok := diff.PointerOf(live.Object, p)
			if ok && want[ptr] {
				copyPath(out.Object, live.Object, p)
			}
		})
	}
	return out, nil
}

// copyPath copies the value at p from src into dst, creating maps and list
// elements (found by key) on the way. An atomic list is copied whole.
func copyPath(dst, src map[string]any, p fieldpath.Path) {
	copyInto(dst, src, p)
}

// copyInto returns dst with the value at p in src copied in.
func copyInto(dst, src any, p fieldpath.Path) any {
	if len(p) == 0 {
		return runtimeDeepCopy(src)
	}
	pe := p[0]
	switch {
	case pe.FieldName != nil:
		sm, ok := src.(map[string]any)
		if !ok {
			return dst
		}
		sv, ok := sm[*pe.FieldName]
		if !ok {
			return dst
		}
		dm, ok := dst.(map[string]any)
		if !ok {
			dm = map[string]any{}
		}
		dm[*pe.FieldName] = copyInto(dm[*pe.FieldName], sv, p[1:])
		return dm
	case pe.Index != nil:
		return runtimeDeepCopy(src)
	default:
		sl, ok := src.([]any)
		if !ok {
			return dst
		}
		j := diff.FindElement(sl, pe)
		if j < 0 {
			return dst
		}
		dl, _ := dst.([]any)
		k := diff.FindElement(dl, pe)
		if pe.Value != nil {
			if k < 0 {
				dl = append(dl, runtimeDeepCopy(sl[j]))
			}
			return dl
		}
		if k < 0 {
			el := map[string]any{}
			for _, f := range *pe.Key {
				el[f.Name] = f.Value.Unstructured()
			}
			dl = append(dl, el)
			k = len(dl) - 1
		}
		dl[k] = copyInto(dl[k], sl[j], p[1:])
		return dl
	}
}

// Handover applies the live values of fields under HandoverManager, so that
// kdrift can stop applying them without the apiserver defaulting them.
func (a *Applier) Handover(ctx context.Context, live *unstructured.Unstructured, fields []string) error {
	if len(fields) == 0 {
		return nil
	}
	body, err := handoverObject(live, fields)
	if err != nil {
		return &ObjectError{Ref: RefOf(live), Op: "hand-over", Err: err}
	}
	_, err = a.applyAs(ctx, body, HandoverManager, "hand-over of "+joinFields(fields), false)
	return err
}

func joinFields(f []string) string {
	s := ""
	for i, x := range f {
		if i > 0 {
			s += ","
		}
		s += x
	}
	return s
}

// NeedsRelease reports whether kdrift still owns, in live, a field the
// rules ignore: a field under an ignored pointer, or one an ignored
// manager owns too. Such an object must be applied once more (after a
// hand-over) so that kdrift lets go of the field, even when it shows no
// drift. Pure.
func NeedsRelease(live *unstructured.Unstructured, rules []app.IgnoreRule) (bool, error) {
	ptrs := IgnoredPointers(rules, live)
	mgrs := IgnoredManagers(rules, live)
	if len(ptrs) == 0 && len(mgrs) == 0 {
		return false, nil
	}
	owned, err := ownedLeaves(live)
	if err != nil {
		return false, err
	}
	for leaf, owners := range owned {
		if !slices.Contains(owners, Manager) {
			continue
		}
		for _, p := range ptrs {
			if underPointer(p, leaf) {
				return true, nil
			}
		}
		for _, m := range mgrs {
			if slices.Contains(owners, m) {
				return true, nil
			}
		}
	}
	return false, nil
}
