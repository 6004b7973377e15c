package diff

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// OwnedObject is one live object for the ownership map, with what its app
// says about it.
type OwnedObject struct {
	// App is the app that renders (or tracks) the object.
	App string
	// Live is the object as the cluster holds it, managedFields included.
	// It is only read.
	Live *unstructured.Unstructured
	// Ignore are the app's ignoreDifferences rules.
	Ignore []app.IgnoreRule
	// Fights are the app's fights; those naming this object mark their
	// field contested.
	Fights []status.Fight
}

// OwnerMapOptions tune BuildOwnerMap.
type OwnerMapOptions struct {
	// All keeps rows where Git alone writes; by default they are folded
	// into one count per kind.
	All bool
	// Kinds keeps only these kinds (all when empty).
	Kinds []KindFilter
	// Diff classifies managers and names the bookkeeping fields left out.
	Diff Options
}

// KindFilter selects a kind, and a group when Group is set; Kind matches
// case-insensitively.
type KindFilter struct {
	Kind  string
	Group string
	// AnyGroup is set when the filter named no group.
	AnyGroup bool
}

// ParseKindFilter reads KIND or KIND.GROUP ("Deployment",
// "deployment.apps", "Service." for the core group only).
func ParseKindFilter(s string) (KindFilter, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return KindFilter{}, fmt.Errorf("kind %q is empty: give KIND or KIND.GROUP, such as Deployment or deployment.apps", s)
	}
	kind, group, dotted := strings.Cut(s, ".")
	if kind == "" || strings.ContainsAny(s, " /\t") {
		return KindFilter{}, fmt.Errorf("kind %q is not KIND or KIND.GROUP (such as Deployment or deployment.apps)", s)
	}
	return KindFilter{Kind: kind, Group: group, AnyGroup: !dotted}, nil
}

// Matches reports whether the filter selects a group and kind.
func (f KindFilter) Matches(group, kind string) bool {
	return strings.EqualFold(f.Kind, kind) && (f.AnyGroup || strings.EqualFold(f.Group, group))
}

// OwnerMap is the field ownership table of a set of objects: per kind, the
// fields and who writes them.
type OwnerMap struct {
	Kinds []OwnerKind `json:"kinds"`
	// Objects counts the objects the map was built from.
	Objects int `json:"objects"`
	// Errors name objects whose managedFields could not be read; the
	// rest of the map stands.
	Errors []string `json:"errors,omitempty"`
}

// OwnerKind is the ownership of one kind's fields.
type OwnerKind struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	// Objects counts the objects of the kind.
	Objects int        `json:"objects"`
	Rows    []OwnerRow `json:"rows"`
	// GitOnly counts the fields folded away because Git alone writes
	// them (0 with All).
	GitOnly int `json:"gitOnlyFields"`
}

// OwnerRow is one field of a kind and its writers across the objects.
type OwnerRow struct {
	// Field names the field with list elements by merge key, such as
	// spec.template.spec.containers[name=web].image.
	Field string `json:"field"`
	// Objects counts the objects that have the field live.
	Objects int           `json:"objects"`
	Writers []FieldWriter `json:"writers"`
	// Rules are the ignoreDifferences rules that cover the field, as
	// "APP: rule".
	Rules []string `json:"ignoreRules,omitempty"`
	// Contested says more than one non-default writer holds the field, a
	// fight was seen on it, or a person wrote it after the last sync (or
	// at a time managedFields did not record).
	Contested bool `json:"contested"`
	// Why gives the reasons for Contested.
	Why []string `json:"why,omitempty"`
}

// FieldWriter is one writer of a field across the objects of a kind.
type FieldWriter struct {
	// Manager is the field manager; empty for the defaulted writer.
	Manager string            `json:"manager,omitempty"`
	Class   status.OwnerClass `json:"class"`
	// Operation and Subresource are those of the newest write.
	Operation   string `json:"operation,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	// Count is how many objects this writer holds the field in.
	Count int `json:"count"`
	// Newest is the time of the newest write (absent when managedFields
	// recorded none, and for defaulted).
	Newest *time.Time `json:"newest,omitempty"`
	// Objects are the objects, as APP:Kind/namespace/name, sorted.
	Objects []string `json:"objects"`
}

// IsGit reports whether a class writes what Git says (kdrift, or another
// GitOps engine once it has a class of its own).
func IsGit(c status.OwnerClass) bool { return c == status.OwnerKdrift }

// Label is the writer as one word: its manager, or "defaulted".
func (w FieldWriter) Label() string {
	if w.Manager == "" {
		return string(status.OwnerDefaulted)
	}
	return w.Manager
}

// parsedFields is one distinct fieldsV1 document: its leaves and their
// names, parsed once however many objects share it.
type parsedFields struct {
	leaves []fieldpath.Path
	names  []string
	err    error
}

// rowAcc collects one row while the objects are read.
type rowAcc struct {
	field   string
	path    fieldpath.Path
	writers map[string]*writerAcc
	// owned marks the objects (index into the kind's objects) that have
	// an owner of the field.
	owned map[int]bool
	why   map[string]bool
	rules map[string]bool
}

// writerAcc is one writer of a row and the objects (by index) it holds
// the field in.
type writerAcc struct {
	FieldWriter
	objs map[int]bool
}

type kindAcc struct {
	group, kind string
	objs        []OwnedObject
	rows        map[string]*rowAcc
	order       []string
}

// BuildOwnerMap groups the fields of objects by kind and field path and
// names their writers, from managedFields alone. It only reads the
// objects. Status and bookkeeping metadata are left out.
func BuildOwnerMap(objects []OwnedObject, opts OwnerMapOptions) OwnerMap {
	out := OwnerMap{}
	cache := map[string]*parsedFields{}
	kinds := map[string]*kindAcc{}
	for _, o := range objects {
		if o.Live == nil {
			continue
		}
		gvk := o.Live.GroupVersionKind()
		if !kindSelected(opts.Kinds, gvk.Group, gvk.Kind) {
			continue
		}
		out.Objects++
		key := gvk.Group + "/" + gvk.Kind
		k := kinds[key]
		if k == nil {
			k = &kindAcc{group: gvk.Group, kind: gvk.Kind, rows: map[string]*rowAcc{}}
			kinds[key] = k
		}
		idx := len(k.objs)
		k.objs = append(k.objs, o)
		if err := k.add(idx, o, cache, opts.Diff); err != nil {
			out.Errors = append(out.Errors, err.Error())
		}
	}
	keys := make([]string, 0, len(kinds))
	for key := range kinds {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		out.Kinds = append(out.Kinds, kinds[key].finish(opts))
	}
	return out
}

func kindSelected(filters []KindFilter, group, kind string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if f.Matches(group, kind) {
			return true
		}
	}
	return false
}

// add records every field of one object's managedFields entries.
func (k *kindAcc) add(idx int, o OwnedObject, cache map[string]*parsedFields, opts Options) error {
	entries := o.Live.GetManagedFields()
	// The last sync is the newest write of a Git writer to the object.
	var lastSync *time.Time
	for _, e := range entries {
		if IsGit(opts.Classify(e.Manager)) && e.Time != nil && (lastSync == nil || e.Time.After(*lastSync)) {
			t := e.Time.Time
			lastSync = &t
		}
	}
	ref := objectName(o)
	var firstErr error
	for _, e := range entries {
		if e.FieldsV1 == nil || e.Subresource == "status" {
			continue
		}
		raw := string(e.FieldsV1.Raw)
		pf := cache[raw]
		if pf == nil {
			pf = parseFields(e.FieldsV1.Raw, opts)
			cache[raw] = pf
		}
		if pf.err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: managedFields of manager %q: cannot parse fieldsV1: %v", ref, e.Manager, pf.err)
			}
			continue
		}
		class := opts.Classify(e.Manager)
		var when *time.Time
		if e.Time != nil {
			t := e.Time.Time
			when = &t
		}
		for i, p := range pf.leaves {
			name := pf.names[i]
			r := k.rows[name]
			if r == nil {
				r = &rowAcc{field: name, path: p, writers: map[string]*writerAcc{}, owned: map[int]bool{}, why: map[string]bool{}, rules: map[string]bool{}}
				k.rows[name] = r
				k.order = append(k.order, name)
			}
			if !declared(o.Live.Object, p) {
				continue // a stale entry for a field the object no longer has
			}
			w := r.writers[e.Manager]
			if w == nil {
				w = &writerAcc{FieldWriter: FieldWriter{Manager: e.Manager, Class: class}, objs: map[int]bool{}}
				r.writers[e.Manager] = w
			}
			if !w.objs[idx] {
				w.objs[idx] = true
				w.Count++
				w.Objects = append(w.Objects, ref)
			}
			if when != nil && (w.Newest == nil || when.After(*w.Newest)) {
				w.Newest = when
				w.Operation, w.Subresource = string(e.Operation), e.Subresource
			} else if w.Operation == "" {
				w.Operation, w.Subresource = string(e.Operation), e.Subresource
			}
			r.owned[idx] = true
			if class == status.OwnerPerson {
				switch {
				case when == nil:
					// kubectl scale records no time (an Update through
					// the scale subresource); a forced sync would have
					// taken a declared field back, so the write is
					// likely newer, and a person's hand on a GitOps
					// object is what the table is for.
					r.why[fmt.Sprintf("%s wrote it (time not recorded)", e.Manager)] = true
				case lastSync != nil && when.After(*lastSync):
					r.why[fmt.Sprintf("%s wrote it after the last sync", e.Manager)] = true
				}
			}
		}
	}
	return firstErr
}

// parseFields parses one fieldsV1 document and names its leaves, leaving
// out status and bookkeeping metadata.
func parseFields(raw []byte, opts Options) *parsedFields {
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
		return &parsedFields{err: err}
	}
	pf := &parsedFields{}
	set.Leaves().Iterate(func(p fieldpath.Path) {
		if bookkeeping(pathPointerNames(p), opts) {
			return
		}
		pf.leaves = append(pf.leaves, p.Copy())
		pf.names = append(pf.names, FieldName(p))
	})
	return pf
}

// pathPointerNames is a JSON pointer of a path's field names, enough to
// tell bookkeeping fields (which sit above any list).
func pathPointerNames(p fieldpath.Path) string {
	ptr := ""
	for _, pe := range p {
		if pe.FieldName == nil {
			return ptr + "/-"
		}
		ptr = join(ptr, *pe.FieldName)
	}
	return ptr
}

// FieldName names a managedFields path with list elements by merge key:
// spec.template.spec.containers[name=web].image. Map keys that are not
// plain words are quoted: metadata.annotations["example.com/owner"].
func FieldName(p fieldpath.Path) string {
	var b strings.Builder
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			n := *pe.FieldName
			if plainWord(n) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(n)
			} else {
				b.WriteString("[" + strconv.Quote(n) + "]")
			}
		case pe.Key != nil:
			b.WriteByte('[')
			for i, f := range *pe.Key {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(f.Name + "=" + keyText(f.Value.Unstructured()))
			}
			b.WriteByte(']')
		case pe.Value != nil:
			b.WriteString("[=" + keyText((*pe.Value).Unstructured()) + "]")
		case pe.Index != nil:
			b.WriteString("[" + strconv.Itoa(*pe.Index) + "]")
		}
	}
	return b.String()
}

func plainWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// keyText renders a merge key value: bare when it is a plain word.
func keyText(v any) string {
	switch t := v.(type) {
	case string:
		if plainWord(t) {
			return t
		}
		return strconv.Quote(t)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

// objectName is how the map names an object: APP:Kind/namespace/name.
func objectName(o OwnedObject) string {
	ref := status.ObjectRef{Kind: o.Live.GetKind(), Namespace: o.Live.GetNamespace(), Name: o.Live.GetName()}
	return o.App + ":" + ref.String()
}

// finish turns the collected rows into the kind's table: defaulted
// writers, covering rules, fights and the contested mark.
func (k *kindAcc) finish(opts OwnerMapOptions) OwnerKind {
	out := OwnerKind{Group: k.group, Kind: k.kind, Objects: len(k.objs)}
	for _, name := range k.order {
		r := k.rows[name]
		row := OwnerRow{Field: r.field}
		def := &FieldWriter{Class: status.OwnerDefaulted}
		for i, o := range k.objs {
			ptr, present := PointerOf(o.Live.Object, r.path)
			if !present {
				continue
			}
			row.Objects++
			if !r.owned[i] {
				def.Count++
				def.Objects = append(def.Objects, objectName(o))
			}
			var owners []status.Owner
			for _, w := range r.writers {
				if w.objs[i] {
					owners = append(owners, status.Owner{Manager: w.Manager, Class: w.Class})
				}
			}
			ref := status.ObjectRef{Group: k.group, Kind: k.kind, Namespace: o.Live.GetNamespace(), Name: o.Live.GetName()}
			for _, rule := range matchingRules(o.Ignore, ref) {
				if ruleCovers(rule, ptr, owners) {
					r.rules[o.App+": "+RuleText(rule)] = true
				}
			}
			for _, f := range o.Fights {
				if f.Ref.Kind == k.kind && f.Ref.Group == k.group && f.Ref.Namespace == ref.Namespace && f.Ref.Name == ref.Name && underPointer(f.Field, ptr) {
					r.why[fmt.Sprintf("fight with %s", f.Manager)] = true
				}
			}
		}
		if row.Objects == 0 {
			continue
		}
		nonDefault, gitOnly := 0, true
		for _, w := range r.writers {
			if w.Count == 0 {
				continue
			}
			sort.Strings(w.Objects)
			row.Writers = append(row.Writers, w.FieldWriter)
			nonDefault++
			if !IsGit(w.Class) {
				gitOnly = false
			}
		}
		if def.Count > 0 {
			sort.Strings(def.Objects)
			row.Writers = append(row.Writers, *def)
		}
		sortWriters(row.Writers)
		if nonDefault > 1 {
			r.why[fmt.Sprintf("%d writers", nonDefault)] = true
		}
		row.Why = sortedKeys(r.why)
		row.Rules = sortedKeys(r.rules)
		row.Contested = len(row.Why) > 0
		if gitOnly && !row.Contested && !opts.All {
			out.GitOnly++
			continue
		}
		out.Rows = append(out.Rows, row)
	}
	sort.SliceStable(out.Rows, func(i, j int) bool {
		if out.Rows[i].Contested != out.Rows[j].Contested {
			return out.Rows[i].Contested
		}
		return out.Rows[i].Field < out.Rows[j].Field
	})
	return out
}

// ruleCovers reports whether one rule covers a field: under one of its
// pointers, or owned by one of its managers (the test Compare uses).
func ruleCovers(r app.IgnoreRule, ptr string, owners []status.Owner) bool {
	return ignored([]app.IgnoreRule{r}, ptr, owners)
}

// RuleText renders an ignoreDifferences rule in one line: its target and
// what it ignores.
func RuleText(r app.IgnoreRule) string {
	var target []string
	kind := r.Kind
	if kind == "" {
		kind = "*"
	}
	if r.Group != "" {
		kind += "." + r.Group
	}
	target = append(target, kind)
	if r.Namespace != "" {
		target = append(target, "namespace="+r.Namespace)
	}
	if r.Name != "" {
		target = append(target, "name="+r.Name)
	}
	var what []string
	what = append(what, r.JSONPointers...)
	for _, m := range r.ManagedFieldsManagers {
		what = append(what, "manager="+m)
	}
	return strings.Join(target, " ") + " " + strings.Join(what, ",")
}

// sortWriters orders writers by how many objects they hold, then by
// class (person first, defaulted last) and manager.
func sortWriters(ws []FieldWriter) {
	sort.SliceStable(ws, func(i, j int) bool {
		if ws[i].Count != ws[j].Count {
			return ws[i].Count > ws[j].Count
		}
		if ri, rj := rank(ws[i].Class), rank(ws[j].Class); ri != rj {
			return ri < rj
		}
		return ws[i].Manager < ws[j].Manager
	})
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
