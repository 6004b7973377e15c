package apply

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"kdrift.dev/kdrift/engine/diff"
)

// managedSet parses one managedFields entry's fieldsV1 into a set.
func managedSet(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	s := &fieldpath.Set{}
	if e.FieldsV1 == nil {
		return s, nil
	}
	if err := s.FromJSON(bytes.NewReader(e.FieldsV1.GetRawBytes())); err != nil {
		return nil, fmt.Errorf("managedFields of manager %q: %w", e.Manager, err)
	}
	return s, nil
}

// ownedLeaves maps each JSON pointer of obj that a manager owns (leaves of
// its field set resolved against obj) to the managers owning it.
func ownedLeaves(obj *unstructured.Unstructured) (map[string][]string, error) {
	out := map[string][]string{}
	for _, e := range obj.GetManagedFields() {
		s, err := managedSet(e)
		if err != nil {
			return nil, err
		}
		s.Leaves().Iterate(func(p fieldpath.Path) {
			ptr, ok := diff.PointerOf(obj.Object, p)
			if !ok {
				return
			}
			for _, m := range out[ptr] {
				if m == e.Manager {
					return
				}
			}
			out[ptr] = append(out[ptr], e.Manager)
		})
	}
	return out, nil
}

// managerPaths is every leaf path the named managers own in obj.
func managerPaths(obj *unstructured.Unstructured, managers []string) ([]fieldpath.Path, error) {
	var out []fieldpath.Path
	for _, e := range obj.GetManagedFields() {
		if !slices.Contains(managers, e.Manager) {
			continue
		}
		s, err := managedSet(e)
		if err != nil {
			return nil, err
		}
		s.Leaves().Iterate(func(p fieldpath.Path) { out = append(out, p.Copy()) })
	}
	return out, nil
}

// removePath deletes the field a path names from obj, if present. A list
// element named by a key keeps its key fields unless the path names the
// element itself.
func removePath(obj map[string]any, p fieldpath.Path) {
	if len(p) == 0 {
		return
	}
	var parent any = obj
	for i, pe := range p {
		last := i == len(p)-1
		switch {
		case pe.FieldName != nil:
			m, ok := parent.(map[string]any)
			if !ok {
				return
			}
			if last {
				delete(m, *pe.FieldName)
				return
			}
			v, ok := m[*pe.FieldName]
			if !ok {
				return
			}
			parent = v
		default:
			l, ok := parent.([]any)
			if !ok {
				return
			}
			j := diff.FindElement(l, pe)
			if j < 0 {
				return
			}
			if last {
				// Dropping a list element: rebuild the list in place in
				// its parent is not possible from here; blank it and let
				// the caller compact.
				l[j] = removedMarker{}
				return
			}
			parent = l[j]
		}
	}
}

// removedMarker stands for a list element removed by removePath until
// compactLists drops it.
type removedMarker struct{}

// compactLists drops removed list elements and maps/lists left empty by
// removal, bottom up.
func compactLists(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			t[k] = compactLists(c)
			if _, gone := t[k].(removedMarker); gone {
				delete(t, k)
			}
		}
		return t
	case []any:
		out := t[:0]
		for _, c := range t {
			if _, gone := c.(removedMarker); gone {
				continue
			}
			out = append(out, compactLists(c))
		}
		return out
	}
	return v
}

// splitPointer splits a JSON pointer into unescaped tokens.
func splitPointer(p string) []string {
	if p == "" || p == "/" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// deletePointer removes the value at a JSON pointer, if present.
func deletePointer(obj map[string]any, p string) {
	toks := splitPointer(p)
	if len(toks) == 0 {
		return
	}
	var cur any = obj
	for i, tok := range toks {
		last := i == len(toks)-1
		switch t := cur.(type) {
		case map[string]any:
			if last {
				delete(t, tok)
				return
			}
			cur = t[tok]
		case []any:
			j, err := strconv.Atoi(tok)
			if err != nil || j < 0 || j >= len(t) {
				return
			}
			if last {
				t[j] = removedMarker{}
				return
			}
			cur = t[j]
		default:
			return
		}
	}
}

// underPointer reports whether pointer p is prefix or equal to q.
func underPointer(prefix, p string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// runtimeDeepCopy copies a JSON-like value.
func runtimeDeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, c := range t {
			m[k] = runtimeDeepCopy(c)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, c := range t {
			l[i] = runtimeDeepCopy(c)
		}
		return l
	}
	return v
}
