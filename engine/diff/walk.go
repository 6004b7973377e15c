package diff

import (
	"fmt"
	"reflect"
	"slices"
)

// change is one raw difference found by walking two trees.
type change struct {
	ptr     string
	desired any
	live    any
	hasD    bool
	hasL    bool
}

// listKeys are the fields that identify elements of Kubernetes lists of
// objects, tried in order; the first that every element carries, uniquely,
// is used to pair elements.
var listKeys = [][]string{
	{"name"},
	{"containerPort", "protocol"},
	{"port", "protocol"},
	{"mountPath"},
	{"devicePath"},
	{"ip"},
	{"type"},
	{"key"},
}

// walk appends to out the differences between want (the dry-run result)
// and have (the live object) under ptr. Pointers name live list indices
// where the element exists live, dry-run indices for elements only Git
// adds.
func walk(ptr string, want, have any, out *[]change) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(w)+len(h))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range h {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			wv, wok := w[k]
			hv, hok := h[k]
			p := join(ptr, k)
			switch {
			case wok && hok:
				walk(p, wv, hv, out)
			case wok:
				*out = append(*out, change{ptr: p, desired: wv, hasD: true})
			default:
				*out = append(*out, change{ptr: p, live: hv, hasL: true})
			}
		}
		return
	case []any:
		h, ok := have.([]any)
		if !ok {
			break
		}
		walkList(ptr, w, h, out)
		return
	}
	if !equalValues(want, have) {
		*out = append(*out, change{ptr: ptr, desired: want, live: have, hasD: true, hasL: true})
	}
}

func walkList(ptr string, w, h []any, out *[]change) {
	if !allMaps(w) || !allMaps(h) || (len(w) == 0 && len(h) == 0) {
		// Lists of scalars (args, command, finalizers) are compared whole.
		if !equalValues(w, h) {
			*out = append(*out, change{ptr: ptr, desired: w, live: h, hasD: true, hasL: true})
		}
		return
	}
	if key := pickKey(w, h); key != nil {
		liveIdx := make(map[string]int, len(h))
		for i, e := range h {
			liveIdx[keyOf(e.(map[string]any), key)] = i
		}
		seen := make(map[string]bool, len(w))
		for i, e := range w {
			k := keyOf(e.(map[string]any), key)
			seen[k] = true
			if j, ok := liveIdx[k]; ok {
				walk(joinIndex(ptr, j), e, h[j], out)
			} else {
				*out = append(*out, change{ptr: joinIndex(ptr, i), desired: e, hasD: true})
			}
		}
		for j, e := range h {
			if !seen[keyOf(e.(map[string]any), key)] {
				*out = append(*out, change{ptr: joinIndex(ptr, j), live: e, hasL: true})
			}
		}
		return
	}
	n := min(len(w), len(h))
	for i := 0; i < n; i++ {
		walk(joinIndex(ptr, i), w[i], h[i], out)
	}
	for i := n; i < len(w); i++ {
		*out = append(*out, change{ptr: joinIndex(ptr, i), desired: w[i], hasD: true})
	}
	for i := n; i < len(h); i++ {
		*out = append(*out, change{ptr: joinIndex(ptr, i), live: h[i], hasL: true})
	}
}

func allMaps(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// pickKey returns the first of listKeys that identifies every element of
// both lists uniquely, or nil.
func pickKey(lists ...[]any) []string {
next:
	for _, key := range listKeys {
		for _, l := range lists {
			seen := make(map[string]bool, len(l))
			for _, e := range l {
				m := e.(map[string]any)
				if _, ok := m[key[0]]; !ok {
					continue next
				}
				k := keyOf(m, key)
				if seen[k] {
					continue next
				}
				seen[k] = true
			}
		}
		return key
	}
	return nil
}

func keyOf(m map[string]any, key []string) string {
	s := ""
	for _, f := range key {
		s += fmt.Sprintf("%v\x00", m[f])
	}
	return s
}

// equalValues compares decoded JSON values, treating every numeric type
// as its number (hand-built objects carry int, decoded ones int64).
func equalValues(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalValues(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
