package diff

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/status"
)

// Detail renders an object as Git wants it and as it is live, line by
// line, for the diff and ownership views, with DefaultOptions.
func Detail(appName string, desired, live *unstructured.Unstructured, res status.ResourceStatus) status.ObjectDetail {
	return DefaultOptions().Detail(appName, desired, live, res)
}

// Detail renders both sides as YAML with keys sorted like kubectl does,
// normalized as Compare sees them (no status, no bookkeeping). Each line
// carries its field's JSON pointer; live lines also carry the field's
// owners from managedFields. Secret data values are masked on both sides.
// A nil side renders as no lines.
func (o Options) Detail(appName string, desired, live *unstructured.Unstructured, res status.ResourceStatus) status.ObjectDetail {
	d := status.ObjectDetail{App: appName, Resource: res}
	if desired != nil {
		d.Desired = Lines(maskSecret(Normalize(desired, o)), nil)
	}
	if live != nil {
		own, err := NewOwnership(live, o)
		if err != nil {
			// Unparseable managedFields: show the object without owners and
			// say why in the status message.
			own = nil
			if d.Resource.Message == "" {
				d.Resource.Message = err.Error()
			}
		}
		d.Live = Lines(maskSecret(Normalize(live, o)), own)
	}
	return d
}

// maskSecret replaces the values of a Secret's data and stringData.
func maskSecret(obj *unstructured.Unstructured) *unstructured.Unstructured {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "" || gvk.Kind != "Secret" {
		return obj
	}
	for _, f := range []string{"data", "stringData"} {
		if m, ok := obj.Object[f].(map[string]any); ok {
			obj.Object[f] = maskValue(m)
		}
	}
	return obj
}

// Lines renders an object as YAML lines with sorted keys, each carrying
// its JSON pointer and, when own is not nil, its owners: the managers
// that list the field, or own an atomic value it is part of.
func Lines(obj *unstructured.Unstructured, own *Ownership) []status.Line {
	if obj == nil {
		return nil
	}
	e := emitter{own: own}
	e.mapping(obj.Object, 0, "")
	return e.lines
}

type emitter struct {
	own   *Ownership
	lines []status.Line
}

func (e *emitter) add(indent int, text, ptr string, leaf bool) {
	l := status.Line{Text: strings.Repeat(" ", indent) + text, Path: ptr, Parent: !leaf}
	if e.own != nil {
		if leaf {
			l.Owners = e.own.Of(ptr)
		} else if idx := e.own.members[ptr]; len(idx) > 0 {
			l.Owners = e.own.owners(idx)
		}
	}
	e.lines = append(e.lines, l)
}

func (e *emitter) mapping(m map[string]any, indent int, ptr string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e.entry(scalarText(k)+":", m[k], indent, join(ptr, k))
	}
}

// entry renders "prefix value" where prefix is "key:" and value may nest.
func (e *emitter) entry(prefix string, v any, indent int, ptr string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			e.add(indent, prefix+" {}", ptr, true)
			return
		}
		e.add(indent, prefix, ptr, false)
		e.mapping(x, indent+2, ptr)
	case []any:
		if len(x) == 0 {
			e.add(indent, prefix+" []", ptr, true)
			return
		}
		e.add(indent, prefix, ptr, false)
		e.sequence(x, indent, ptr)
	case string:
		if strings.Contains(x, "\n") {
			e.block(prefix, x, indent, ptr)
			return
		}
		e.add(indent, prefix+" "+scalarText(x), ptr, true)
	default:
		e.add(indent, prefix+" "+scalarText(x), ptr, true)
	}
}

// sequence renders list items at the key's indentation, kubectl style.
func (e *emitter) sequence(l []any, indent int, ptr string) {
	for i, item := range l {
		p := joinIndex(ptr, i)
		start := len(e.lines)
		switch x := item.(type) {
		case map[string]any:
			if len(x) == 0 {
				e.add(indent, "- {}", p, true)
				continue
			}
			e.mapping(x, indent+2, p)
		case []any:
			if len(x) == 0 {
				e.add(indent, "- []", p, true)
				continue
			}
			e.add(indent, "-", p, false)
			e.sequence(x, indent+2, p)
			continue
		case string:
			if strings.Contains(x, "\n") {
				e.block("-", x, indent, p)
				continue
			}
			e.add(indent, "- "+scalarText(x), p, true)
			continue
		default:
			e.add(indent, "- "+scalarText(x), p, true)
			continue
		}
		// Put the element's first key on the dash line.
		first := &e.lines[start]
		first.Text = strings.Repeat(" ", indent) + "- " + strings.TrimPrefix(first.Text, strings.Repeat(" ", indent+2))
	}
}

// block renders a multi-line string as a literal block; every line of it
// carries the field's pointer.
func (e *emitter) block(prefix, s string, indent int, ptr string) {
	marker := "|"
	body := s
	if strings.HasSuffix(s, "\n") {
		body = strings.TrimSuffix(s, "\n")
	} else {
		marker = "|-"
	}
	e.add(indent, prefix+" "+marker, ptr, true)
	for _, line := range strings.Split(body, "\n") {
		if line == "" {
			e.add(0, "", ptr, true)
			continue
		}
		e.add(indent+2, line, ptr, true)
	}
}

// scalarText renders a scalar or a key the way YAML needs it: quoted
// when it would otherwise read as another type.
func scalarText(v any) string {
	if v == nil {
		return "null"
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		// Only values JSON cannot hold fail to marshal; show them as Go does.
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(string(b), "\n")
}
