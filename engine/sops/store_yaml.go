package sops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML store follows sops' stores/yaml: the same YAML library, the
// same mapping of comments to items and back, four-space indentation.

// MaxAliasNodes bounds how many nodes YAML aliases of one SOPS file may
// add when sops' reading expands them (as render's budget for plain
// YAML): an encrypted file is hostile input like any other.
const MaxAliasNodes = 10_000

// maxDepth bounds how deeply a SOPS file nests.
const maxDepth = 200

// yamlLoader turns YAML nodes into a tree, expanding aliases within the
// budget.
type yamlLoader struct {
	aliasNodes int
	// open are the anchored nodes being expanded: an alias inside its own
	// anchor would expand forever.
	open map[*yaml.Node]bool
}

// loadYAML reads every document of data as sops' YAML store does.
func loadYAML(data []byte) ([]branch, error) {
	if len(data) > 0 {
		// sops decodes once into a map first, which refuses duplicate keys.
		if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(make(map[string]any)); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	l := &yamlLoader{open: map[*yaml.Node]bool{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []branch
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := l.branch(&doc, nil, false, 0)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", len(out)+1, err)
		}
		out = append(out, b)
	}
}

func commentLines(c string, inline bool, add func(comment)) {
	if c == "" {
		return
	}
	for line := range strings.SplitSeq(c, "\n") {
		if line != "" {
			add(comment{Value: line[1:], Inline: inline})
		}
	}
}

func (l *yamlLoader) alias(n *yaml.Node, depth int) (*yaml.Node, error) {
	if l.open[n.Alias] {
		return nil, fmt.Errorf("line %d: alias *%s is inside the anchor it refers to", n.Line, n.Value)
	}
	l.aliasNodes += countNodes(n.Alias, MaxAliasNodes+1)
	if l.aliasNodes > MaxAliasNodes {
		return nil, fmt.Errorf("line %d: YAML aliases expand to more than %d nodes", n.Line, MaxAliasNodes)
	}
	return n.Alias, nil
}

// countNodes counts the nodes under n, aliases expanded, stopping at max.
func countNodes(n *yaml.Node, max int) int {
	count := 0
	var visit func(n *yaml.Node, depth int)
	visit = func(n *yaml.Node, depth int) {
		if count >= max || depth > maxDepth {
			count = max
			return
		}
		count++
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			visit(n.Alias, depth+1)
			return
		}
		for _, c := range n.Content {
			visit(c, depth+1)
		}
	}
	visit(n, 0)
	return count
}

func (l *yamlLoader) value(n *yaml.Node, handled bool, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested more than %d levels deep", n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.SequenceNode:
		var out []any
		add := func(c comment) { out = append(out, c) }
		if !handled {
			commentLines(n.HeadComment, false, add)
			commentLines(n.LineComment, false, add)
		}
		for _, e := range n.Content {
			commentLines(e.HeadComment, false, add)
			commentLines(e.LineComment, true, add)
			v, err := l.value(e, true, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			commentLines(e.FootComment, false, add)
		}
		if !handled {
			commentLines(n.FootComment, false, add)
		}
		return out, nil
	case yaml.MappingNode:
		return l.branch(n, nil, handled, depth)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	case yaml.AliasNode:
		a, err := l.alias(n, depth)
		if err != nil {
			return nil, err
		}
		l.open[a] = true
		defer delete(l.open, a)
		return l.value(a, false, depth+1)
	}
	return nil, nil
}

func (l *yamlLoader) branch(n *yaml.Node, b branch, handled bool, depth int) (branch, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested more than %d levels deep", n.Line, maxDepth)
	}
	if b == nil {
		b = branch{}
	}
	add := func(inline bool) func(comment) {
		return func(c comment) { c.Inline = inline; b = append(b, item{Key: c}) }
	}
	if !handled {
		commentLines(n.HeadComment, false, add(false))
		commentLines(n.LineComment, false, add(false))
	}
	var err error
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if b, err = l.branch(c, b, false, depth+1); err != nil {
				return nil, err
			}
		}
	case yaml.SequenceNode:
		return nil, errors.New("YAML documents that are sequences are not supported")
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			commentLines(k.HeadComment, false, add(false))
			commentLines(k.LineComment, false, add(false))
			scalar := v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode
			if scalar {
				commentLines(v.HeadComment, false, add(false))
				commentLines(v.LineComment, true, add(true))
			}
			var key any
			if err := k.Decode(&key); err != nil {
				return nil, fmt.Errorf("line %d: %w", k.Line, err)
			}
			val, err := l.value(v, scalar, depth+1)
			if err != nil {
				return nil, err
			}
			b = append(b, item{Key: key, Value: val})
			if scalar {
				commentLines(v.FootComment, false, add(false))
			}
			commentLines(k.FootComment, false, add(false))
		}
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return b, nil
		}
		return nil, errors.New("YAML documents that are values are not supported")
	case yaml.AliasNode:
		a, err := l.alias(n, depth)
		if err != nil {
			return nil, err
		}
		l.open[a] = true
		b, err = l.branch(a, b, false, depth+1)
		delete(l.open, a)
		if err != nil {
			return nil, err
		}
	}
	if !handled {
		commentLines(n.FootComment, false, add(false))
	}
	return b, nil
}

// emitYAML writes branches as sops' YAML store does (four-space indent).
func emitYAML(branches []branch) ([]byte, error) {
	var buf bytes.Buffer
	e := yaml.NewEncoder(&buf)
	e.SetIndent(4)
	for _, b := range branches {
		mapping := &yaml.Node{Kind: yaml.MappingNode}
		appendBranch(b, mapping)
		if err := e.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping}}); err != nil {
			return nil, err
		}
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func addHead(n *yaml.Node, cs []string) []string {
	if len(cs) > 0 {
		c := "#" + strings.Join(cs, "\n#")
		if n.HeadComment != "" {
			n.HeadComment = c + "\n" + n.HeadComment
		} else {
			n.HeadComment = c
		}
	}
	return nil
}

func addFoot(n *yaml.Node, cs []string) {
	if len(cs) > 0 {
		c := "#" + strings.Join(cs, "\n#")
		if n.FootComment != "" {
			n.FootComment += "\n" + c
		} else {
			n.FootComment = c
		}
	}
}

func addLine(n *yaml.Node, cs []string) []string {
	if len(cs) > 0 {
		c := "#" + strings.Join(cs, "\n#")
		if n.LineComment != "" {
			n.LineComment += "\n" + c
		} else {
			n.LineComment = c
		}
	}
	return nil
}

func valueNode(v any) *yaml.Node {
	switch x := v.(type) {
	case branch:
		n := &yaml.Node{Kind: yaml.MappingNode}
		appendBranch(x, n)
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		appendList(x, n)
		return n
	}
	n := &yaml.Node{}
	// Encoding a scalar into a node fails only for types a tree never
	// holds.
	_ = n.Encode(v)
	return n
}

func appendList(l []any, n *yaml.Node) {
	var head, inline []string
	beginning := true
	for _, e := range l {
		if c, ok := e.(comment); ok {
			if c.Inline {
				inline = append(inline, c.Value)
			} else {
				head = append(head, c.Value)
			}
			continue
		}
		if beginning {
			head = addHead(n, head)
			beginning = false
		}
		en := valueNode(e)
		head = addHead(en, head)
		inline = addLine(en, inline)
		n.Content = append(n.Content, en)
	}
	head = append(head, inline...)
	if len(head) > 0 {
		if beginning {
			addHead(n, head)
		} else {
			addFoot(n.Content[len(n.Content)-1], head)
		}
	}
}

func appendBranch(b branch, n *yaml.Node) {
	var head, inline []string
	beginning := true
	for _, it := range b {
		if c, ok := it.Key.(comment); ok {
			if c.Inline {
				inline = append(inline, c.Value)
			} else {
				head = append(head, c.Value)
			}
			continue
		}
		if beginning {
			head = addHead(n, head)
			beginning = false
		}
		kn := &yaml.Node{}
		_ = kn.Encode(it.Key)
		head = addHead(kn, head)
		vn := valueNode(it.Value)
		inline = addLine(vn, inline)
		n.Content = append(n.Content, kn, vn)
	}
	head = append(head, inline...)
	if len(head) > 0 {
		if beginning {
			addHead(n, head)
		} else {
			addFoot(n.Content[len(n.Content)-2], head)
		}
	}
}
