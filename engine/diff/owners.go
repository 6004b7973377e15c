package diff

import (
	"bytes"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"kdrift.dev/kdrift/engine/status"
)

// Ownership answers who owns a field of one live object, from its
// metadata.managedFields, with fields named by JSON pointers into that
// object (list elements by their index in the live object).
type Ownership struct {
	entries []managerFields
	// members maps a pointer to the entries that list it; leaves to the
	// entries for which it is a leaf (an atomic value or a scalar).
	members map[string][]int
	leaves  map[string][]int
}

type managerFields struct {
	owner status.Owner
	// pointers are the entry's members in preorder, parents first.
	pointers []string
	// paths are the same members as structured-merge-diff paths.
	paths []fieldpath.Path
}

// NewOwnership parses the managedFields of a live object. Entries whose
// fieldsV1 cannot be parsed give an error naming the manager; members
// that do not resolve against the object are skipped.
func NewOwnership(live *unstructured.Unstructured, opts Options) (*Ownership, error) {
	o := &Ownership{members: map[string][]int{}, leaves: map[string][]int{}}
	if live == nil {
		return o, nil
	}
	for _, e := range live.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.GetRawBytes())); err != nil {
			return nil, fmt.Errorf("managedFields of manager %q: cannot parse fieldsV1: %w", e.Manager, err)
		}
		owner := status.Owner{
			Manager:     e.Manager,
			Operation:   string(e.Operation),
			Subresource: e.Subresource,
			Class:       opts.Classify(e.Manager),
		}
		if e.Time != nil {
			t := e.Time.Time
			owner.Time = &t
		}
		idx := len(o.entries)
		mf := managerFields{owner: owner}
		set.Iterate(func(p fieldpath.Path) {
			ptr, ok := PointerOf(live.Object, p)
			if !ok {
				return
			}
			mf.pointers = append(mf.pointers, ptr)
			mf.paths = append(mf.paths, p.Copy())
			o.members[ptr] = append(o.members[ptr], idx)
		})
		set.Leaves().Iterate(func(p fieldpath.Path) {
			if ptr, ok := PointerOf(live.Object, p); ok {
				o.leaves[ptr] = append(o.leaves[ptr], idx)
			}
		})
		o.entries = append(o.entries, mf)
	}
	return o, nil
}

// Of returns the owners of the field a pointer names: the managers that
// list it, or, when none does, those that own an atomic value it is part
// of. Empty means defaulted.
func (o *Ownership) Of(ptr string) []status.Owner {
	if o == nil {
		return nil
	}
	if idx := o.members[ptr]; len(idx) > 0 {
		return o.owners(idx)
	}
	for p := parent(ptr); ; p = parent(p) {
		if idx := o.leaves[p]; len(idx) > 0 {
			return o.owners(idx)
		}
		if p == "" {
			return nil
		}
	}
}

// Within returns the owners of a field and of everything inside it; the
// owners of a whole list element or map, for instance.
func (o *Ownership) Within(ptr string) []status.Owner {
	if o == nil {
		return nil
	}
	direct := o.Of(ptr)
	var idx []int
	for i, e := range o.entries {
		for _, p := range e.pointers {
			if underPointer(p, ptr) {
				idx = append(idx, i)
				break
			}
		}
	}
	return mergeOwners(direct, o.owners(idx))
}

// Managers returns every owner entry of the object.
func (o *Ownership) Managers() []status.Owner {
	if o == nil {
		return nil
	}
	out := make([]status.Owner, len(o.entries))
	for i, e := range o.entries {
		out[i] = e.owner
	}
	return out
}

// FieldsOf returns the pointers of the fields one manager entry owns
// (parents first).
func (o *Ownership) FieldsOf(owner status.Owner) []string {
	if o == nil {
		return nil
	}
	for _, e := range o.entries {
		if e.owner.Manager == owner.Manager && e.owner.Operation == owner.Operation && e.owner.Subresource == owner.Subresource {
			return append([]string(nil), e.pointers...)
		}
	}
	return nil
}

// isLeaf reports whether some manager owns ptr as a leaf: a scalar or an
// atomic value with no owned fields inside.
func (o *Ownership) isLeaf(ptr string) bool { return len(o.leaves[ptr]) > 0 }

func (o *Ownership) owners(idx []int) []status.Owner {
	if len(idx) == 0 {
		return nil
	}
	out := make([]status.Owner, 0, len(idx))
	seen := make(map[int]bool, len(idx))
	for _, i := range idx {
		if seen[i] {
			continue
		}
		seen[i] = true
		out = append(out, o.entries[i].owner)
	}
	return out
}

func mergeOwners(a, b []status.Owner) []status.Owner {
	out := append([]status.Owner(nil), a...)
	for _, x := range b {
		dup := false
		for _, y := range out {
			if x.Manager == y.Manager && x.Operation == y.Operation && x.Subresource == y.Subresource {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, x)
		}
	}
	return out
}

func parent(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	if i <= 0 {
		return ""
	}
	return ptr[:i]
}

// PointerOf turns a structured-merge-diff field path (from managedFields)
// into a JSON pointer into obj, finding keyed (k:), valued (v:) and
// indexed (i:) list elements; ok is false when obj lacks the field.
func PointerOf(obj map[string]any, p fieldpath.Path) (string, bool) {
	var cur any = obj
	ptr := ""
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return "", false
			}
			v, ok := m[*pe.FieldName]
			if !ok {
				return "", false
			}
			cur = v
			ptr = join(ptr, *pe.FieldName)
		case pe.Key != nil, pe.Value != nil, pe.Index != nil:
			l, ok := cur.([]any)
			if !ok {
				return "", false
			}
			i := FindElement(l, pe)
			if i < 0 {
				return "", false
			}
			cur = l[i]
			ptr = joinIndex(ptr, i)
		default:
			return "", false
		}
	}
	return ptr, true
}

// FindElement returns the index of the list element of l a field path
// element selects (by key, value or index), or -1.
func FindElement(l []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index >= 0 && *pe.Index < len(l) {
			return *pe.Index
		}
	case pe.Value != nil:
		for i, item := range l {
			if value.Equals(value.NewValueInterface(item), *pe.Value) {
				return i
			}
		}
	case pe.Key != nil:
		for i, item := range l {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			if keyMatches(m, *pe.Key) {
				return i
			}
		}
	}
	return -1
}

func keyMatches(m map[string]any, key value.FieldList) bool {
	for _, f := range key {
		v, ok := m[f.Name]
		if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
			return false
		}
	}
	return true
}

// declared reports whether obj has the field a structured-merge-diff path
// names, or an atomic (non-map, non-list) value above it. A port Git
// names without its protocol is the one the apiserver keys with protocol
// TCP, as tier 1 reads it (declaredElement).
func declared(obj map[string]any, p fieldpath.Path) bool {
	builtin := quantityGroups[(&unstructured.Unstructured{Object: obj}).GroupVersionKind().Group]
	var cur any = obj
	field := ""
	for _, pe := range p {
		switch c := cur.(type) {
		case map[string]any:
			if pe.FieldName == nil {
				return false
			}
			v, ok := c[*pe.FieldName]
			if !ok {
				return false
			}
			cur, field = v, *pe.FieldName
		case []any:
			if pe.FieldName != nil {
				return false
			}
			i := declaredElement(c, pe, builtin && field == "ports")
			if i < 0 {
				return false
			}
			cur, field = c[i], ""
		default:
			return true
		}
	}
	return true
}

// declaredElement is FindElement for a list of Git's object; with ports
// set (a ports list of a built-in kind) a key holding protocol TCP also
// finds the element that leaves protocol out, since the apiserver
// defaults it to TCP and keys the element by it.
func declaredElement(l []any, pe fieldpath.PathElement, ports bool) int {
	if i := FindElement(l, pe); i >= 0 || !ports || pe.Key == nil {
		return i
	}
	key := make(value.FieldList, 0, len(*pe.Key))
	tcp := false
	for _, f := range *pe.Key {
		if f.Name == "protocol" && f.Value.IsString() && f.Value.AsString() == "TCP" {
			tcp = true
			continue
		}
		key = append(key, f)
	}
	if !tcp {
		return -1
	}
	at := -1
	for i, item := range l {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if _, has := m["protocol"]; has || !keyMatches(m, key) {
			continue
		}
		if at >= 0 {
			return -1 // two elements match: name neither
		}
		at = i
	}
	return at
}

// valueAtPath returns the value a structured-merge-diff path names in
// obj, finding list elements by their keys, and whether it exists.
func valueAtPath(obj map[string]any, p fieldpath.Path) (any, bool) {
	var cur any = obj
	for _, pe := range p {
		switch c := cur.(type) {
		case map[string]any:
			if pe.FieldName == nil {
				return nil, false
			}
			v, ok := c[*pe.FieldName]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			if pe.FieldName != nil {
				return nil, false
			}
			i := FindElement(c, pe)
			if i < 0 {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
