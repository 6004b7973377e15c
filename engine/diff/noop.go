package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Limits on the local judgement (NoOpApply). Past them it defers to the
// dry-run: they bound the work a hostile managedFields entry or object
// can cost, never the answer.
const (
	// noopMaxFieldsV1 bounds the size of the managedFields entry parsed.
	// The apiserver stores objects of at most about 1.5 MiB.
	noopMaxFieldsV1 = 2 << 20
	// noopMaxDepth bounds the nesting of the entry and of the walk.
	noopMaxDepth = 64
	// noopMaxSteps bounds the values visited and list elements compared.
	noopMaxSteps = 1 << 20
)

// NoOpApply reports whether a forced server-side apply of desired by
// manager onto live would leave every value of live as it is, judged from
// live's own managedFields without asking the apiserver. It says yes only
// when the fields manager's Apply entry owns are exactly the fields desired
// sets (list elements matched by the keys the entry names, set elements by
// value, a field owned as a whole compared whole) and every value desired
// sets equals live's; anything it does not recognise makes it defer, and
// why says what. A yes means the dry-run would answer with live's values:
// the rules it relies on are in ARCHITECTURE.md, "Two tiers of compare".
func NoOpApply(desired, live *unstructured.Unstructured, manager string) (noop bool, why string) {
	if desired == nil || live == nil {
		return false, "no live object"
	}
	defer func() {
		// The entry is the apiserver's, but parsing it must not take the
		// process down whatever it holds: the dry-run decides instead.
		if v := recover(); v != nil {
			noop, why = false, fmt.Sprintf("managedFields could not be read (%v)", v)
		}
	}()
	if live.GetDeletionTimestamp() != nil {
		return false, "live object is being deleted"
	}
	if desired.GetAPIVersion() != live.GetAPIVersion() || desired.GetKind() != live.GetKind() ||
		desired.GetName() != live.GetName() || desired.GetNamespace() != live.GetNamespace() {
		return false, "desired and live objects differ in identity"
	}
	var entry *metav1.ManagedFieldsEntry
	for _, e := range live.GetManagedFields() {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" {
			continue
		}
		if entry != nil {
			return false, "several Apply entries of " + manager
		}
		entry = &e
	}
	if entry == nil || entry.FieldsV1 == nil {
		return false, "no Apply entry of " + manager + " in managedFields"
	}
	if entry.APIVersion != desired.GetAPIVersion() {
		return false, fmt.Sprintf("%s applied it as %s, not %s", manager, entry.APIVersion, desired.GetAPIVersion())
	}
	set, err := parseFieldsV1(entry.FieldsV1.GetRawBytes())
	if err != nil {
		return false, err.Error()
	}
	w := noopWalker{builtin: quantityGroups[desired.GroupVersionKind().Group], kind: desired.GetKind()}
	if !w.object(set, desired.Object, live.Object) {
		return false, w.why
	}
	return true, ""
}

// parseFieldsV1 reads a managedFields entry's fieldsV1, refusing one past
// the size and nesting bounds before the parser sees it.
func parseFieldsV1(raw []byte) (*fieldpath.Set, error) {
	if len(raw) > noopMaxFieldsV1 {
		return nil, fmt.Errorf("managedFields entry of %d bytes is too large to judge locally", len(raw))
	}
	if d := jsonDepth(raw); d > noopMaxDepth {
		return nil, fmt.Errorf("managedFields entry nests deeper than %d", noopMaxDepth)
	}
	s := &fieldpath.Set{}
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("managedFields entry: %v", err)
	}
	return s, nil
}

// jsonDepth is the deepest nesting of objects and arrays in raw, counted
// outside strings.
func jsonDepth(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// quantityGroups are the API groups whose objects kdrift knows the
// Quantity fields and the defaulted list keys of: the built-in groups of
// Pods and their templates, PersistentVolumeClaims and ResourceQuotas. A
// CustomResourceDefinition's group always holds a dot, so none of these.
var quantityGroups = map[string]bool{"": true, "apps": true, "batch": true}

// noopWalker walks a desired object, the managed set of kdrift's Apply
// entry and the live object together.
type noopWalker struct {
	// builtin says the object is of a quantityGroups group.
	builtin bool
	kind    string
	path    []string
	steps   int
	why     string
}

// deferTo records why the walk defers at the current path; it returns
// false for the caller to return.
func (w *noopWalker) deferTo(format string, args ...any) bool {
	w.why = fmt.Sprintf("%s: ", w.pointer()) + fmt.Sprintf(format, args...)
	return false
}

func (w *noopWalker) pointer() string {
	if len(w.path) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, p := range w.path {
		b.WriteByte('/')
		b.WriteString(escapeToken(p))
	}
	return b.String()
}

// step counts work and reports whether the budget still allows more.
func (w *noopWalker) step(n int) bool {
	w.steps += n
	if w.steps > noopMaxSteps {
		w.why = "object too large to judge locally"
		return false
	}
	if len(w.path) > noopMaxDepth {
		w.why = fmt.Sprintf("object nests deeper than %d", noopMaxDepth)
		return false
	}
	return true
}

// object walks the top level. What the apiserver never records in a
// managed set or what kdrift never sends (live.ApplyBody drops status and
// the metadata bookkeeping) is left out on the desired side; identity was
// checked by the caller.
func (w *noopWalker) object(s *fieldpath.Set, d, l map[string]any) bool {
	if _, ok := d["metadata"]; ok {
		// The apiserver strips metadata itself from managed sets: an
		// object whose metadata sets nothing but its name has no
		// metadata node at all.
		s.Children.Descend(fieldpath.PathElement{FieldName: ptr("metadata")})
	}
	top := func(k string) bool { return k == "apiVersion" || k == "kind" || k == "status" }
	return w.fields(s, d, l, top)
}

func ptr(s string) *string { return &s }

// skippedMeta are the metadata fields no managed set holds
// (stripped by the apiserver) or kdrift never sends.
var skippedMeta = map[string]bool{
	"name": true, "namespace": true, "creationTimestamp": true, "selfLink": true, "uid": true,
	"generation": true, "managedFields": true, "resourceVersion": true,
}

// fields walks a map that the set describes field by field: each field
// desired sets must be owned, each owned field must be set, and the values
// must agree. skip names desired fields that never reach the apiserver's
// managed set (nil: none).
func (w *noopWalker) fields(s *fieldpath.Set, d, l map[string]any, skip func(string) bool) bool {
	if !w.step(len(d) + 1) {
		return false
	}
	set := 0
	for k, dv := range d {
		if skip != nil && skip(k) {
			continue
		}
		w.path = append(w.path, k)
		if !w.field(s, k, dv, l) {
			return false
		}
		w.path = w.path[:len(w.path)-1]
		set++
	}
	// Every field kdrift owns here must be one desired sets: one it no
	// longer sets is removed by the apply.
	owned := 0
	ok := true
	count := func(pe fieldpath.PathElement) {
		if !ok {
			return
		}
		if pe.FieldName == nil {
			ok = w.deferTo("managed set names a list element where desired has a map")
			return
		}
		if _, has := d[*pe.FieldName]; !has || (skip != nil && skip(*pe.FieldName)) {
			w.path = append(w.path, *pe.FieldName)
			ok = w.deferTo("owned by kdrift but no longer set by desired")
			w.path = w.path[:len(w.path)-1]
			return
		}
		owned++
	}
	s.Members.Iterate(count)
	s.Children.Iterate(func(pe fieldpath.PathElement) {
		if !s.Members.Has(pe) {
			count(pe)
		}
	})
	if !ok {
		return false
	}
	if owned != set {
		return w.deferTo("owned fields and desired fields differ")
	}
	return true
}

// field walks one field of a map: k in d (value dv) against l.
func (w *noopWalker) field(s *fieldpath.Set, k string, dv any, l map[string]any) bool {
	if dv == nil {
		return w.deferTo("desired sets null")
	}
	pe := fieldpath.PathElement{FieldName: &k}
	child, hasChild := s.Children.Get(pe)
	if !hasChild && !s.Members.Has(pe) {
		return w.deferTo("set by desired but not owned by kdrift")
	}
	lv, ok := l[k]
	if !ok {
		return w.deferTo("set by desired, absent live")
	}
	if !hasChild {
		// Owned as a whole: a scalar, or an atomic map or list that the
		// apply replaces entire.
		if !w.equal(dv, lv) {
			return w.deferTo("differs from live")
		}
		return true
	}
	return w.value(child, dv, lv)
}

// value walks a value whose own fields or elements the set describes.
func (w *noopWalker) value(s *fieldpath.Set, dv, lv any) bool {
	switch d := dv.(type) {
	case map[string]any:
		l, isMap := lv.(map[string]any)
		if !isMap {
			return w.deferTo("live is not a map")
		}
		return w.fields(s, d, l, w.metaSkip())
	case []any:
		l, isList := lv.([]any)
		if !isList {
			return w.deferTo("live is not a list")
		}
		return w.list(s, d, l)
	default:
		return w.deferTo("managed set has fields under a scalar")
	}
}

// metaSkip is the skip rule of the object's own metadata; nil elsewhere.
func (w *noopWalker) metaSkip() func(string) bool {
	if len(w.path) == 1 && w.path[0] == "metadata" {
		return func(k string) bool { return skippedMeta[k] }
	}
	return nil
}

// list walks a list whose elements the set names by key (k:{...}) or by
// value (v:...). Each desired element must be an owned one, each owned
// element desired, and desired's elements must stand in live in the same
// order, since the merge keeps live's order only then.
func (w *noopWalker) list(s *fieldpath.Set, d, l []any) bool {
	if !w.step(len(d) + 1) {
		return false
	}
	owned := s.Members.Size()
	s.Children.Iterate(func(pe fieldpath.PathElement) {
		if !s.Members.Has(pe) {
			owned++
		}
	})
	if owned != len(d) {
		return w.deferTo("kdrift owns %d elements, desired sets %d", owned, len(d))
	}
	if len(d) == 0 {
		return true
	}
	var names []string
	byValue := false
	var bad bool
	first := true
	check := func(pe fieldpath.PathElement) {
		switch {
		case pe.Key != nil && !byValue:
			ns := make([]string, len(*pe.Key))
			for i, f := range *pe.Key {
				ns[i] = f.Name
			}
			if first {
				names = ns
			} else if strings.Join(ns, "\x00") != strings.Join(names, "\x00") {
				bad = true
			}
		case pe.Value != nil && names == nil:
			byValue = true
		default:
			bad = true
		}
		first = false
	}
	s.Members.Iterate(check)
	s.Children.Iterate(check)
	if bad || (names == nil && !byValue) {
		return w.deferTo("list elements named other than by key or by value")
	}
	seen := fieldpath.MakePathElementSet(len(d))
	last := -1
	for i, de := range d {
		w.path = append(w.path, strconv.Itoa(i))
		var pe fieldpath.PathElement
		var li int
		if byValue {
			if !scalar(de) {
				return w.deferTo("set element is not a scalar")
			}
			v := value.NewValueInterface(de)
			pe = fieldpath.PathElement{Value: &v}
			li = w.find(l, func(le any) bool { return scalar(le) && w.equal(de, le) })
		} else {
			dm, ok := de.(map[string]any)
			if !ok {
				return w.deferTo("keyed element is not a map")
			}
			key, ok := w.keyOf(dm, names)
			if !ok {
				return false
			}
			pe = fieldpath.PathElement{Key: &key}
			li = w.find(l, func(le any) bool {
				lm, ok := le.(map[string]any)
				if !ok {
					return false
				}
				for _, f := range key {
					lk, ok := lm[f.Name]
					if !ok || !scalar(lk) || !value.Equals(f.Value, value.NewValueInterface(lk)) {
						return false
					}
				}
				return true
			})
		}
		if w.why != "" {
			return false
		}
		if seen.Has(pe) {
			return w.deferTo("desired names this element twice")
		}
		seen.Insert(pe)
		child, hasChild := s.Children.Get(pe)
		if !hasChild && !s.Members.Has(pe) {
			return w.deferTo("element set by desired but not owned by kdrift")
		}
		if li < 0 {
			return w.deferTo("element absent live, or there more than once")
		}
		if li <= last {
			return w.deferTo("desired orders the elements otherwise than live")
		}
		last = li
		if hasChild {
			if !w.value(child, de, l[li]) {
				return false
			}
		} else if !w.equal(de, l[li]) {
			return w.deferTo("differs from live")
		}
		w.path = w.path[:len(w.path)-1]
	}
	return true
}

// find is the index of the one element of l that match accepts; -1 when
// none or several do.
func (w *noopWalker) find(l []any, match func(any) bool) int {
	if !w.step(len(l)) {
		return -1
	}
	at := -1
	for i, le := range l {
		if match(le) {
			if at >= 0 {
				return -1
			}
			at = i
		}
	}
	return at
}

// keyOf builds the key a desired element has under the names the managed
// set keys this list by. A key field desired leaves out is the
// apiserver's default only where kdrift knows it: protocol TCP of the
// ports of the built-in kinds.
func (w *noopWalker) keyOf(e map[string]any, names []string) (value.FieldList, bool) {
	key := make(value.FieldList, 0, len(names))
	for _, n := range names {
		v, ok := e[n]
		if !ok {
			if n == "protocol" && w.builtin && len(w.path) >= 2 && w.path[len(w.path)-2] == "ports" {
				v = "TCP"
			} else {
				return nil, w.deferTo("key field %q left out", n)
			}
		}
		if !scalar(v) {
			return nil, w.deferTo("key field %q is not a scalar", n)
		}
		key = append(key, value.Field{Name: n, Value: value.NewValueInterface(v)})
	}
	key.Sort()
	return key, true
}

// scalar reports whether v is a JSON string, number or boolean.
func scalar(v any) bool {
	switch v.(type) {
	case string, bool, int64, float64, int, int32:
		return true
	}
	return false
}

// equal compares a desired value with the live one as the apiserver
// would store the desired one: numbers by their JSON text (kdrift sends
// JSON), Quantities of the built-in kinds in canonical form, nothing else
// normalised. A null anywhere is unequal.
func (w *noopWalker) equal(dv, lv any) bool {
	if !w.step(1) {
		return false
	}
	switch d := dv.(type) {
	case map[string]any:
		l, ok := lv.(map[string]any)
		if !ok || len(l) != len(d) {
			return false
		}
		for k, v := range d {
			lvv, ok := l[k]
			if !ok {
				return false
			}
			w.path = append(w.path, k)
			eq := w.equal(v, lvv)
			w.path = w.path[:len(w.path)-1]
			if !eq {
				return false
			}
		}
		return true
	case []any:
		l, ok := lv.([]any)
		if !ok || len(l) != len(d) {
			return false
		}
		for i := range d {
			w.path = append(w.path, strconv.Itoa(i))
			eq := w.equal(d[i], l[i])
			w.path = w.path[:len(w.path)-1]
			if !eq {
				return false
			}
		}
		return true
	case string:
		if w.quantity() {
			c := canonicalQuantity(d)
			return c != "" && c == lv
		}
		l, ok := lv.(string)
		return ok && l == d
	case bool:
		l, ok := lv.(bool)
		return ok && l == d
	case int64, float64, int, int32:
		if w.quantity() {
			t, ok := numberText(d)
			c := canonicalQuantity(t)
			return ok && c != "" && c == lv
		}
		dt, ok := numberText(d)
		if !ok {
			return false
		}
		lt, ok := numberText(lv)
		return ok && lt == dt
	}
	return false
}

// quantity reports whether the current path is a Quantity of a built-in
// kind: a value of resources.limits or resources.requests (containers,
// PersistentVolumeClaims and their templates), of a ResourceQuota's
// spec.hard, or of a LimitRange's limits.
func (w *noopWalker) quantity() bool {
	n := len(w.path)
	if !w.builtin || n < 2 {
		return false
	}
	if n >= 3 && w.path[n-3] == "resources" && (w.path[n-2] == "limits" || w.path[n-2] == "requests") {
		return true
	}
	switch w.kind {
	case "ResourceQuota":
		return n == 3 && w.path[0] == "spec" && w.path[1] == "hard"
	case "LimitRange":
		return n == 5 && w.path[0] == "spec" && w.path[1] == "limits" && limitRangeQuantities[w.path[3]]
	}
	return false
}

// limitRangeQuantities are the maps of Quantities of a LimitRange item.
var limitRangeQuantities = map[string]bool{"max": true, "min": true, "default": true, "defaultRequest": true, "maxLimitRequestRatio": true}

// canonicalQuantity is how the apiserver stores the Quantity s; "" when
// s is none.
func canonicalQuantity(s string) string {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return ""
	}
	return q.String()
}

// numberText is a number's JSON text, as kdrift sends it.
func numberText(v any) (string, bool) {
	switch n := v.(type) {
	case int64:
		return strconv.FormatInt(n, 10), true
	case int:
		return strconv.Itoa(n), true
	case int32:
		return strconv.FormatInt(int64(n), 10), true
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return "", false
		}
		b, err := json.Marshal(n)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	return "", false
}
