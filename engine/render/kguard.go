package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"

	"kdrift.dev/kdrift/engine/redact"
)

// RefusedError is a kustomization entry kdrift will not render: it would
// make kustomize fetch from the network, run a program, or read outside
// the repository.
type RefusedError struct {
	// File is the kustomization file, relative to the repository root.
	File string
	// Field is the kustomization field (resources, helmCharts, ...).
	Field string
	// Entry is the entry as written.
	Entry string
	// Problem says what the entry would make kustomize do.
	Problem string
	// Fix says what to do instead.
	Fix string
}

// Error renders `FILE: FIELD entry "ENTRY": PROBLEM; FIX`.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: %s entry %q: %s; %s", e.File, e.Field, redact.Text(e.Entry), e.Problem, e.Fix)
}

const (
	fixVendor = "vendor the base into the repository and list its folder"
	fixCopy   = "copy the file into the repository and name its path"
	fixPlugin = "commit the plugin's output to the repository and list it in resources, or use a builtin transformer"
	fixHelm   = "list the chart under helmCharts, kept in the repository under the chart home (helmGlobals.chartHome, default charts/)"
)

// kguard walks the kustomization graph of one render (the App's folder,
// the folders its resources, components and bases name, and so on) before
// kustomize sees it, and refuses every entry that would make kustomize
// clone, fetch, run a program or leave the repository. It also learns the
// Secret values the render reads, to scrub them from messages.
type kguard struct {
	fsys    *treeFS
	seen    map[string]bool
	secrets *redact.Secrets
}

// checkKustomizations checks the kustomization in dir and every one it
// reaches.
func checkKustomizations(fsys *treeFS, dir string, secrets *redact.Secrets) error {
	g := &kguard{fsys: fsys, seen: map[string]bool{}, secrets: secrets}
	return g.folder(dir, false)
}

// folder checks the kustomization of dir; plugins says that its resources
// are plugin configurations (a folder listed under transformers).
func (g *kguard) folder(dir string, plugins bool) error {
	if g.seen[dir] {
		return nil
	}
	g.seen[dir] = true
	kname, err := g.fsys.kustomizationFile(dir)
	if err != nil || kname == "" {
		return nil // kustomize says what is missing
	}
	file := path.Join(dir, kname)
	data, err := g.fsys.ReadFile("/" + file)
	if err != nil {
		if le := g.fsys.limit(); le != nil {
			return le
		}
		return nil
	}
	// kustomize reads the kustomization through JSON, whose field names
	// match in any case (Resources:) and where a repeated key's last value
	// wins; a file the guard cannot read the same way is refused rather
	// than passed on unchecked.
	var k map[string]any
	if err := yaml3.Unmarshal(data, &k); err != nil {
		return &SyntaxError{File: file, Doc: 1, Err: err}
	}
	if v := lookup(k, "helmChartInflationGenerator"); len(v) > 0 && v[0] != nil {
		return &RefusedError{File: file, Field: "helmChartInflationGenerator", Entry: summary(v[0]), Problem: "this old form of Helm inflation runs the helm program; kdrift runs no program while rendering", Fix: fixHelm}
	}
	for _, f := range []string{"helmCharts", "helmGlobals"} {
		if v := lookup(k, f); len(v) > 0 && v[0] != nil {
			if err := g.inflateHelmCharts(file, k); err != nil {
				return err
			}
			break
		}
	}
	for _, f := range []string{"resources", "bases", "components"} {
		for _, entry := range strings_(lookup(k, f)) {
			if err := g.reference(file, f, entry, plugins); err != nil {
				return err
			}
		}
	}
	for _, f := range []string{"generators", "transformers", "validators"} {
		for _, entry := range strings_(lookup(k, f)) {
			if strings.Contains(entry, "\n") || strings.Contains(entry, "apiVersion:") {
				if err := g.pluginDocs(file, f, entry, []byte(entry)); err != nil {
					return err
				}
				continue
			}
			if err := g.reference(file, f, entry, true); err != nil {
				return err
			}
		}
	}
	// Fields that name files kustomize reads, over HTTP when they are URLs.
	for _, f := range []string{"crds", "configurations"} {
		for _, entry := range strings_(lookup(k, f)) {
			if err := g.other(file, f, entry); err != nil {
				return err
			}
		}
	}
	for _, entry := range strings_(lookup(k, "patchesStrategicMerge")) {
		if strings.Contains(entry, "\n") {
			continue // an inline patch
		}
		if err := g.other(file, "patchesStrategicMerge", entry); err != nil {
			return err
		}
	}
	for _, f := range []string{"patches", "patchesJson6902", "replacements", "openapi"} {
		for _, m := range mappingsOf(lookup(k, f)) {
			for _, entry := range strings_(lookup(m, "path")) {
				if err := g.other(file, f, entry); err != nil {
					return err
				}
			}
		}
	}
	g.secretCopiers(file, k)
	g.patchCopiers(file, k)
	for _, f := range []string{"configMapGenerator", "secretGenerator"} {
		for _, gen := range mappingsOf(lookup(k, f)) {
			secret := f == "secretGenerator"
			var files []string
			for _, entry := range strings_(lookup(gen, "files")) {
				if _, p, ok := strings.Cut(entry, "="); ok {
					entry = p
				}
				files = append(files, entry)
			}
			files = append(files, strings_(lookup(gen, "envs"))...)
			files = append(files, strings_(lookup(gen, "env"))...)
			for _, entry := range files {
				p, err := g.local(file, f+" file", entry)
				if err != nil {
					return err
				}
				if secret {
					g.fsys.allowSOPS(p, sopsSecretData)
					g.learnFile(p)
				} else {
					g.fsys.otherUse(p, "a "+f+" file entry of "+file)
				}
			}
			if secret {
				for _, lit := range strings_(lookup(gen, "literals")) {
					if _, v, ok := strings.Cut(lit, "="); ok {
						g.secrets.Add(v)
					}
				}
			}
		}
	}
	return nil
}

// reference checks an entry that kustomize reads as a file or a folder and,
// when neither exists, as a remote base it would clone: it must be a file
// or folder of the repository. A folder's kustomization is checked in
// turn; plugins says that files are plugin configurations.
func (g *kguard) reference(file, field, entry string, plugins bool) error {
	p, err := g.local(file, field, entry)
	if err != nil {
		return err
	}
	st, err := fs.Stat(g.fsys.tree, p)
	if err != nil {
		fix := fixVendor
		if plugins {
			fix = fixCopy
		}
		return &RefusedError{File: file, Field: field, Entry: entry,
			Problem: "is neither a file nor a folder in the repository at this revision, and kdrift fetches nothing remote", Fix: "fix the path, or " + fix}
	}
	switch {
	case st.IsDir():
		return g.folder(p, plugins)
	case plugins:
		g.fsys.otherUse(p, "a "+field+" entry of "+file)
		return g.pluginFile(file, field, entry, p)
	}
	g.fsys.allowSOPS(p, sopsManifest)
	return nil
}

// other checks an entry of a field whose file is not a Secret's data
// (a patch, a replacement, a CRD schema) and records it so.
func (g *kguard) other(file, field, entry string) error {
	p, err := g.local(file, field, entry)
	if err == nil {
		g.fsys.otherUse(p, "a "+field+" entry of "+file)
	}
	return err
}

// local resolves entry, named in field of kustomization file, to a path in
// the repository, refusing a URL and a path that leaves the repository.
func (g *kguard) local(file, field, entry string) (string, error) {
	if remote(entry) {
		fix := fixCopy
		switch field {
		case "resources", "bases", "components":
			fix = fixVendor
		}
		return "", &RefusedError{File: file, Field: field, Entry: entry, Problem: "is a remote location; kdrift never fetches from the network while rendering", Fix: fix}
	}
	var p string
	if path.IsAbs(entry) {
		p = path.Clean(strings.TrimPrefix(entry, "/"))
	} else {
		p = path.Join(path.Dir(file), entry)
	}
	if p == ".." || strings.HasPrefix(p, "../") || !fs.ValidPath(p) {
		return "", &RefusedError{File: file, Field: field, Entry: entry, Problem: "is outside the repository; kdrift reads nothing but the repository at the revision", Fix: fixCopy}
	}
	return p, nil
}

// remote reports whether a kustomization entry names a remote location:
// a URL (https://, ssh://, file://, ...), a go-getter form (git::...), an
// scp-like address (git@host:org/repo), a host/path?ref= form, or anything
// else kustomize's own parser of Git URLs accepts (it tries that parser
// before it looks for a local folder, so a same-named folder in the
// repository does not make an entry local).
func remote(entry string) bool {
	return remoteSpelling(entry) || kustomizeRepo(entry)
}

// kustomizeRepo reports whether kustomize reads entry as a Git repository,
// through its public view of a resource's origin (which parses entries
// with the same function as its loader); a panic in that parser counts as
// a repository.
func kustomizeRepo(entry string) (repo bool) {
	defer func() {
		if recover() != nil {
			repo = true
		}
	}()
	return (&resource.Origin{}).Append(entry).Repo != ""
}

// remoteSpelling recognises the spellings of remote entries kdrift knew
// before it asked kustomize's parser; it still catches forms that parser
// leaves to other loaders (HTTP files).
func remoteSpelling(entry string) bool {
	e := strings.TrimSpace(entry)
	lower := strings.ToLower(e)
	switch {
	case strings.Contains(e, "://"), strings.HasPrefix(lower, "git::"), strings.HasPrefix(lower, "git@"),
		strings.Contains(e, "?ref="), strings.Contains(e, "?version="), strings.Contains(e, "?timeout="), strings.Contains(e, "?submodules="),
		strings.HasPrefix(lower, "github.com/"), strings.HasPrefix(lower, "gitlab.com/"), strings.HasPrefix(lower, "bitbucket.org/"):
		return true
	}
	// scp-like user@host:path
	if at := strings.Index(e, "@"); at > 0 {
		if colon := strings.Index(e[at:], ":"); colon > 0 && !strings.Contains(e[:at], "/") {
			return true
		}
	}
	return false
}

// builtinPlugins are the kinds kustomize runs in-process; the Helm
// inflator runs the helm program and is left out.
var builtinPlugins = func() []string {
	var out []string
	for _, k := range krusty.GetBuiltinPluginNames() {
		if k != "HelmChartInflationGenerator" {
			out = append(out, k)
		}
	}
	return out
}()

// pluginFile checks the plugin configurations in file p.
func (g *kguard) pluginFile(file, field, entry, p string) error {
	data, err := g.fsys.ReadFile("/" + p)
	if err != nil {
		if le := g.fsys.limit(); le != nil {
			return le
		}
		return nil
	}
	return g.pluginDocs(file, field, entry, data)
}

// pluginDocs refuses a plugin configuration that is not a builtin: an
// exec or KRM function plugin runs a program or a container.
func (g *kguard) pluginDocs(file, field, entry string, data []byte) error {
	if err := CheckYAML(file, data, g.fsys.opts); err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return nil // kustomize reports the syntax
		}
		return err
	}
	dec := yaml3.NewDecoder(strings.NewReader(string(data)))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			return nil
		}
		if doc == nil {
			continue
		}
		apiVersion, _ := doc["apiVersion"].(string)
		kind, _ := doc["kind"].(string)
		md, _ := doc["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		fn := ""
		for _, a := range []string{"config.kubernetes.io/function", "config.k8s.io/function"} {
			if _, ok := ann[a]; ok {
				fn = a
			}
		}
		switch {
		case fn != "":
			return &RefusedError{File: file, Field: field, Entry: entry, Problem: fmt.Sprintf("%s %s is a KRM function (annotation %s) that runs a program or a container", apiVersion, kind, fn), Fix: fixPlugin}
		case kind == "HelmChartInflationGenerator":
			return &RefusedError{File: file, Field: field, Entry: entry, Problem: "HelmChartInflationGenerator runs the helm program", Fix: fixHelm}
		case apiVersion != "builtin" || !slices.Contains(builtinPlugins, kind):
			return &RefusedError{File: file, Field: field, Entry: entry, Problem: fmt.Sprintf("%s %s is not a builtin plugin; kdrift runs no exec or KRM function plugin", apiVersion, kind), Fix: fixPlugin}
		}
		// Builtins load files too (a PatchTransformer's path, a generator's
		// files), over HTTP when they are URLs.
		where := field + " " + kind
		var paths []string
		var data []string // a SecretGenerator's files and envs
		for _, key := range []string{"path", "paths", "files", "envs", "env"} {
			for _, p := range strings_(lookup(doc, key)) {
				if _, after, ok := strings.Cut(p, "="); ok && key == "files" {
					p = after
				}
				if kind == "SecretGenerator" && key != "path" && key != "paths" {
					data = append(data, p)
					continue
				}
				paths = append(paths, p)
			}
		}
		for _, r := range mappingsOf(lookup(doc, "replacements")) {
			paths = append(paths, strings_(lookup(r, "path"))...)
			if copiesSecret(r) {
				g.fsys.copier(file + ": " + where)
			}
		}
		for _, p := range paths {
			if err := g.other(file, where, p); err != nil {
				return err
			}
		}
		for _, p := range data {
			lp, err := g.local(file, where, p)
			if err != nil {
				return err
			}
			g.fsys.allowSOPS(lp, sopsSecretData)
		}
	}
}

// learnFile teaches the scrubber the contents of a secretGenerator file:
// the whole text and each KEY=VALUE line's value.
func (g *kguard) learnFile(p string) {
	data, err := g.fsys.ReadFile("/" + p)
	if err != nil {
		return
	}
	g.secrets.Add(string(data))
	for _, line := range strings.Split(string(data), "\n") {
		if _, v, ok := strings.Cut(line, "="); ok {
			g.secrets.Add(v)
		}
	}
}

// lookup returns the values of every key of m that names field in any
// case, as kustomize's JSON decoding matches them.
func lookup(m map[string]any, name string) []any {
	var out []any
	for k, v := range m {
		if strings.EqualFold(k, name) {
			out = append(out, v)
		}
	}
	return out
}

// strings_ returns the strings among values: a value that is a string
// itself, or the string items of a value that is a list.
func strings_(values []any) []string {
	var out []string
	for _, v := range values {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, it := range v {
				if s, ok := it.(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// mappingsOf returns the mappings among values: a value that is a mapping
// itself, or the mapping items of a value that is a list.
func mappingsOf(values []any) []map[string]any {
	var out []map[string]any
	for _, v := range values {
		switch v := v.(type) {
		case map[string]any:
			out = append(out, v)
		case []any:
			for _, it := range v {
				if m, ok := it.(map[string]any); ok {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// summary is a short rendering of a refused field's value.
func summary(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
