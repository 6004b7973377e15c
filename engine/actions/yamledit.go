package actions

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"kdrift.dev/kdrift/engine/app"
)

// yamlFile is an App file being edited as text: its lines (each keeping its
// line ending) and the parsed documents that locate things in them. Edits
// insert, replace or delete whole lines, so every other byte of the file,
// comments and layout included, stays as it was.
type yamlFile struct {
	lines []string
	docs  []*yaml.Node
	eol   string
}

func newYAMLFile(src []byte) (*yamlFile, error) {
	docs, err := parseDocs(src)
	if err != nil {
		return nil, err
	}
	eol := "\n"
	if bytes.Contains(src, []byte("\r\n")) {
		eol = "\r\n"
	}
	return &yamlFile{lines: splitLines(src), docs: docs, eol: eol}, nil
}

func (f *yamlFile) bytes() []byte { return []byte(strings.Join(f.lines, "")) }

// appSpec finds the App named name and returns its spec key and block
// mapping value.
func (f *yamlFile) appSpec(name string) (*yaml.Node, *yaml.Node, error) {
	for _, d := range f.docs {
		if !isApp(d, name) {
			continue
		}
		k, v := mapGet(d.Content[0], "spec")
		if k == nil || v.Kind != yaml.MappingNode || len(v.Content) == 0 {
			return nil, nil, fmt.Errorf("App %s has no spec mapping", name)
		}
		if v.Style&yaml.FlowStyle != 0 {
			return nil, nil, fmt.Errorf("App %s: spec is written in flow style ({...}); write it as a block mapping so kdrift can edit it", name)
		}
		return k, v, nil
	}
	return nil, nil, fmt.Errorf("App %s not found in this file", name)
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// blockEnd returns the last line (1-based) of the value of the mapping key
// k: the lines after it that are indented deeper, or, for a block list
// written at the key's own indent, its "- " lines. Blank and comment lines
// never end a block by themselves, but trailing ones are left outside.
func (f *yamlFile) blockEnd(k, v *yaml.Node) int {
	keyCol := k.Column - 1
	dashAtKey := v != nil && v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && v.Column-1 == keyCol && v.Line > k.Line
	end := k.Line
	for i := k.Line + 1; i <= len(f.lines); i++ {
		l := strings.TrimRight(f.lines[i-1], "\r\n")
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if indentOf(l) == 0 && (strings.HasPrefix(l, "---") || strings.HasPrefix(l, "...")) {
			break
		}
		ind := indentOf(l)
		if ind > keyCol || (dashAtKey && ind == keyCol && (t == "-" || strings.HasPrefix(t, "- "))) {
			end = i
			continue
		}
		break
	}
	return end
}

// insertAfter inserts text lines (without line endings) after line n
// (1-based; 0 inserts at the top). At the end of a file with no final line
// break, the block goes before that missing break, so deleting it again
// gives the original bytes back.
func (f *yamlFile) insertAfter(n int, block []string) {
	add := make([]string, len(block))
	for i, l := range block {
		add[i] = l + f.eol
	}
	if n == len(f.lines) && n > 0 && !strings.HasSuffix(f.lines[n-1], "\n") {
		f.lines[n-1] += f.eol
		add[len(add)-1] = strings.TrimSuffix(add[len(add)-1], f.eol)
	}
	f.lines = append(f.lines[:n], append(add, f.lines[n:]...)...)
}

// deleteLines deletes lines a..b (1-based, inclusive); when b was the last
// line and had no line break, the line before loses its break instead.
func (f *yamlFile) deleteLines(a, b int) {
	lastNoEOL := b == len(f.lines) && !strings.HasSuffix(f.lines[b-1], "\n")
	f.lines = append(f.lines[:a-1], f.lines[b:]...)
	if lastNoEOL && a > 1 {
		f.lines[a-2] = strings.TrimSuffix(strings.TrimSuffix(f.lines[a-2], "\n"), "\r")
	}
}

// childIndent is the indent of a block mapping's keys and the step the
// file uses to indent one level.
func childIndent(k, v *yaml.Node) (int, int) {
	ind := v.Content[0].Column - 1
	step := ind - (k.Column - 1)
	if step <= 0 {
		step = 2
	}
	return ind, step
}

// yamlString quotes s for YAML (app.QuoteYAML).
func yamlString(s string) string { return app.QuoteYAML(s) }

func yamlTime(t time.Time) string { return yamlString(t.UTC().Format(time.RFC3339)) }

func freezeLines(ind, step int, fr app.Freeze) []string {
	p, c := strings.Repeat(" ", ind), strings.Repeat(" ", ind+step)
	out := []string{
		p + "freeze:",
		c + "reason: " + yamlString(fr.Reason),
		c + "by: " + yamlString(fr.By),
		c + "at: " + yamlTime(fr.At),
	}
	if fr.Until != nil {
		out = append(out, c+"until: "+yamlTime(*fr.Until))
	}
	return out
}

// setFreeze writes spec.freeze of the App, replacing any freeze already
// there, as the last key of spec.
func setFreeze(src []byte, name string, fr app.Freeze) ([]byte, error) {
	f, err := openApp(src, name, []string{"spec", "freeze"})
	if err != nil {
		return nil, err
	}
	sk, sv, err := f.appSpec(name)
	if err != nil {
		return nil, err
	}
	ind, step := childIndent(sk, sv)
	if fk, fv := mapGet(sv, "freeze"); fk != nil {
		end := f.blockEnd(fk, fv)
		f.deleteLines(fk.Line, end)
		f.insertAfter(fk.Line-1, freezeLines(fk.Column-1, step, fr))
		return f.bytes(), nil
	}
	f.insertAfter(f.blockEnd(sk, sv), freezeLines(ind, step, fr))
	return f.bytes(), nil
}

// removeFreeze deletes spec.freeze of the App, and nothing else.
func removeFreeze(src []byte, name string) ([]byte, error) {
	f, err := openApp(src, name, []string{"spec", "freeze"})
	if err != nil {
		return nil, err
	}
	_, sv, err := f.appSpec(name)
	if err != nil {
		return nil, err
	}
	fk, fv := mapGet(sv, "freeze")
	if fk == nil {
		return nil, fmt.Errorf("App %s is not frozen", name)
	}
	f.deleteLines(fk.Line, f.blockEnd(fk, fv))
	return f.bytes(), nil
}

// setFreezeUntil changes (or adds) spec.freeze.until of the App, touching
// only that line.
func setFreezeUntil(src []byte, name string, until time.Time) ([]byte, error) {
	f, err := openApp(src, name, []string{"spec", "freeze"})
	if err != nil {
		return nil, err
	}
	_, sv, err := f.appSpec(name)
	if err != nil {
		return nil, err
	}
	fk, fv := mapGet(sv, "freeze")
	if fk == nil {
		return nil, fmt.Errorf("App %s is not frozen", name)
	}
	if fv.Kind != yaml.MappingNode || fv.Style&yaml.FlowStyle != 0 || len(fv.Content) == 0 {
		return nil, fmt.Errorf("App %s: spec.freeze is not a block mapping; unfreeze and freeze again", name)
	}
	if uk, uv := mapGet(fv, "until"); uk != nil {
		end := f.blockEnd(uk, uv)
		f.deleteLines(uk.Line, end)
		f.insertAfter(uk.Line-1, []string{strings.Repeat(" ", uk.Column-1) + "until: " + yamlTime(until)})
		return f.bytes(), nil
	}
	ind, _ := childIndent(fk, fv)
	f.insertAfter(f.blockEnd(fk, fv), []string{strings.Repeat(" ", ind) + "until: " + yamlTime(until)})
	return f.bytes(), nil
}

// appendIgnoreRule adds a rule at the end of the App's ignore list (the
// one kdrift's App tool names, spec.ignoreDifferences), creating the list
// when there is none.
func appendIgnoreRule(src []byte, name string, r app.IgnoreRule) ([]byte, error) {
	ed := app.ToolOf(nil).Edits()
	if _, err := ed.IgnoreItem(0, 2, r); err != nil {
		return nil, fmt.Errorf("App %s: %w", name, err)
	}
	return appendToSpecList(src, name, ed.IgnoreList, func(dashInd, step int) []string {
		lines, _ := ed.IgnoreItem(dashInd, step, r)
		return lines
	})
}

// appendToSpecList adds the item that lines writes (given the indent of
// its dash and the file's indent step) at the end of the block list at
// path under spec of the App (appendToList).
func appendToSpecList(src []byte, name string, path []string, lines func(dashInd, step int) []string) ([]byte, error) {
	f, err := openApp(src, name, append([]string{"spec"}, path...))
	if err != nil {
		return nil, err
	}
	sk, sv, err := f.appSpec(name)
	if err != nil {
		return nil, err
	}
	if err := f.appendToList(sk, sv, path, lines); err != nil {
		return nil, fmt.Errorf("App %s: %w", name, err)
	}
	return f.bytes(), nil
}

// appendToList adds the item that lines writes (given the indent of its
// dash and the file's indent step) at the end of the block list at path
// under the block mapping spec (key sk, value sv): spec.freezes, or
// spec.driftDetection.ignore. A list absent, empty or null is written
// out, with the mappings on the way to it that are absent, empty or null
// too; a list or mapping on the way written in flow style, or as
// something else, is refused naming its field. Only the lines of the
// item, and of what is written out, change.
func (f *yamlFile) appendToList(sk, sv *yaml.Node, path []string, lines func(dashInd, step int) []string) error {
	_, step := childIndent(sk, sv)
	pk, pv := sk, sv
	for i, key := range path {
		what := "spec." + strings.Join(path[:i+1], ".")
		last := i == len(path)-1
		k, v := mapGet(pv, key)
		if k != nil && !emptyValue(v, last) {
			if last {
				if v.Kind != yaml.SequenceNode || v.Style&yaml.FlowStyle != 0 {
					return fmt.Errorf("%s is written in flow style ([...]) or is not a list; write it as a block list so kdrift can append to it", what)
				}
				f.insertAfter(f.blockEnd(k, v), lines(v.Column-1, step))
				return nil
			}
			if v.Kind != yaml.MappingNode || v.Style&yaml.FlowStyle != 0 {
				return fmt.Errorf("%s is written in flow style ({...}) or is not a mapping; write it as a block mapping so kdrift can add %s under it", what, path[i+1])
			}
			pk, pv = k, v
			continue
		}
		// What is missing from here on is written out: the keys of
		// path[i:], one level deeper each, and the item under the last.
		var ind, at int
		keys := path[i:]
		switch {
		case k == nil:
			ind, _ = childIndent(pk, pv)
			at = f.blockEnd(pk, pv)
			// Before a freeze that ends an App's spec, so that unfreezing
			// later leaves the list in a natural place.
			if fk, _ := mapGet(pv, "freeze"); pv == sv && fk != nil && pv.Content[len(pv.Content)-2] == fk {
				at = fk.Line - 1
			}
		case bareKey(f.lines[k.Line-1], k):
			// "key:" with nothing after it (a comment at most): the line
			// stays, and what is missing goes under it.
			ind, at, keys = k.Column-1, k.Line, path[i+1:]
		default:
			// key: null, ~, {} or []: the line is written again.
			ind, at = k.Column-1, k.Line-1
			f.deleteLines(k.Line, f.blockEnd(k, v))
		}
		base := ind + (len(path)-i-len(keys))*step
		var block []string
		for j, name := range keys {
			block = append(block, strings.Repeat(" ", base+j*step)+name+":")
		}
		f.insertAfter(at, append(block, lines(ind+(len(path)-i)*step, step)...))
		return nil
	}
	return fmt.Errorf("no list to append to")
}

// bareKey reports whether line, the line of mapping key k, holds the key
// and its colon only, with a comment at most after them.
func bareKey(line string, k *yaml.Node) bool {
	t := strings.TrimRight(line, "\r\n")
	if k.Column-1 > len(t) || !strings.HasPrefix(t[k.Column-1:], k.Value) {
		return false
	}
	rest := strings.TrimLeft(t[k.Column-1+len(k.Value):], " \t")
	if !strings.HasPrefix(rest, ":") {
		return false
	}
	rest = strings.TrimLeft(rest[1:], " \t")
	return rest == "" || strings.HasPrefix(rest, "#")
}

// emptyValue reports whether v, the value of a key on the way to a list
// (list: the list itself), holds nothing: null, or an empty mapping (an
// empty list for the list).
func emptyValue(v *yaml.Node, list bool) bool {
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return true
	case list:
		return v.Kind == yaml.SequenceNode && len(v.Content) == 0
	default:
		return v.Kind == yaml.MappingNode && len(v.Content) == 0
	}
}

// resourceFreezeLines writes one entry of spec.freezes.
func resourceFreezeLines(dashInd, step int, fr app.ResourceFreeze) []string {
	c := strings.Repeat(" ", dashInd+2)
	cc := strings.Repeat(" ", dashInd+2+step)
	out := []string{strings.Repeat(" ", dashInd) + "- resource:"}
	add := func(k, v string) {
		if v != "" {
			out = append(out, cc+k+": "+yamlString(v))
		}
	}
	add("group", fr.Resource.Group)
	add("kind", fr.Resource.Kind)
	add("namespace", fr.Resource.Namespace)
	add("name", fr.Resource.Name)
	if len(fr.Fields) > 0 {
		q := make([]string, len(fr.Fields))
		for i, v := range fr.Fields {
			q[i] = yamlString(v)
		}
		out = append(out, c+"fields: ["+strings.Join(q, ", ")+"]")
	}
	out = append(out, c+"reason: "+yamlString(fr.Reason), c+"by: "+yamlString(fr.By), c+"at: "+yamlTime(fr.At))
	if fr.Until != nil {
		out = append(out, c+"until: "+yamlTime(*fr.Until))
	}
	return out
}

// appendResourceFreezes adds entries at the end of spec.freezes.
func appendResourceFreezes(src []byte, name string, frs []app.ResourceFreeze) ([]byte, error) {
	return appendToSpecList(src, name, []string{"freezes"}, func(dashInd, step int) []string {
		var out []string
		for _, fr := range frs {
			out = append(out, resourceFreezeLines(dashInd, step, fr)...)
		}
		return out
	})
}

// rewriteResourceFreezes replaces the entries of spec.freezes: keep gets
// each entry (parsed, with its index) and returns it (unchanged, or with
// fewer fields) and whether it stays. Entries that stay unchanged keep
// their lines, comments included; a list left empty is removed.
func rewriteResourceFreezes(src []byte, name string, entries []app.ResourceFreeze, keep func(i int, fr app.ResourceFreeze) (app.ResourceFreeze, bool, bool)) ([]byte, error) {
	f, err := openApp(src, name, []string{"spec", "freezes"})
	if err != nil {
		return nil, err
	}
	sk, sv, err := f.appSpec(name)
	if err != nil {
		return nil, err
	}
	lk, lv := mapGet(sv, "freezes")
	if lk == nil {
		return nil, fmt.Errorf("App %s has no spec.freezes", name)
	}
	if lv.Kind != yaml.SequenceNode || lv.Style&yaml.FlowStyle != 0 || len(lv.Content) != len(entries) {
		return nil, fmt.Errorf("App %s: spec.freezes is not a block list kdrift can edit; edit it by hand", name)
	}
	_, step := childIndent(sk, sv)
	listEnd := f.blockEnd(lk, lv)
	type span struct{ from, to int }
	spans := make([]span, len(lv.Content))
	for i, item := range lv.Content {
		from := item.Line
		to := listEnd
		if i+1 < len(lv.Content) {
			to = lv.Content[i+1].Line - 1
			for to > from {
				t := strings.TrimSpace(f.lines[to-1])
				if t != "" && !strings.HasPrefix(t, "#") {
					break
				}
				to--
			}
		}
		spans[i] = span{from, to}
	}
	remaining := 0
	// From the last entry up, so earlier line numbers stay valid.
	type edit struct {
		i     int
		fr    app.ResourceFreeze
		stays bool
		same  bool
	}
	edits := make([]edit, len(entries))
	for i, e := range entries {
		fr, stays, same := keep(i, e)
		edits[i] = edit{i, fr, stays, same}
		if stays {
			remaining++
		}
	}
	if remaining == 0 {
		f.deleteLines(lk.Line, listEnd)
		return f.bytes(), nil
	}
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		if e.stays && e.same {
			continue
		}
		sp := spans[i]
		dash := lv.Content[i].Column - 3
		f.deleteLines(sp.from, sp.to)
		if e.stays {
			f.insertAfter(sp.from-1, resourceFreezeLines(dash, step, e.fr))
		}
	}
	return f.bytes(), nil
}
