package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	yaml3 "gopkg.in/yaml.v3"

	"kdrift.dev/kdrift/engine/redact"
)

// SyntaxError is a YAML document the guard could not parse. The guard
// never expands aliases while parsing, so this is a plain syntax error.
type SyntaxError struct {
	// File is the file, relative to the repository root.
	File string
	// Doc is the 1-based document of the file.
	Doc int
	// Err is the parser's message.
	Err error
}

// Error renders `FILE: document N: invalid YAML: ERR`.
func (e *SyntaxError) Error() string {
	// yaml.v3 lists several problems on indented lines: one line here.
	msg := strings.Join(strings.Fields(strings.TrimPrefix(e.Err.Error(), "yaml: ")), " ")
	return fmt.Sprintf("%s: document %d: invalid YAML: %s", e.File, e.Doc, msg)
}

// Unwrap returns the parser's error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// CheckYAML is the guard every YAML or JSON file of a repository passes
// before any other parser reads it: it parses data into yaml.v3 nodes,
// which keep aliases as references (nothing is expanded), and refuses a
// document whose aliases refer to themselves (a parser that expands them
// recurses until the stack overflows, which Go cannot recover from), whose
// alias expansion would add more than o.MaxAliasNodes nodes (a "billion
// laughs"), or which nests deeper than o.MaxDepth once expanded. Before
// the parser builds a node, the file's nodes are counted from its text:
// more than o.MaxFileNodes is refused (see yamlNodes). file names the file
// in errors. A refusal is a *LimitError; a document that does not parse
// is a *SyntaxError.
func CheckYAML(file string, data []byte, o Options) error {
	_, err := checkYAML(file, data, o, nil)
	return err
}

// checkYAML is CheckYAML that also teaches secrets the data and stringData
// values of every Secret document, when secrets is not nil, and returns
// the nodes and scalar bytes the file decodes to, aliases expanded.
func checkYAML(file string, data []byte, o Options, secrets *redact.Secrets) (cost nodeCost, err error) {
	defer func() {
		// The parser is a library like any other; a panic in it is this
		// file's error, not the process's end.
		if p := recover(); p != nil {
			err = &SyntaxError{File: file, Doc: 0, Err: fmt.Errorf("the YAML parser failed: %v", p)}
		}
	}()
	o = o.withDefaults()
	if int64(len(data)) > o.MaxFileBytes {
		return nodeCost{}, limitf(file, "file size", "%d bytes, more than %d", len(data), o.MaxFileBytes)
	}
	if n, ok := yamlNodes(data, o.MaxFileNodes, o.MaxDepth); !ok {
		if n <= o.MaxFileNodes {
			return nodeCost{}, limitf(file, "nesting depth", "flow collections nest deeper than %d levels", o.MaxDepth)
		}
		return nodeCost{}, limitf(file, "nodes", "more than %d YAML nodes in one file", o.MaxFileNodes)
	}
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		var n yaml3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return cost, nil
		}
		if err != nil {
			return nodeCost{}, &SyntaxError{File: file, Doc: doc, Err: err}
		}
		s := &aliasScan{o: o, file: file, doc: doc, memo: map[*yaml3.Node]nodeCost{}, open: map[*yaml3.Node]bool{}}
		c, err := s.walk(&n, 1)
		if err != nil {
			return nodeCost{}, err
		}
		cost.nodes += c.nodes
		cost.bytes += c.bytes
		if secrets != nil {
			learnSecret(&n, secrets)
		}
	}
}

// isSyntax reports whether err is a *SyntaxError.
func isSyntax(err error) bool {
	var se *SyntaxError
	return errors.As(err, &se)
}

// yamlName reports whether a file is read as YAML (or JSON): by its
// extension, or as a kustomization.
func yamlName(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return path.Base(name) == "Kustomization"
}

// learnSecret teaches secrets the values under data and stringData of a
// document that is a Secret.
func learnSecret(doc *yaml3.Node, secrets *redact.Secrets) {
	if doc.Kind == yaml3.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml3.MappingNode {
		return
	}
	if k := mapValue(doc, "kind"); k == nil || k.Value != "Secret" {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		m := mapValue(doc, field)
		if m == nil || m.Kind != yaml3.MappingNode {
			continue
		}
		for i := 1; i < len(m.Content); i += 2 {
			if v := m.Content[i]; v.Kind == yaml3.ScalarNode {
				secrets.Add(v.Value)
			}
		}
	}
}

// mapValue returns the value of key in mapping m, or nil.
func mapValue(m *yaml3.Node, key string) *yaml3.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// nodeCost is the size and depth of a node with its aliases expanded:
// its nodes, its nesting and the bytes of its scalars.
type nodeCost struct{ nodes, depth, bytes int }

// aliasScan measures one document without expanding it: each anchored
// node is measured once and an alias adds its measure.
type aliasScan struct {
	o         Options
	file      string
	doc       int
	memo      map[*yaml3.Node]nodeCost // anchored nodes already measured
	open      map[*yaml3.Node]bool     // anchored nodes being measured
	expansion int                      // nodes added by aliases so far
}

func (s *aliasScan) walk(n *yaml3.Node, depth int) (nodeCost, error) {
	if depth > s.o.MaxDepth {
		return nodeCost{}, limitf(s.file, "nesting depth", "document %d nests deeper than %d levels (line %d)", s.doc, s.o.MaxDepth, n.Line)
	}
	if n.Kind == yaml3.AliasNode {
		t := n.Alias
		if t == nil {
			return nodeCost{nodes: 1, depth: 1}, nil
		}
		if s.open[t] {
			return nodeCost{}, limitf(s.file, "recursive alias", "document %d: alias *%s (line %d) is inside the anchor &%s it refers to", s.doc, n.Value, n.Line, t.Anchor)
		}
		c, ok := s.memo[t]
		if !ok {
			var err error
			if c, err = s.walk(t, depth); err != nil {
				return nodeCost{}, err
			}
		}
		s.expansion += c.nodes
		if s.expansion > s.o.MaxAliasNodes {
			return nodeCost{}, limitf(s.file, "alias expansion", "document %d: aliases expand to more than %d nodes (at *%s, line %d)", s.doc, s.o.MaxAliasNodes, n.Value, n.Line)
		}
		if depth+c.depth-1 > s.o.MaxDepth {
			return nodeCost{}, limitf(s.file, "nesting depth", "document %d nests deeper than %d levels once *%s (line %d) is expanded", s.doc, s.o.MaxDepth, n.Value, n.Line)
		}
		return c, nil
	}
	if n.Anchor != "" {
		s.open[n] = true
		defer delete(s.open, n)
	}
	c := nodeCost{nodes: 1, depth: 1, bytes: len(n.Value)}
	for _, ch := range n.Content {
		cc, err := s.walk(ch, depth+1)
		if err != nil {
			return nodeCost{}, err
		}
		c.nodes += cc.nodes
		c.bytes += cc.bytes
		c.depth = max(c.depth, cc.depth+1)
	}
	if n.Anchor != "" {
		s.memo[n] = c
	}
	return c, nil
}
