package live

import (
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"weak"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file keeps the informer caches to one compact copy of each object
// (ARCHITECTURE.md "What the informer caches keep"): an object two
// informers hold (its kind's and the tracked objects') is stored once,
// the field sets of managedFields are shared among objects that have the
// same one, and annotations the engine never reads are left out unless a
// kdrift manager owns them.

// LastAppliedAnnotation is kubectl's client-side apply record: the whole
// object as kubectl last applied it, often the largest part of an
// object's metadata. kdrift never reads it; comparisons ignore it.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// compactor shares objects and field sets among one Watcher's informers.
// Everything it hands out is shared: read only, as the informer caches'
// objects always are.
type compactor struct {
	// drop are the annotations left out of cached objects (see
	// Watcher.DropAnnotations).
	drop []string

	mu sync.Mutex
	// objects is, by object, the version last stored by any informer,
	// held weakly: it goes when no cache holds it any more.
	objects map[objectKey]sharedObject
	// sets are managedFields' fieldsV1 trees by their text (setText),
	// bounded by setBytes: when full it starts over, and the trees
	// already shared stay with their objects.
	sets     map[string]map[string]any
	setBytes int
}

// maxSetBytes bounds the text of the field sets kept for sharing.
const maxSetBytes = 8 << 20

type objectKey struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

type sharedObject struct {
	resourceVersion string
	obj             weak.Pointer[unstructured.Unstructured]
}

// forgotten is what a cleanup needs to remove an entry whose object is
// gone, and only that entry.
type forgotten struct {
	key objectKey
	obj weak.Pointer[unstructured.Unstructured]
}

func newCompactor() *compactor {
	return &compactor{objects: map[objectKey]sharedObject{}, sets: map[string]map[string]any{}}
}

// transform is the informers' transform for resource gvr: the stored
// copy of an object's version when another informer has it, else the
// object compacted.
func (c *compactor) transform(gvr schema.GroupVersionResource) func(any) (any, error) {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		return c.object(gvr, u), nil
	}
}

// object returns the one copy of u's version, compacting u when it is
// the first.
func (c *compactor) object(gvr schema.GroupVersionResource, u *unstructured.Unstructured) *unstructured.Unstructured {
	rv := u.GetResourceVersion()
	key := objectKey{gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()}
	if rv == "" || key.name == "" {
		c.compact(u)
		return u
	}
	if s := c.stored(key, rv); s != nil {
		return s
	}
	c.compact(u)
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.objects[key]; ok && s.resourceVersion == rv {
		if o := s.obj.Value(); o != nil {
			return o // another informer stored it meanwhile
		}
	}
	wp := weak.Make(u)
	c.objects[key] = sharedObject{resourceVersion: rv, obj: wp}
	runtime.AddCleanup(u, c.forget, forgotten{key: key, obj: wp})
	return u
}

// stored is the copy of key's version rv some informer holds, or nil.
func (c *compactor) stored(key objectKey, rv string) *unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.objects[key]; ok && s.resourceVersion == rv {
		return s.obj.Value()
	}
	return nil
}

// forget removes an object's entry once no cache holds the object, unless
// a newer version replaced it.
func (c *compactor) forget(f forgotten) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.objects[f.key]; ok && s.obj == f.obj {
		delete(c.objects, f.key)
	}
}

// compact trims u in place: the dropped annotations (unless a kdrift
// manager owns them) and managedFields' field sets shared.
func (c *compactor) compact(u *unstructured.Unstructured) {
	md, _ := u.Object["metadata"].(map[string]any)
	if md == nil {
		return
	}
	entries, _ := md["managedFields"].([]any)
	if ann, ok := md["annotations"].(map[string]any); ok && len(c.drop) > 0 {
		for _, a := range c.drop {
			if _, has := ann[a]; has && !kdriftOwns(entries, a) {
				delete(ann, a)
			}
		}
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if set, ok := m["fieldsV1"].(map[string]any); ok {
			m["fieldsV1"] = c.set(set)
		}
	}
}

// set returns the shared field set equal to set, keeping set as the
// shared one when it is the first.
func (c *compactor) set(set map[string]any) map[string]any {
	var b strings.Builder
	if !setText(&b, set) {
		return set // not a field set's shape: kept as it is
	}
	text := b.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sets[text]; ok {
		return s
	}
	if c.setBytes+len(text) > maxSetBytes {
		c.sets, c.setBytes = map[string]map[string]any{}, 0
	}
	c.sets[text] = set
	c.setBytes += len(text)
	return set
}

// setText writes a field set as text that two sets share only when they
// are equal: keys sorted, each with its length, children in braces. It
// reports false when a value is not a map, which a field set never has.
func setText(b *strings.Builder, set map[string]any) bool {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteByte('{')
	for _, k := range keys {
		child, ok := set[k].(map[string]any)
		if !ok {
			return false
		}
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
		if !setText(b, child) {
			return false
		}
	}
	b.WriteByte('}')
	return true
}

// kdriftOwns reports whether a managedFields entry of a kdrift manager
// (kdrift, kdrift-handover, any kdrift-…) names annotation: kdrift then
// applies it, and its value counts in comparisons and hand-overs.
func kdriftOwns(entries []any, annotation string) bool {
	key := "f:" + annotation
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		mgr, _ := m["manager"].(string)
		if mgr != FieldManager && !strings.HasPrefix(mgr, FieldManager+"-") {
			continue
		}
		set, _ := m["fieldsV1"].(map[string]any)
		fmd, _ := set["f:metadata"].(map[string]any)
		fann, _ := fmd["f:annotations"].(map[string]any)
		if _, owned := fann[key]; owned {
			return true
		}
	}
	return false
}

// compactAnnotations lists the annotations a cache may drop among ignored:
// those kdrift never reads (LastAppliedAnnotation) that comparisons
// ignore too.
func compactAnnotations(ignored []string) []string {
	if slices.Contains(ignored, LastAppliedAnnotation) {
		return []string{LastAppliedAnnotation}
	}
	return nil
}

// Cached returns a copy of obj as a Watcher's cache keeps it when
// comparisons ignore the annotations ignored (Watcher.IgnoreAnnotations):
// what the engine's comparisons, owners and health read of it.
func Cached(obj *unstructured.Unstructured, ignored []string) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	c := newCompactor()
	c.drop = compactAnnotations(ignored)
	u := obj.DeepCopy()
	c.compact(u)
	return u
}
