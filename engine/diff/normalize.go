package diff

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Normalize returns a copy of obj without what is never drift: status,
// the metadata bookkeeping in opts.IgnoredMetadata, and the annotations in
// opts.IgnoredAnnotations (on the object and on its pod template). Empty
// annotation and label maps left behind are dropped too. A nil obj gives
// nil.
func Normalize(obj *unstructured.Unstructured, opts Options) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	// Copy all but what is dropped: managedFields and status are often
	// most of an object, and copying them only to delete them is waste.
	c := &unstructured.Unstructured{Object: make(map[string]any, len(obj.Object))}
	for k, v := range obj.Object {
		if k == "status" {
			continue
		}
		if md, ok := v.(map[string]any); ok && k == "metadata" {
			m := make(map[string]any, len(md))
			for mk, mv := range md {
				if !slices.Contains(opts.IgnoredMetadata, mk) {
					m[mk] = deepCopy(mv)
				}
			}
			cleanMeta(m, opts)
			c.Object[k] = m
			continue
		}
		c.Object[k] = deepCopy(v)
	}
	if tmd, ok := nestedMap(c.Object, "spec", "template", "metadata"); ok {
		cleanMeta(tmd, opts)
		// The apiserver writes creationTimestamp: null into templates.
		if v, ok := tmd["creationTimestamp"]; ok && v == nil {
			delete(tmd, "creationTimestamp")
		}
	}
	return c
}

func cleanMeta(md map[string]any, opts Options) {
	if ann, ok := md["annotations"].(map[string]any); ok {
		for _, a := range opts.IgnoredAnnotations {
			delete(ann, a)
		}
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	if l, ok := md["labels"].(map[string]any); ok {
		for _, k := range opts.IgnoredLabels {
			delete(l, k)
		}
		if len(l) == 0 {
			delete(md, "labels")
		}
	}
}

func nestedMap(obj map[string]any, fields ...string) (map[string]any, bool) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = m[f]
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// bookkeeping reports whether a live pointer is a field Normalize drops,
// so ownership of it is never reported as an extra field.
func bookkeeping(ptr string, opts Options) bool {
	if underPointer(ptr, "/status") {
		return true
	}
	for _, f := range opts.IgnoredMetadata {
		if underPointer(ptr, join("/metadata", f)) {
			return true
		}
	}
	for _, a := range opts.IgnoredAnnotations {
		if underPointer(ptr, join("/metadata/annotations", a)) || underPointer(ptr, join("/spec/template/metadata/annotations", a)) {
			return true
		}
	}
	for _, l := range opts.IgnoredLabels {
		if underPointer(ptr, join("/metadata/labels", l)) {
			return true
		}
	}
	return false
}
