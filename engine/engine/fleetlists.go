package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// A one-shot command about one App lists that App's tracked objects by
// its label: the apiserver answers a label selector by scanning every
// object of the kind it caches, which is cheap once. A command about many
// Apps (status, owners, the first pass of a TUI without informers) would
// pay that scan once per App, so N Apps cost N scans of the whole fleet.
// Once a Reconcile covers more than one App (core.fleetReads), each kind's
// tracked objects are listed once, for every App, and split by the App
// annotation; a desired object is looked up in that List first, and only
// one it lacks (not applied by kdrift yet, or its label removed) costs the
// List of its kind in its namespace (ARCHITECTURE.md, "One List per kind
// for a fleet").

// trackedKey is the List that holds appName's tracked objects of a kind:
// every tracked object of the kind for a fleet, else the App's own.
func (c *cluster) trackedKey(gvk schema.GroupVersionKind, appName string) listKey {
	if c.fleet != nil && c.fleet.Load() {
		return listKey{gvk: gvk, tracked: true}
	}
	return listKey{gvk: gvk, tracked: true, app: apply.AppLabelValue(appName)}
}

// fleetListed is ref's live object from its kind's fleet-wide tracked
// List, shared (read only); nil when reads are not a fleet's, when the
// List lacks it (it may exist untracked) or failed (the namespace's List
// is asked instead, and reports its own failure).
func (c *cluster) fleetListed(ctx context.Context, ref status.ObjectRef) *unstructured.Unstructured {
	if c.fleet == nil || !c.fleet.Load() {
		return nil
	}
	e := c.lists.get(ctx, c.cs, listKey{gvk: live.GVK(ref), tracked: true})
	if e.err != nil {
		return nil
	}
	return e.byKey[ref.Namespace+"/"+ref.Name]
}

// ofApp is the part of the entry's objects whose App annotation names
// appName (the caller still checks the tracking label): a fleet's List is
// grouped once, not scanned once per App.
func (e *listEntry) ofApp(appName string) []*unstructured.Unstructured {
	e.appOnce.Do(func() {
		e.byApp = map[string][]*unstructured.Unstructured{}
		for _, o := range e.items {
			// Read the one annotation without copying the whole map.
			a, _, _ := unstructured.NestedString(o.Object, "metadata", "annotations", apply.AnnotationApp)
			e.byApp[a] = append(e.byApp[a], o)
		}
	})
	return e.byApp[appName]
}
