package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	yaml3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/render"
)

// Parse decodes every App document in data, the contents of file (a path
// relative to the repository root, recorded in App.File and in errors).
// Decoding is strict: unknown fields, duplicate keys, a wrong apiVersion or
// kind and a wrong value type are errors of that document, with its line,
// and the other documents still decode. Empty documents are skipped. Parse
// checks the shape of each document only; Validate checks its meaning.
func Parse(file string, data []byte) ([]App, []error) {
	var apps []App
	var errs []error
	// The guard reads the file first, expanding nothing: no other parser
	// sees a recursive alias, a "billion laughs" or a runaway nesting.
	// Syntax errors are left to the documents below, which name lines.
	if err := render.CheckYAML(file, data, render.DefaultOptions()); err != nil {
		var se *render.SyntaxError
		if !errors.As(err, &se) {
			return nil, []error{&Error{File: file, Problem: strings.TrimPrefix(err.Error(), file+": "), Fix: "write the App without deep nesting, repeated aliases or hundreds of thousands of nodes"}}
		}
	}
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, []error{&Error{File: file, Line: err.line, Problem: err.msg, Fix: "put only a comment after ---"}}
	}
	for i, d := range docs {
		a, docErrs := parseDoc(file, i+1, d.line, d.raw)
		errs = append(errs, docErrs...)
		if a != nil && len(docErrs) == 0 {
			apps = append(apps, *a)
		}
	}
	return apps, errs
}

type document struct {
	raw  []byte
	line int // the 1-based line of the file where raw starts
}

type splitError struct {
	line int
	msg  string
}

// splitDocuments cuts data at "---" lines, keeping where each document
// starts so that errors can name the file's line numbers.
func splitDocuments(data []byte) ([]document, *splitError) {
	var docs []document
	start, startLine := 0, 1
	line := 1
	for off := 0; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		text := data[off:next]
		if bytes.HasPrefix(text, []byte("---")) {
			rest := strings.TrimSpace(string(text[3:]))
			if rest != "" && !strings.HasPrefix(rest, "#") {
				return nil, &splitError{line: line, msg: fmt.Sprintf("invalid document separator %q", strings.TrimSpace(string(text)))}
			}
			docs = append(docs, document{raw: data[start:off], line: startLine})
			start, startLine = next, line+1
		}
		off = next
	}
	docs = append(docs, document{raw: data[start:], line: startLine})
	return docs, nil
}

// yamlLine matches the line numbers in yaml.v3's messages.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// shiftLines rewrites "line N" in a yaml.v3 message, counted from the start
// of a document, into the file's line numbers.
func shiftLines(msg string, first int) string {
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(n+first-1)
	})
}

// parseDoc decodes one document that starts at line first of the file; it
// returns nil, nil for an empty document.
func parseDoc(file string, doc, first int, raw []byte) (*App, []error) {
	var root yaml3.Node
	if err := yaml3.Unmarshal(raw, &root); err != nil {
		msg := shiftLines(strings.TrimPrefix(err.Error(), "yaml: "), first)
		return nil, []error{&Error{File: file, Doc: doc, Line: first, Problem: "invalid YAML: " + msg, Fix: "fix the YAML syntax"}}
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, nil
	}
	body := root.Content[0]
	at := func(n *yaml3.Node) int { return first + n.Line - 1 }
	if body.Kind == yaml3.ScalarNode && body.Tag == "!!null" {
		return nil, nil
	}
	if body.Kind != yaml3.MappingNode {
		return nil, []error{&Error{File: file, Doc: doc, Line: at(body), Problem: "document is not a mapping", Fix: "write an App document with apiVersion, kind, metadata and spec"}}
	}
	name := ""
	if md := lookup(body, "metadata"); md != nil {
		if n := lookup(md, "name"); n != nil && n.Kind == yaml3.ScalarNode {
			name = n.Value
		}
	}
	mk := func(line int, field, problem, fix string) error {
		return &Error{File: file, Doc: doc, Line: line, App: name, Field: field, Problem: problem, Fix: fix}
	}
	var errs []error
	for _, want := range []struct{ key, value, fix string }{
		{"apiVersion", APIVersion, "set apiVersion: " + APIVersion},
		{"kind", Kind, "set kind: " + Kind + " (only App documents belong in " + Dir + "/)"},
	} {
		n := lookup(body, want.key)
		switch {
		case n == nil:
			errs = append(errs, mk(at(body), want.key, "is missing", want.fix))
		case n.Value != want.value:
			errs = append(errs, mk(at(n), want.key, fmt.Sprintf("is %q, kdrift reads %q", n.Value, want.value), want.fix))
		}
	}
	for _, d := range duplicateKeys(body, "") {
		errs = append(errs, mk(at(d.node), d.path, fmt.Sprintf("is given twice (first at line %d)", at(d.first)), "keep one"))
	}
	for _, u := range unknownFields(body, reflect.TypeFor[App](), "") {
		fix := "remove it"
		if u.suggest != "" {
			fix = fmt.Sprintf("did you mean %q?", u.suggest)
		}
		errs = append(errs, mk(at(u.node), u.path, "unknown field", fix))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, []error{mk(first, "", "invalid YAML: "+err.Error(), "fix the YAML syntax")}
	}
	var a App
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, []error{decodeError(func(field, problem, fix string) error {
			line := first
			if n := lookupPath(body, field); n != nil {
				line = at(n)
			}
			return mk(line, field, problem, fix)
		}, err)}
	}
	a.File = file
	return &a, nil
}

// lookup returns the value of key in mapping n, or nil.
func lookup(n *yaml3.Node, key string) *yaml3.Node {
	_, v := lookupKey(n, key)
	return v
}

// lookupKey returns the key node and the value node of key in mapping n.
func lookupKey(n *yaml3.Node, key string) (k, v *yaml3.Node) {
	if n == nil || n.Kind != yaml3.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// lookupPath follows a dotted field path such as spec.syncPolicy.selfHeal.
func lookupPath(n *yaml3.Node, field string) *yaml3.Node {
	if field == "" {
		return nil
	}
	for _, k := range strings.Split(field, ".") {
		if n = lookup(n, k); n == nil {
			return nil
		}
	}
	return n
}

// decodeError turns a JSON type error into an Error naming the field.
func decodeError(mk func(field, problem, fix string) error, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.String()
		if te.Type == reflect.TypeFor[time.Time]() {
			want = "an RFC 3339 time such as 2026-12-02T15:00:00Z"
		}
		return mk(te.Field, fmt.Sprintf("is a %s", te.Value), "write "+want)
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return mk("", fmt.Sprintf("invalid time %q", pe.Value), "write an RFC 3339 time such as 2026-12-02T15:00:00Z")
	}
	return mk("", err.Error(), "fix the document")
}

type duplicateKey struct {
	path        string
	node, first *yaml3.Node
}

// duplicateKeys lists every mapping key under n given more than once.
func duplicateKeys(n *yaml3.Node, prefix string) []duplicateKey {
	var out []duplicateKey
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch n.Kind {
	case yaml3.MappingNode:
		seen := map[string]*yaml3.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if first, ok := seen[k.Value]; ok {
				out = append(out, duplicateKey{path: join(k.Value), node: k, first: first})
				continue
			}
			seen[k.Value] = k
			out = append(out, duplicateKeys(n.Content[i+1], join(k.Value))...)
		}
	case yaml3.SequenceNode:
		for i, e := range n.Content {
			out = append(out, duplicateKeys(e, fmt.Sprintf("%s[%d]", prefix, i))...)
		}
	}
	return out
}

type unknownField struct {
	path    string
	suggest string
	node    *yaml3.Node // the key
}

// unknownFields lists every key under n that t has no json field for, with
// its dotted path, its key node and, when a field differs only in case, a
// suggestion.
func unknownFields(n *yaml3.Node, t reflect.Type, prefix string) []unknownField {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	var out []unknownField
	switch t.Kind() {
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() || n.Kind != yaml3.MappingNode {
			return nil // a type error; decoding reports it
		}
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			p := k.Value
			if prefix != "" {
				p = prefix + "." + k.Value
			}
			ft, ok := fields[k.Value]
			if !ok {
				u := unknownField{path: p, node: k}
				for name := range fields {
					if strings.EqualFold(name, k.Value) {
						u.suggest = name
					}
				}
				out = append(out, u)
				continue
			}
			out = append(out, unknownFields(n.Content[i+1], ft, p)...)
		}
	case reflect.Slice:
		if n.Kind != yaml3.SequenceNode {
			return nil
		}
		for i, e := range n.Content {
			out = append(out, unknownFields(e, t.Elem(), fmt.Sprintf("%s[%d]", prefix, i))...)
		}
	}
	return out
}

// jsonFields maps the json names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// fieldRef matches one step of a field path: a key with optional indexes.
var fieldRef = regexp.MustCompile(`^([^\[]+)((?:\[\d+\])*)$`)

// digits matches the indexes of a field path step.
var digits = regexp.MustCompile(`\d+`)

// findLine returns the file line of field (such as
// spec.ignoreDifferences[0].jsonPointers[1]) in the App named name in data,
// or of the App's document when the field is absent; 0 when not found.
func findLine(data []byte, name, field string) int {
	docs, serr := splitDocuments(data)
	if serr != nil {
		return 0
	}
	for _, d := range docs {
		var root yaml3.Node
		if yaml3.Unmarshal(d.raw, &root) != nil || len(root.Content) == 0 {
			continue
		}
		body := root.Content[0]
		if n := lookupPath(body, "metadata.name"); n == nil || n.Value != name {
			continue
		}
		at := func(n *yaml3.Node) int { return d.line + n.Line - 1 }
		best := at(body)
		n := body
		for _, step := range strings.Split(field, ".") {
			m := fieldRef.FindStringSubmatch(step)
			if m == nil {
				break
			}
			k, v := lookupKey(n, m[1])
			if v == nil {
				break
			}
			n, best = v, at(k)
			for _, idx := range digits.FindAllString(m[2], -1) {
				i, _ := strconv.Atoi(idx) // the pattern only matches digits
				if n.Kind != yaml3.SequenceNode || i >= len(n.Content) {
					return best
				}
				n = n.Content[i]
				best = at(n)
			}
		}
		return best
	}
	return 0
}
