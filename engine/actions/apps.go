package actions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
)

// loadApps reads every App document in .kdrift/*.yaml (and *.yml) of a
// snapshot, sorted by name. Two Apps with one name are an error.
func loadApps(s *snapshot) ([]app.App, error) {
	var files []string
	for p := range s.tree {
		if path.Dir(p) == app.Dir && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
	}
	sort.Strings(files)
	var out []app.App
	seen := map[string]string{}
	for _, f := range files {
		data, _, err := s.read(f)
		if err != nil {
			return nil, err
		}
		apps, err := parseApps(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, a := range apps {
			if prev, dup := seen[a.Metadata.Name]; dup {
				return nil, fmt.Errorf("App %s is declared twice, in %s and %s; rename one", a.Metadata.Name, prev, f)
			}
			seen[a.Metadata.Name] = f
			a.File = f
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Name < out[j].Metadata.Name })
	return out, nil
}

// parseApps decodes the App documents of one file; other kinds are skipped.
func parseApps(data []byte) ([]app.App, error) {
	docs, err := parseDocs(data)
	if err != nil {
		return nil, err
	}
	var out []app.App
	for _, d := range docs {
		a, ok, err := decodeApp(d)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// parseDocs parses every document of a YAML stream into nodes. The data
// passes the same guard as every other parser of repository content
// first: a file that could exhaust the process is refused.
func parseDocs(data []byte) ([]*yaml.Node, error) {
	if err := render.CheckYAML("App file", data, render.DefaultOptions()); err != nil {
		var se *render.SyntaxError
		if !errors.As(err, &se) {
			return nil, err
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("YAML parse failed: %w", err)
		}
		docs = append(docs, &n)
	}
}

// decodeApp turns a document into an App; ok is false for other kinds.
func decodeApp(doc *yaml.Node) (app.App, bool, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return app.App{}, false, nil
	}
	root := doc.Content[0]
	if _, k := mapGet(root, "kind"); k == nil || k.Value != app.Kind {
		return app.App{}, false, nil
	}
	var generic any
	if err := root.Decode(&generic); err != nil {
		return app.App{}, false, fmt.Errorf("App at line %d: %w", root.Line, err)
	}
	js, err := json.Marshal(generic)
	if err != nil {
		return app.App{}, false, fmt.Errorf("App at line %d: %w", root.Line, err)
	}
	var a app.App
	if err := json.Unmarshal(js, &a); err != nil {
		return app.App{}, false, fmt.Errorf("App at line %d: %w", root.Line, err)
	}
	if a.Metadata.Name == "" {
		return app.App{}, false, fmt.Errorf("App at line %d has no metadata.name", root.Line)
	}
	return a, true, nil
}

// mapGet returns a mapping node's key and value nodes for key.
func mapGet(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// findApps picks the named Apps from a snapshot, in the order given; a name
// that is not there is an error listing what is.
func findApps(all []app.App, names []string) ([]app.App, error) {
	byName := map[string]app.App{}
	for _, a := range all {
		byName[a.Metadata.Name] = a
	}
	var out []app.App
	var missing []string
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		a, ok := byName[n]
		if !ok {
			missing = append(missing, n)
			continue
		}
		out = append(out, a)
	}
	if len(missing) > 0 {
		var known []string
		for _, a := range all {
			known = append(known, a.Metadata.Name)
		}
		return nil, fmt.Errorf("App %s not found in %s/*.yaml (known: %s)", strings.Join(missing, ", "), app.Dir, strings.Join(known, ", "))
	}
	return out, nil
}
