package actions

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"kdrift.dev/kdrift/engine/app"
)

// Edits write block YAML. A mapping or list an edit must write into that
// is written in flow style (metadata: {name: kg, namespace: flux-system})
// is first rewritten as a block, and only it: the bytes before it on its
// key's line, a comment after it and every other line stay as they were.
// Its entries keep their own style (a nested {...} stays flow, a quoted
// value stays quoted).

// blockStyle rewrites, in the document root finds (looked up again after
// each rewrite), each non-empty mapping or list written in flow style
// along each of paths, a list of keys from the document's root, as a
// block. A value on the way that is neither stops that path there.
func (f *yamlFile) blockStyle(root func(*yamlFile) (*yaml.Node, error), paths ...[]string) (*yamlFile, error) {
	limit := 1
	for _, p := range paths {
		limit += len(p)
	}
	for range limit {
		r, err := root(f)
		if err != nil {
			return nil, err
		}
		k, v := flowOnPaths(r, paths)
		if k == nil {
			return f, nil
		}
		if f, err = f.unflow(k, v, docStep(r)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// flowOnPaths is the first key along paths from r whose value is a
// non-empty flow mapping or list, with that value; nil when there is none.
func flowOnPaths(r *yaml.Node, paths [][]string) (*yaml.Node, *yaml.Node) {
	for _, p := range paths {
		cur := r
		for _, key := range p {
			k, v := mapGet(cur, key)
			if k == nil {
				break
			}
			if isFlow(v) {
				return k, v
			}
			if v.Kind != yaml.MappingNode {
				break
			}
			cur = v
		}
	}
	return nil, nil
}

// isFlow says v is a mapping or list with entries written in flow style.
func isFlow(v *yaml.Node) bool {
	return (v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode) && v.Style&yaml.FlowStyle != 0 && len(v.Content) > 0
}

// docStep is the indent step of the block mappings under r: the
// difference between a key's column and its block mapping's keys; 2 when
// r has none.
func docStep(r *yaml.Node) int {
	for i := 0; r != nil && r.Kind == yaml.MappingNode && i+1 < len(r.Content); i += 2 {
		k, v := r.Content[i], r.Content[i+1]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Content[0].Line > k.Line {
			if step := v.Content[0].Column - k.Column; step > 0 {
				return step
			}
		}
	}
	return 2
}

// unflow rewrites v, the flow mapping or list that is the value of key k,
// as a block under k, indented one step deeper than k. The rewritten file
// must decode to the same documents, or nothing is rewritten.
func (f *yamlFile) unflow(k, v *yaml.Node, step int) (*yamlFile, error) {
	what := "the value of " + k.Value
	refuse := func(why string) error {
		return fmt.Errorf("line %d: %s is written in flow style and %s; write it as a block so kdrift can edit it", v.Line, what, why)
	}
	li := v.Line - 1
	if li < 0 || li >= len(f.lines) {
		return nil, refuse("is not where the parser put it")
	}
	off := byteOffset(f.lines[li], v.Column-1)
	if off < 0 || off >= len(f.lines[li]) || (f.lines[li][off] != '{' && f.lines[li][off] != '[') {
		return nil, refuse("carries an anchor or a tag")
	}
	endLine, endOff, comments, err := flowEnd(f.lines, li, off)
	if err != nil {
		return nil, refuse(err.Error())
	}
	lastEOL := lineEnding(f.lines[endLine])
	after := strings.TrimRight(strings.TrimSuffix(f.lines[endLine][endOff:], lastEOL), " \t")
	rest := strings.TrimLeft(after, " \t")
	if rest != "" && !strings.HasPrefix(rest, "#") {
		return nil, refuse("is followed by " + rest)
	}
	body, err := encodeBlock(v, step)
	if err != nil {
		return nil, refuse("cannot be written again: " + err.Error())
	}
	for _, c := range comments {
		if !strings.Contains(strings.Join(body, "\n"), c) {
			return nil, refuse("holds a comment (" + c + ") kdrift cannot keep")
		}
	}
	ind := strings.Repeat(" ", k.Column-1+step)
	var out []string
	if prefix := strings.TrimRight(f.lines[li][:off], " \t"); strings.TrimSpace(prefix) != "" {
		if rest != "" {
			prefix += after // the comment, as far from the key as it was
		}
		out = append(out, prefix)
	} else if rest != "" {
		out = append(out, ind+rest)
	}
	for _, l := range body {
		if l != "" {
			l = ind + l
		}
		out = append(out, l)
	}
	for i := range out {
		out[i] += f.eol
	}
	out[len(out)-1] = strings.TrimSuffix(out[len(out)-1], f.eol) + lastEOL
	lines := append(append(append([]string(nil), f.lines[:li]...), out...), f.lines[endLine+1:]...)
	next, err := newYAMLFile([]byte(strings.Join(lines, "")))
	if err != nil {
		return nil, refuse("does not parse once written as a block: " + err.Error())
	}
	if !sameDocs(f, next) {
		return nil, refuse("would mean something else written as a block")
	}
	return next, nil
}

// encodeBlock is v written as a block (its entries in their own style),
// one line per element, without indentation or line endings.
func encodeBlock(v *yaml.Node, step int) ([]string, error) {
	nv := *v
	nv.Style &^= yaml.FlowStyle
	nv.HeadComment, nv.LineComment, nv.FootComment = "", "", ""
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(step)
	if err := enc.Encode(&nv); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(buf.String(), "\n"), "\n"), nil
}

// sameDocs says two versions of a file decode to the same documents.
func sameDocs(a, b *yamlFile) bool {
	if len(a.docs) != len(b.docs) {
		return false
	}
	for i := range a.docs {
		var x, y any
		if a.docs[i].Decode(&x) != nil || b.docs[i].Decode(&y) != nil || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// byteOffset is the byte offset of the character at column col (0-based,
// in characters, as the parser counts) of line; -1 past its end.
func byteOffset(line string, col int) int {
	off := 0
	for range col {
		if off >= len(line) {
			return -1
		}
		_, n := utf8.DecodeRuneInString(line[off:])
		off += n
	}
	return off
}

// lineEnding is the line break that ends l ("" for a last line without).
func lineEnding(l string) string {
	switch {
	case strings.HasSuffix(l, "\r\n"):
		return "\r\n"
	case strings.HasSuffix(l, "\n"):
		return "\n"
	}
	return ""
}

// flowEnd finds the end of the flow collection that starts at byte off of
// lines[line]: the line and the byte offset just past its closing
// bracket, and the comments inside it. Quoted scalars (which may span
// lines) and comments are skipped; a quote starts a scalar only where a
// scalar can start.
func flowEnd(lines []string, line, off int) (int, int, []string, error) {
	var comments []string
	depth := 0
	var quote byte
	prev := byte('{') // the last significant character outside scalars
	for l := line; l < len(lines); l, off = l+1, 0 {
		s := lines[l]
		for i := off; i < len(s); i++ {
			c := s[i]
			switch {
			case quote == '"' && c == '\\':
				i++
			case quote != 0 && c == quote:
				if quote == '\'' && i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				quote, prev = 0, c
			case quote != 0:
			case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
				comments = append(comments, strings.TrimRight(s[i:], "\r\n"))
				i = len(s)
			case (c == '"' || c == '\'') && strings.IndexByte("{[,:?", prev) >= 0:
				quote = c
			case c == '{' || c == '[':
				depth++
				prev = c
			case c == '}' || c == ']':
				depth--
				prev = c
				if depth == 0 {
					return l, i + 1, comments, nil
				}
			case c != ' ' && c != '\t' && c != '\r' && c != '\n':
				prev = c
			}
		}
	}
	return 0, 0, nil, errors.New("has no end")
}

// openApp is src, an App file, with the mappings and lists along paths
// under the App named name rewritten as blocks where they are written in
// flow style (blockStyle).
func openApp(src []byte, name string, paths ...[]string) (*yamlFile, error) {
	f, err := newYAMLFile(src)
	if err != nil {
		return nil, err
	}
	return f.blockStyle(func(f *yamlFile) (*yaml.Node, error) {
		for _, d := range f.docs {
			if isApp(d, name) {
				return d.Content[0], nil
			}
		}
		return nil, fmt.Errorf("App %s not found in this file", name)
	}, paths...)
}

// openDeclaration is src with the mappings and lists along paths in the
// declaration of o rewritten as blocks where they are written in flow
// style (blockStyle).
func openDeclaration(src []byte, o *app.Origin, paths ...[]string) (*yamlFile, error) {
	f, err := newYAMLFile(src)
	if err != nil {
		return nil, err
	}
	return f.blockStyle(func(f *yamlFile) (*yaml.Node, error) { return f.declaration(o) }, paths...)
}

// healPaths are the paths a freeze of an app its tool heals edits: the
// annotations and the mappings on the way to the healing field h.
func healPaths(h *app.HealField) [][]string {
	return [][]string{{"metadata", "annotations"}, h.Path}
}
