package diff

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// This file reads managedFields for the ownership map: entries straight
// from an object's map, fieldsV1 trees walked against the object, and
// fields named with list elements by merge key.

// keyInfo is one fieldsV1 key parsed, with its piece of a field name.
type keyInfo struct {
	pe    fieldpath.PathElement
	plain bool   // a field name that is a plain word
	frag  string // the name piece: the word, ["quoted"], [k=v], [=v] or [i]
	err   error
}

// keyCache parses each distinct fieldsV1 key once per map (the same keys
// recur in every object of a kind) and holds the bookkeeping pointers.
type keyCache struct {
	keys map[string]*keyInfo
	// skip are the pointers of status and bookkeeping metadata (see
	// bookkeeping), left out of the map.
	skip []string
}

func newKeyCache(opts Options) *keyCache {
	c := &keyCache{keys: map[string]*keyInfo{}, skip: []string{"/status"}}
	for _, f := range opts.IgnoredMetadata {
		c.skip = append(c.skip, join("/metadata", f))
	}
	for _, a := range opts.IgnoredAnnotations {
		c.skip = append(c.skip, join("/metadata/annotations", a), join("/spec/template/metadata/annotations", a))
	}
	return c
}

// skipped reports whether ptr is status or bookkeeping metadata.
func (c *keyCache) skipped(ptr string) bool {
	for _, p := range c.skip {
		if strings.HasPrefix(ptr, p) && (len(ptr) == len(p) || ptr[len(p)] == '/') {
			return true
		}
	}
	return false
}

func (c *keyCache) get(key string) *keyInfo {
	if ki, ok := c.keys[key]; ok {
		return ki
	}
	ki := &keyInfo{}
	ki.pe, ki.err = fieldpath.DeserializePathElement(key)
	if ki.err == nil {
		ki.frag = FieldName(fieldpath.Path{ki.pe})
		ki.plain = ki.pe.FieldName != nil && plainWord(*ki.pe.FieldName)
	}
	c.keys[key] = ki
	return ki
}

// managedEntry is one managedFields entry read straight from the object's
// map: GetManagedFields would round-trip every entry through JSON.
type managedEntry struct {
	manager, operation, subresource string
	time                            *time.Time
	fields                          map[string]any
}

func managedEntries(obj map[string]any) []managedEntry {
	md, _ := obj["metadata"].(map[string]any)
	list, _ := md["managedFields"].([]any)
	out := make([]managedEntry, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		e := managedEntry{}
		e.manager, _ = m["manager"].(string)
		e.operation, _ = m["operation"].(string)
		e.subresource, _ = m["subresource"].(string)
		e.fields, _ = m["fieldsV1"].(map[string]any)
		if ts, ok := m["time"].(string); ok {
			if t, err := time.Parse(time.RFC3339, ts); err == nil {
				e.time = &t
			}
		}
		out = append(out, e)
	}
	return out
}

// leafVisit receives one owned leaf present in the object.
type leafVisit func(p fieldpath.Path, name string)

// walkFields visits the leaves of a fieldsV1 tree that the object still
// has (a field under an atomic value counts as present), naming each with
// FieldName's form, and skips status and bookkeeping metadata. val is the
// object's value at path; ptr is path as a JSON pointer while it holds
// field names only ("-" once a list element is in it).
func walkFields(node map[string]any, val any, path fieldpath.Path, name, ptr string, keys *keyCache, visit leafVisit) error {
	var firstErr error
	for key, child := range node {
		if key == "." {
			continue
		}
		ki := keys.get(key)
		if ki.err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("fieldsV1 key %q: %v", key, ki.err)
			}
			continue
		}
		var cv any
		present := false
		switch v := val.(type) {
		case map[string]any:
			if ki.pe.FieldName != nil {
				cv, present = v[*ki.pe.FieldName]
			}
		case []any:
			if ki.pe.FieldName == nil {
				if i := FindElement(v, ki.pe); i >= 0 {
					cv, present = v[i], true
				}
			}
		default:
			cv, present = v, true // inside an atomic value
		}
		if !present {
			continue // a stale entry for a field the object no longer has
		}
		// Bookkeeping sits at most four field names deep
		// (/spec/template/metadata/annotations/X); past that, or past a
		// list element, no pointer is needed.
		cptr := "-"
		if ptr != "-" && ki.pe.FieldName != nil && len(path) < 5 {
			cptr = join(ptr, *ki.pe.FieldName)
			if keys.skipped(cptr) {
				continue
			}
		}
		cname := ki.frag
		switch {
		case name == "":
		case ki.plain:
			cname = name + "." + ki.frag
		default:
			cname = name + ki.frag
		}
		cpath := append(path[:len(path):len(path)], ki.pe)
		cm, _ := child.(map[string]any)
		if isLeafNode(cm) {
			visit(cpath, cname)
			continue
		}
		if err := walkFields(cm, cv, cpath, cname, cptr, keys, visit); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// isLeafNode reports whether a fieldsV1 node has no members below it
// ("." only marks the element itself).
func isLeafNode(m map[string]any) bool {
	for k := range m {
		if k != "." {
			return false
		}
	}
	return true
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
