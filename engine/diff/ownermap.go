package diff

import (
	"fmt"
	"maps"
	"slices"
	"sort"
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
	// Pointers are the field's JSON pointer in each object that has it
	// (a list element by its index there), for code that writes ignore
	// rules and freezes of the field.
	Pointers []FieldPointer `json:"-"`
}

// FieldPointer is where a row's field sits in one object.
type FieldPointer struct {
	Ref     OwnedRef
	Pointer string
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
	// Refs are the same objects as references, in the same order, for
	// code that opens them.
	Refs []OwnedRef `json:"-"`
}

// OwnedRef is one object of the map: its app and reference.
type OwnedRef struct {
	App string
	Ref status.ObjectRef
}

// sortObjects sorts a writer's objects by name, keeping Refs in step.
func (w *FieldWriter) sortObjects() {
	idx := make([]int, len(w.Objects))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return w.Objects[idx[a]] < w.Objects[idx[b]] })
	objs, refs := make([]string, len(idx)), make([]OwnedRef, len(idx))
	for i, j := range idx {
		objs[i], refs[i] = w.Objects[j], w.Refs[j]
	}
	w.Objects, w.Refs = objs, refs
}

// IsGit reports whether a class writes what Git says: kdrift, or another
// GitOps engine.
func IsGit(c status.OwnerClass) bool { return c == status.OwnerKdrift || c == status.OwnerGitOps }

// Label is the writer as one word: its manager, or "defaulted".
func (w FieldWriter) Label() string {
	if w.Manager == "" {
		return string(status.OwnerDefaulted)
	}
	return w.Manager
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
	keys := newKeyCache(opts.Diff)
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
		if err := k.add(idx, o, keys, opts.Diff); err != nil {
			out.Errors = append(out.Errors, err.Error())
		}
	}
	names := make([]string, 0, len(kinds))
	for key := range kinds {
		names = append(names, key)
	}
	sort.Strings(names)
	for _, key := range names {
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
func (k *kindAcc) add(idx int, o OwnedObject, keys *keyCache, opts Options) error {
	entries := managedEntries(o.Live.Object)
	// The last sync is the newest write of a Git writer to the object.
	var lastSync *time.Time
	for _, e := range entries {
		if IsGit(opts.Classify(e.manager)) && e.time != nil && (lastSync == nil || e.time.After(*lastSync)) {
			lastSync = e.time
		}
	}
	ref := objectName(o)
	var firstErr error
	for _, e := range entries {
		if e.fields == nil || e.subresource == "status" {
			continue
		}
		class := opts.Classify(e.manager)
		when := e.time
		err := walkFields(e.fields, o.Live.Object, nil, "", "", keys, func(p fieldpath.Path, name string) {
			r := k.rows[name]
			if r == nil {
				r = &rowAcc{field: name, path: p, writers: map[string]*writerAcc{}, owned: map[int]bool{}, why: map[string]bool{}, rules: map[string]bool{}}
				k.rows[name] = r
				k.order = append(k.order, name)
			}
			w := r.writers[e.manager]
			if w == nil {
				w = &writerAcc{FieldWriter: FieldWriter{Manager: e.manager, Class: class}, objs: map[int]bool{}}
				r.writers[e.manager] = w
			}
			if !w.objs[idx] {
				w.objs[idx] = true
				w.Count++
				w.Objects = append(w.Objects, ref)
				w.Refs = append(w.Refs, ownedRef(o))
			}
			if when != nil && (w.Newest == nil || when.After(*w.Newest)) {
				w.Newest = when
				w.Operation, w.Subresource = e.operation, e.subresource
			} else if w.Operation == "" {
				w.Operation, w.Subresource = e.operation, e.subresource
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
					r.why[fmt.Sprintf("%s wrote it (time not recorded)", e.manager)] = true
				case lastSync != nil && when.After(*lastSync):
					r.why[fmt.Sprintf("%s wrote it after the last sync", e.manager)] = true
				}
			}
		})
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: managedFields of manager %q: %v", ref, e.manager, err)
		}
	}
	return firstErr
}

// ownedRef is the reference of one object of the map.
func ownedRef(o OwnedObject) OwnedRef {
	gvk := o.Live.GroupVersionKind()
	return OwnedRef{App: o.App, Ref: status.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.Live.GetNamespace(), Name: o.Live.GetName()}}
}

// objectName is how the map names an object: APP:Kind/namespace/name.
func objectName(o OwnedObject) string {
	ref := status.ObjectRef{Kind: o.Live.GetKind(), Namespace: o.Live.GetNamespace(), Name: o.Live.GetName()}
	return o.App + ":" + ref.String()
}

// finish turns the collected rows into the kind's table: defaulted
// writers, covering rules, fights and the contested mark.
func (k *kindAcc) finish(opts OwnerMapOptions) OwnerKind {
	out := OwnerKind{Group: k.group, Kind: k.kind, Objects: len(k.objs), Rows: []OwnerRow{}}
	// What a row needs of each object, worked out once per object.
	type objInfo struct {
		name   string
		rules  []app.IgnoreRule
		fights []status.Fight
	}
	infos := make([]objInfo, len(k.objs))
	for i, o := range k.objs {
		ref := status.ObjectRef{Group: k.group, Kind: k.kind, Namespace: o.Live.GetNamespace(), Name: o.Live.GetName()}
		infos[i] = objInfo{name: objectName(o), rules: matchingRules(ExpandJQ(o.Ignore, o.Live), ref)}
		for _, f := range o.Fights {
			if f.Ref.Kind == k.kind && f.Ref.Group == k.group && f.Ref.Namespace == ref.Namespace && f.Ref.Name == ref.Name {
				infos[i].fights = append(infos[i].fights, f)
			}
		}
	}
	for _, name := range k.order {
		r := k.rows[name]
		row := OwnerRow{Field: r.field}
		def := &FieldWriter{Class: status.OwnerDefaulted}
		for i, o := range k.objs {
			if !r.owned[i] {
				if _, present := valueAtPath(o.Live.Object, r.path); !present {
					continue
				}
				def.Count++
				def.Objects = append(def.Objects, infos[i].name)
				def.Refs = append(def.Refs, ownedRef(o))
			}
			row.Objects++
			if len(infos[i].rules) == 0 && len(infos[i].fights) == 0 {
				continue
			}
			ptr, present := PointerOf(o.Live.Object, r.path)
			if !present {
				continue // owned under an atomic value: no pointer of its own
			}
			if len(infos[i].rules) > 0 {
				var owners []status.Owner
				for _, w := range r.writers {
					if w.objs[i] {
						owners = append(owners, status.Owner{Manager: w.Manager, Class: w.Class})
					}
				}
				for _, rule := range infos[i].rules {
					if ruleCovers(rule, ptr, owners) {
						r.rules[o.App+": "+RuleText(rule)] = true
					}
				}
			}
			for _, f := range infos[i].fights {
				if underPointer(f.Field, ptr) {
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
			w.sortObjects()
			row.Writers = append(row.Writers, w.FieldWriter)
			nonDefault++
			if !IsGit(w.Class) {
				gitOnly = false
			}
		}
		if def.Count > 0 {
			def.sortObjects()
			row.Writers = append(row.Writers, *def)
		}
		sortWriters(row.Writers)
		if nonDefault > 1 {
			r.why[fmt.Sprintf("%d writers", nonDefault)] = true
		}
		row.Why = slices.Sorted(maps.Keys(r.why))
		row.Rules = slices.Sorted(maps.Keys(r.rules))
		row.Contested = len(row.Why) > 0
		if gitOnly && !row.Contested && !opts.All {
			out.GitOnly++
			continue
		}
		for _, o := range k.objs {
			if ptr, ok := PointerOf(o.Live.Object, r.path); ok {
				row.Pointers = append(row.Pointers, FieldPointer{Ref: ownedRef(o), Pointer: ptr})
			}
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
		if ri, rj := ws[i].Class.Rank(), ws[j].Class.Rank(); ri != rj {
			return ri < rj
		}
		return ws[i].Manager < ws[j].Manager
	})
}
