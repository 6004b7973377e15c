package diff

import (
	"strconv"
	"strings"
)

// escapeToken escapes one JSON pointer reference token (RFC 6901).
func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapeToken(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// join appends one token to a pointer.
func join(ptr, token string) string { return ptr + "/" + escapeToken(token) }

func joinIndex(ptr string, i int) string { return ptr + "/" + strconv.Itoa(i) }

// SplitPointer splits a JSON pointer into its unescaped tokens; "" is the
// whole document and gives no tokens.
func SplitPointer(ptr string) []string {
	if ptr == "" || ptr == "/" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i] = unescapeToken(p)
	}
	return parts
}

// ValidPointer reports whether s is a well-formed JSON pointer: empty, or
// starting with "/" with every "~" escaped as ~0 or ~1.
func ValidPointer(s string) bool {
	if s == "" {
		return true
	}
	if s[0] != '/' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && (i+1 >= len(s) || (s[i+1] != '0' && s[i+1] != '1')) {
			return false
		}
	}
	return true
}

// underPointer reports whether ptr is prefix itself or inside it.
func underPointer(ptr, prefix string) bool {
	if prefix == "" || prefix == "/" {
		return true
	}
	prefix = strings.TrimSuffix(prefix, "/")
	return ptr == prefix || strings.HasPrefix(ptr, prefix+"/")
}

// ValueAt returns the value a JSON pointer names inside an unstructured
// object (maps and lists as decoded from JSON), and whether it exists.
func ValueAt(obj map[string]any, ptr string) (any, bool) {
	var cur any = obj
	for _, tok := range SplitPointer(ptr) {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// removeAt deletes the value a pointer names, in place; it reports whether
// something was removed. A list element is cut out of its list.
func removeAt(obj map[string]any, ptr string) bool {
	toks := SplitPointer(ptr)
	if len(toks) == 0 {
		return false
	}
	parentPtr := ""
	for _, t := range toks[:len(toks)-1] {
		parentPtr = join(parentPtr, t)
	}
	last := toks[len(toks)-1]
	parent, ok := ValueAt(obj, parentPtr)
	if !ok {
		return false
	}
	switch p := parent.(type) {
	case map[string]any:
		if _, ok := p[last]; !ok {
			return false
		}
		delete(p, last)
		return true
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(p) {
			return false
		}
		np := append(p[:i:i], p[i+1:]...)
		// Write the shortened list back into its parent.
		gp := toks[:len(toks)-1]
		return setAt(obj, gp, np)
	}
	return false
}

func setAt(obj map[string]any, toks []string, v any) bool {
	if len(toks) == 0 {
		return false
	}
	var cur any = obj
	for _, t := range toks[:len(toks)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return false
			}
			cur = c[i]
		default:
			return false
		}
	}
	last := toks[len(toks)-1]
	switch c := cur.(type) {
	case map[string]any:
		c[last] = v
		return true
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(c) {
			return false
		}
		c[i] = v
		return true
	}
	return false
}
