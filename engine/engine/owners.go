package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// Owners returns the field ownership map of the named apps (all when
// none) from the live objects of their last comparison. Under Run the
// objects come from the informer caches, in a one-shot process from the
// lists the last Reconcile read: either way no request reaches the
// apiserver. An app that was never compared is an error.
func (e *core) Owners(ctx context.Context, opts diff.OwnerMapOptions, names ...string) (diff.OwnerMap, error) {
	if len(opts.Diff.KdriftManagers) == 0 {
		opts.Diff = e.opts.Diff
	}
	names, err := e.selectApps(names)
	if err != nil {
		return diff.OwnerMap{}, err
	}
	var objs []diff.OwnedObject
	for _, n := range names {
		o, err := e.ownedObjects(ctx, n)
		if err != nil {
			return diff.OwnerMap{}, err
		}
		objs = append(objs, o...)
	}
	return diff.BuildOwnerMap(objs, opts), nil
}

// selectApps checks names against the declared apps; none means all.
func (e *core) selectApps(names []string) ([]string, error) {
	if len(names) == 0 {
		return e.appNames(), nil
	}
	for _, n := range names {
		if !e.known(n) {
			return nil, e.unknownApp(n)
		}
	}
	return names, nil
}

// appView is what Owners and Orphans read of one app's state.
type appView struct {
	refs    []status.ObjectRef
	kinds   []schema.GroupVersionKind
	spaces  map[string]bool
	context string
	rules   []app.IgnoreRule
	fights  []status.Fight
	dest    string
}

// view copies what Owners and Orphans need of one compared app.
func (e *core) view(name string) (appView, error) {
	e.mu.Lock()
	st, ok := e.states[name]
	var v appView
	if ok {
		v.fights = append(v.fights, st.status.Fights...)
		v.dest = st.status.Destination.Namespace
	}
	if a, found := e.apps.Find(name); found {
		v.rules = a.Spec.IgnoreDifferences
	}
	e.mu.Unlock()
	if !ok {
		return appView{}, fmt.Errorf("app %q was never compared: run a pass first", name)
	}
	st.run.Lock()
	defer st.run.Unlock()
	v.context = st.contextKey
	v.spaces = map[string]bool{}
	if v.dest != "" {
		v.spaces[v.dest] = true
	}
	for _, r := range st.results {
		switch r.Status {
		case status.ResourceMissing, status.ResourceError:
			continue
		}
		if r.Ref.Name != "" {
			v.refs = append(v.refs, r.Ref)
		}
	}
	for _, d := range st.desired {
		if ns := d.GetNamespace(); ns != "" {
			v.spaces[ns] = true
		}
	}
	for gvk := range st.kinds {
		v.kinds = append(v.kinds, gvk)
	}
	sort.Slice(v.refs, func(i, j int) bool { return refKey(v.refs[i]) < refKey(v.refs[j]) })
	sort.Slice(v.kinds, func(i, j int) bool { return v.kinds[i].String() < v.kinds[j].String() })
	return v, nil
}

// ownedObjects reads the live objects of one app for the ownership map.
func (e *core) ownedObjects(ctx context.Context, name string) ([]diff.OwnedObject, error) {
	v, err := e.view(name)
	if err != nil {
		return nil, err
	}
	cl, err := e.clusterFor(v.context)
	if err != nil {
		return nil, err
	}
	out := make([]diff.OwnedObject, 0, len(v.refs))
	for _, ref := range v.refs {
		lv, err := cl.peek(ctx, ref)
		if err != nil {
			return nil, err
		}
		if lv == nil {
			continue // deleted since the comparison
		}
		out = append(out, diff.OwnedObject{App: name, Live: lv, Ignore: v.rules, Fights: v.fights})
	}
	return out, nil
}

// Orphans lists the live objects in the named apps' namespaces (all apps
// when none), of the kinds those apps render, that no compared app
// renders or tracks and that neither a controller nor Git made (see
// diff.IsOrphan), sorted by kind, namespace and name. Cluster-scoped
// kinds are looked at across the cluster. Like Owners it reads only what
// the engine holds once the apps were compared.
func (e *core) Orphans(ctx context.Context, names ...string) ([]status.Orphan, error) {
	names, err := e.selectApps(names)
	if err != nil {
		return nil, err
	}
	// What every compared app renders or tracks, by context.
	known := map[string]bool{}
	e.mu.Lock()
	all := make([]string, 0, len(e.states))
	for n := range e.states {
		all = append(all, n)
	}
	e.mu.Unlock()
	views := map[string]appView{}
	for _, n := range all {
		v, err := e.view(n)
		if err != nil {
			return nil, err
		}
		views[n] = v
		cl, err := e.clusterFor(v.context)
		if err != nil {
			return nil, err
		}
		for _, r := range v.refs {
			known[cl.name+"|"+refKey(r)] = true
		}
	}
	type scope struct {
		context string
		gvk     schema.GroupVersionKind
		ns      string
	}
	apps := map[scope][]string{}
	var order []scope
	for _, n := range names {
		v, ok := views[n]
		if !ok {
			return nil, fmt.Errorf("app %q was never compared: run a pass first", n)
		}
		cl, err := e.clusterFor(v.context)
		if err != nil {
			return nil, err
		}
		for _, gvk := range v.kinds {
			m, err := cl.cs.Mapping(ctx, gvk)
			if err != nil {
				if isNoMatch(err) {
					continue
				}
				return nil, err
			}
			spaces := []string{""}
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				spaces = spaces[:0]
				for ns := range v.spaces {
					spaces = append(spaces, ns)
				}
				sort.Strings(spaces)
			}
			for _, ns := range spaces {
				s := scope{v.context, gvk, ns}
				if _, seen := apps[s]; !seen {
					order = append(order, s)
				}
				apps[s] = append(apps[s], n)
			}
		}
	}
	var out []status.Orphan
	seen := map[string]int{}
	for _, s := range order {
		cl, err := e.clusterFor(s.context)
		if err != nil {
			return nil, err
		}
		items, err := cl.listAll(ctx, s.gvk, s.ns)
		if err != nil {
			return nil, err
		}
		for _, o := range items {
			ref := live.RefOf(o)
			if ref.Kind == "" {
				ref.Group, ref.Version, ref.Kind = s.gvk.Group, s.gvk.Version, s.gvk.Kind
			}
			key := cl.name + "|" + refKey(ref)
			if known[key] || o.GetLabels()[apply.LabelManagedBy] == apply.LabelManagedByValue {
				continue
			}
			creator, orphan := diff.IsOrphan(o, e.opts.Diff)
			if !orphan {
				continue
			}
			if i, dup := seen[key]; dup {
				out[i].Apps = mergeNames(out[i].Apps, apps[s])
				continue
			}
			seen[key] = len(out)
			out = append(out, status.Orphan{Ref: ref, Apps: mergeNames(nil, apps[s]), Creator: creator})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Ref, out[j].Ref
		if a.Group+"/"+a.Kind != b.Group+"/"+b.Kind {
			return a.Group+"/"+a.Kind < b.Group+"/"+b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out, nil
}

// mergeNames adds names to a sorted set of names.
func mergeNames(set, names []string) []string {
	for _, n := range names {
		if i, found := slices.BinarySearch(set, n); !found {
			set = slices.Insert(set, i, n)
		}
	}
	return set
}

// listAll lists every object of a kind in a namespace ("" for all or a
// cluster-scoped kind): from the informer under Run, else through the
// one-shot list cache a pass filled. The objects are shared: read only.
func (c *cluster) listAll(ctx context.Context, gvk schema.GroupVersionKind, ns string) ([]*unstructured.Unstructured, error) {
	if c.watcher != nil {
		return c.watcher.List(ctx, gvk, ns)
	}
	le := c.lists.get(ctx, c.cs, listKey{gvk: gvk, namespace: ns})
	return le.items, le.err
}
