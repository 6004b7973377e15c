package actions

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
)

// appSet is the Apps of one snapshot: the ones app.Parse accepts, and the
// reason each named App it refused is broken.
type appSet struct {
	apps    []app.App
	invalid map[string]error
}

// loadApps reads every App document in .kdrift/*.yaml (and *.yml) of a
// snapshot with app.Parse, the engine's own parser, sorted by name. A
// broken App does not hide the others: findApps names its problem when an
// action asks for it. Two Apps with one name are an error.
func loadApps(s *snapshot) (appSet, error) {
	var files []string
	for p := range s.tree {
		if path.Dir(p) == app.Dir && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
	}
	sort.Strings(files)
	set := appSet{invalid: map[string]error{}}
	seen := map[string]string{}
	for _, f := range files {
		data, _, err := s.read(f)
		if err != nil {
			return appSet{}, err
		}
		apps, errs := app.Parse(f, data)
		for _, err := range errs {
			var e *app.Error
			if errors.As(err, &e) && e.App != "" {
				set.invalid[e.App] = errors.Join(set.invalid[e.App], err)
			}
		}
		for _, a := range apps {
			if prev, dup := seen[a.Metadata.Name]; dup {
				return appSet{}, fmt.Errorf("App %s is declared twice, in %s and %s; rename one", a.Metadata.Name, prev, f)
			}
			seen[a.Metadata.Name] = f
			set.apps = append(set.apps, a)
		}
	}
	if err := ownedApps(s, &set); err != nil {
		return appSet{}, err
	}
	if res := s.repo.opts.Resolved; res != nil {
		for _, a := range res.Live {
			if !slices.ContainsFunc(set.apps, func(o app.App) bool { return o.Metadata.Name == a.Metadata.Name }) {
				set.apps = append(set.apps, a)
			}
		}
	}
	sort.Slice(set.apps, func(i, j int) bool { return set.apps[i].Metadata.Name < set.apps[j].Metadata.Name })
	return set, nil
}

// parseApps decodes the App documents of one file with app.Parse; any
// document it refuses is an error.
func parseApps(file string, data []byte) ([]app.App, error) {
	apps, errs := app.Parse(file, data)
	if len(errs) > 0 {
		return apps, errors.Join(errs...)
	}
	return apps, nil
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

// isApp reports whether a parsed document is the App named name.
func isApp(doc *yaml.Node, name string) bool {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return false
	}
	root := doc.Content[0]
	if _, k := mapGet(root, "kind"); k == nil || k.Value != app.Kind {
		return false
	}
	_, md := mapGet(root, "metadata")
	_, n := mapGet(md, "name")
	return n != nil && n.Value == name
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

// loadApp reads a snapshot's Apps and returns the named one (loadApps,
// then findApps: a name that is not there is an error listing what is).
func loadApp(s *snapshot, name string) (app.App, error) {
	all, err := loadApps(s)
	if err != nil {
		return app.App{}, err
	}
	found, err := findApps(all, []string{name})
	if err != nil {
		return app.App{}, err
	}
	return found[0], nil
}

// findApps picks the named Apps from a snapshot, in the order given; a name
// that is not there is an error listing what is.
func findApps(set appSet, names []string) ([]app.App, error) {
	all := set.apps
	byName := map[string]app.App{}
	for _, a := range all {
		byName[a.Metadata.Name] = a
	}
	for _, a := range all {
		if q := a.Origin.QualifiedName(); q != "" {
			if _, taken := byName[q]; !taken {
				byName[q] = a
			}
		}
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
		if err, broken := set.invalid[n]; !ok && broken {
			return nil, &UnresolvedError{Apps: []string{n}, Broken: err}
		}
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
		return nil, &UnresolvedError{Apps: missing, Known: known}
	}
	return out, nil
}

// UnresolvedError says an action names apps it could not find among the
// declarations it read (Known), or one whose declaration is broken.
type UnresolvedError struct {
	Apps, Known []string
	// Broken is why the one App named cannot be read; nil when missing.
	Broken error
}

// Error names the apps and what is known instead.
func (e *UnresolvedError) Error() string {
	if e.Broken != nil {
		return fmt.Sprintf("App %s cannot be read: %v; fix its App file first", strings.Join(e.Apps, ", "), e.Broken)
	}
	return fmt.Sprintf("App %s not found in %s/*.yaml or among the Argo CD and Flux declarations (known: %s)", strings.Join(e.Apps, ", "), app.Dir, strings.Join(e.Known, ", "))
}

// Unwrap is the broken App's error.
func (e *UnresolvedError) Unwrap() error { return e.Broken }
