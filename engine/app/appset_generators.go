package app

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/render"
)

// The generators of an ApplicationSet: each yields parameter sets, maps
// of what its template may name (see appset.go for the expansion).

// generate yields the parameter sets of one generator.
func (r *appSetRun) generate(g map[string]any, field string, depth int) ([]map[string]any, *problem) {
	if depth > MaxAppSetDepth {
		return nil, &problem{field, fmt.Sprintf("nests matrix and merge generators more than %d deep", MaxAppSetDepth), "flatten the generators"}
	}
	var kinds []string
	for k := range g {
		if k != "selector" && k != "template" {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	if len(kinds) != 1 {
		return nil, &problem{field, fmt.Sprintf("must hold exactly one generator, holds %d (%s)", len(kinds), strings.Join(kinds, ", ")), "give one of list, git, clusters, matrix, merge"}
	}
	kind := kinds[0]
	field += "." + kind
	if why, ok := networkGenerators[kind]; ok {
		return nil, &problem{field, fmt.Sprintf("the %s generator %s, which kdrift never calls from what a repository says", kind, why),
			"list the apps with a list or git generator, or open kdrift where Argo CD runs so that it reads the Applications the cluster has"}
	}
	spec, _ := g[kind].(map[string]any)
	if spec == nil {
		return nil, &problem{field, "is empty", "give the generator's fields"}
	}
	var out []map[string]any
	var prob *problem
	switch kind {
	case "list":
		out, prob = r.list(spec, field)
	case "git":
		out, prob = r.git(spec, field)
	case "clusters":
		out, prob = r.clusters(spec, field)
	case "matrix":
		out, prob = r.matrix(spec, field, depth)
	case "merge":
		out, prob = r.merge(spec, field, depth)
	default:
		return nil, &problem{field, "is a generator kdrift does not know", "use list, git, clusters, matrix or merge"}
	}
	if prob != nil {
		return nil, prob
	}
	if len(out) > MaxAppSetParams {
		return nil, &problem{field, fmt.Sprintf("yields more than %d elements", MaxAppSetParams), "split the ApplicationSet"}
	}
	if sel, ok := g["selector"].(map[string]any); ok {
		return r.selectParams(out, sel, field)
	}
	return out, nil
}

// selectParams keeps the parameter sets a generator's selector matches.
func (r *appSetRun) selectParams(params []map[string]any, sel map[string]any, field string) ([]map[string]any, *problem) {
	s, prob := selectorOf(sel, strings.TrimSuffix(field, "."+lastField(field))+".selector")
	if prob != nil {
		return nil, prob
	}
	var out []map[string]any
	for _, p := range params {
		if s.Matches(labels.Set(flatten(p))) {
			out = append(out, p)
		}
	}
	return out, nil
}

func lastField(f string) string {
	if i := strings.LastIndex(f, "."); i >= 0 {
		return f[i+1:]
	}
	return f
}

// selectorOf reads a label selector.
func selectorOf(sel map[string]any, field string) (labels.Selector, *problem) {
	var ls metav1.LabelSelector
	if err := remarshal(sel, &ls); err != nil {
		return nil, &problem{field, "cannot be read: " + err.Error(), "write matchLabels and matchExpressions"}
	}
	s, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, &problem{field, err.Error(), "fix the selector"}
	}
	return s, nil
}

// list is the list generator: its elements, or elementsYaml.
func (r *appSetRun) list(spec map[string]any, field string) ([]map[string]any, *problem) {
	elems, _ := spec["elements"].([]any)
	if y, ok := spec["elementsYaml"].(string); ok && y != "" {
		if err := render.CheckYAML(field+".elementsYaml", []byte(y), render.DefaultOptions()); err != nil {
			return nil, &problem{field + ".elementsYaml", err.Error(), "write a plain list of mappings"}
		}
		var more []any
		if err := yaml.Unmarshal([]byte(y), &more); err != nil {
			return nil, &problem{field + ".elementsYaml", "is not a YAML list: " + err.Error(), "write a list of mappings"}
		}
		elems = append(elems, more...)
	}
	var out []map[string]any
	for i, e := range elems {
		m, ok := jsonable(e).(map[string]any)
		if !ok {
			return nil, &problem{fmt.Sprintf("%s.elements[%d]", field, i), "is not a mapping", "write each element as key: value pairs"}
		}
		if r.goTemplate {
			out = append(out, m)
			continue
		}
		p := map[string]any{}
		for k, v := range m {
			if k == "values" {
				if vm, ok := v.(map[string]any); ok {
					for vk, vv := range vm {
						p["values."+vk] = stringOf(vv)
					}
					continue
				}
			}
			p[k] = stringOf(v)
		}
		out = append(out, p)
	}
	return out, nil
}

// stringOf is a value as fasttemplate parameters hold it: a string as
// is, anything else as JSON.
func stringOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// clusters is the clusters generator: Argo CD's in-cluster and the
// cluster Secrets committed to the repository.
func (r *appSetRun) clusters(spec map[string]any, field string) ([]map[string]any, *problem) {
	sel := labels.Everything()
	selected := false
	if m, ok := spec["selector"].(map[string]any); ok && len(m) > 0 {
		s, prob := selectorOf(m, field+".selector")
		if prob != nil {
			return nil, prob
		}
		sel, selected = s, !s.Empty()
	}
	all := r.d.argo().clusters
	hasInCluster := false
	for _, c := range all {
		if NormalizeServer(c.server) == InClusterServer {
			hasInCluster = true
		}
	}
	if !hasInCluster {
		all = append([]argoCluster{inCluster}, all...)
	}
	var out []map[string]any
	for _, c := range all {
		if !sel.Matches(labels.Set(c.labels)) {
			continue
		}
		out = append(out, r.clusterParams(c, spec))
	}
	if len(out) == 0 && selected {
		return nil, &problem{field + ".selector", fmt.Sprintf("matches no cluster Secret committed to this repository (%d found); Argo CD's other cluster Secrets live in its cluster, where kdrift does not read them from Git", len(r.d.argo().clusters)),
			"commit the cluster Secrets (argocd.argoproj.io/secret-type: cluster), or open kdrift where Argo CD runs so that it reads the Applications the cluster has"}
	}
	return out, nil
}

// clusterParams are one cluster's parameters, with the generator's
// values.
func (r *appSetRun) clusterParams(c argoCluster, spec map[string]any) map[string]any {
	values, _ := spec["values"].(map[string]any)
	if r.goTemplate {
		md := map[string]any{"labels": anyMap(c.labels), "annotations": anyMap(c.annotations)}
		p := map[string]any{"name": c.name, "nameNormalized": render.SanitizeName(c.name), "server": c.server, "project": c.project, "metadata": md}
		if values != nil {
			p["values"] = values
		}
		return p
	}
	p := map[string]any{"name": c.name, "nameNormalized": render.SanitizeName(c.name), "server": c.server, "project": c.project}
	for k, v := range c.labels {
		p["metadata.labels."+k] = v
	}
	for k, v := range c.annotations {
		p["metadata.annotations."+k] = v
	}
	for k, v := range values {
		p["values."+k] = stringOf(v)
	}
	return p
}

func anyMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// matrix is the product of two generators; the second is templated with
// each element of the first.
func (r *appSetRun) matrix(spec map[string]any, field string, depth int) ([]map[string]any, *problem) {
	gens, _ := spec["generators"].([]any)
	if len(gens) != 2 {
		return nil, &problem{field + ".generators", fmt.Sprintf("has %d generators; a matrix combines exactly 2", len(gens)), "give two generators"}
	}
	g0, _ := gens[0].(map[string]any)
	g1, _ := gens[1].(map[string]any)
	first, prob := r.generate(g0, field+".generators[0]", depth+1)
	if prob != nil {
		return nil, prob
	}
	var out []map[string]any
	seconds, prob := r.apply(g1, first, field+".generators[1]")
	if prob != nil {
		return nil, prob
	}
	for i, p := range first {
		g, _ := seconds[i].(map[string]any)
		second, prob := r.generate(g, field+".generators[1]", depth+1)
		if prob != nil {
			return nil, prob
		}
		if len(out)+len(second) > MaxAppSetParams {
			return nil, &problem{field, fmt.Sprintf("yields more than %d elements", MaxAppSetParams), "split the ApplicationSet"}
		}
		for _, q := range second {
			m, prob := r.combine(p, q, field)
			if prob != nil {
				return nil, prob
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// combine merges two elements of a matrix: for Go templates the second's
// values win (deeply); for fasttemplate a key with two values is an
// error, as in Argo CD.
func (r *appSetRun) combine(a, b map[string]any, field string) (map[string]any, *problem) {
	if r.goTemplate {
		return mergeOver(a, b, false), nil
	}
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if old, ok := out[k]; ok && old != v {
			return nil, &problem{field, fmt.Sprintf("both generators give parameter %q, with different values (%v, %v)", k, old, v), "rename one, or use goTemplate: true where the second wins"}
		}
		out[k] = v
	}
	return out, nil
}

// mergeOver is base with over's values on top, maps merged key by key.
// With skipEmpty, an empty or null value of over leaves base's: a
// generator's template over the ApplicationSet's, whose set fields win as
// Argo CD merges them; without it, every value of over wins (parameters).
func mergeOver(base, over map[string]any, skipEmpty bool) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = mergeOver(bm, om, skipEmpty)
				continue
			}
		}
		if skipEmpty && (v == nil || v == "") {
			continue
		}
		out[k] = v
	}
	return out
}

// merge is the merge generator: the first generator's elements, each
// merged with the later generators' elements that have the same values
// of mergeKeys.
func (r *appSetRun) merge(spec map[string]any, field string, depth int) ([]map[string]any, *problem) {
	gens, _ := spec["generators"].([]any)
	keys, _ := spec["mergeKeys"].([]any)
	if len(gens) < 2 {
		return nil, &problem{field + ".generators", "needs at least 2 generators", "give a base generator and the ones merged into it"}
	}
	if len(keys) == 0 {
		return nil, &problem{field + ".mergeKeys", "is missing", "name the parameters that match elements"}
	}
	keyOf := func(p map[string]any) string {
		flat := flatten(p)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = flat[fmt.Sprint(k)]
		}
		js, _ := json.Marshal(parts) // a []string always marshals
		return string(js)
	}
	g0, _ := gens[0].(map[string]any)
	base, prob := r.generate(g0, field+".generators[0]", depth+1)
	if prob != nil {
		return nil, prob
	}
	for i := 1; i < len(gens); i++ {
		gi, _ := gens[i].(map[string]any)
		f := fmt.Sprintf("%s.generators[%d]", field, i)
		more, prob := r.generate(gi, f, depth+1)
		if prob != nil {
			return nil, prob
		}
		byKey := map[string]map[string]any{}
		for _, p := range more {
			k := keyOf(p)
			if _, dup := byKey[k]; dup {
				return nil, &problem{f, fmt.Sprintf("yields two elements with the merge key values %s", k), "make mergeKeys unique per element"}
			}
			byKey[k] = p
		}
		for j, p := range base {
			if q, ok := byKey[keyOf(p)]; ok {
				if r.goTemplate {
					base[j] = mergeOver(p, q, false)
				} else {
					m := map[string]any{}
					for k, v := range p {
						m[k] = v
					}
					for k, v := range q {
						m[k] = v
					}
					base[j] = m
				}
			}
		}
	}
	return base, nil
}

// flatten is a parameter set as dotted keys and string values, the way
// selectors and merge keys see it.
func flatten(p map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if prefix == "" {
					walk(k, e)
				} else {
					walk(prefix+"."+k, e)
				}
			}
		case []any:
			for i, e := range x {
				walk(prefix+"."+strconv.Itoa(i), e)
			}
		case string:
			out[prefix] = x
		case nil:
			out[prefix] = ""
		default:
			out[prefix] = fmt.Sprint(x)
		}
	}
	walk("", p)
	return out
}

// git is the git generator over this repository's tree at the revision
// kdrift reads.
func (r *appSetRun) git(spec map[string]any, field string) ([]map[string]any, *problem) {
	repoURL, _ := spec["repoURL"].(string)
	if r.d.opts.SameRepo == nil || !r.d.opts.SameRepo(repoURL) {
		return nil, &problem{field + ".repoURL", fmt.Sprintf("names another repository (%s), which kdrift does not read (it reads this repository only)", repoURL), "open kdrift on that repository"}
	}
	dirs, _ := spec["directories"].([]any)
	files, _ := spec["files"].([]any)
	if len(dirs) > 0 && len(files) > 0 || len(dirs) == 0 && len(files) == 0 {
		return nil, &problem{field, "must give either directories or files", "give one of them"}
	}
	prefix, _ := spec["pathParamPrefix"].(string)
	st := r.d.argo()
	if st.dirs == nil && st.listErr == "" {
		r.d.listTree()
	}
	if st.listErr != "" {
		return nil, &problem{field, st.listErr, "make the repository smaller, or declare the apps in " + Dir + "/"}
	}
	var out []map[string]any
	if len(dirs) > 0 {
		var include, exclude []string
		for i, e := range dirs {
			m, _ := e.(map[string]any)
			p, _ := m["path"].(string)
			if p == "" {
				return nil, &problem{fmt.Sprintf("%s.directories[%d].path", field, i), "is missing", "give a folder glob such as apps/*"}
			}
			if _, err := path.Match(p, ""); err != nil {
				return nil, &problem{fmt.Sprintf("%s.directories[%d].path", field, i), fmt.Sprintf("%q is not a glob: %v", p, err), "fix the pattern"}
			}
			if ex, _ := m["exclude"].(bool); ex {
				exclude = append(exclude, p)
			} else {
				include = append(include, p)
			}
		}
		for _, d := range st.dirs {
			if matchAny(include, d) && !matchAny(exclude, d) {
				out = append(out, r.pathParams(d, "", prefix, nil))
			}
		}
	} else {
		type glob struct{ pattern, field string }
		var include, exclude []glob
		for i, e := range files {
			m, _ := e.(map[string]any)
			p, _ := m["path"].(string)
			f := fmt.Sprintf("%s.files[%d].path", field, i)
			if p == "" {
				return nil, &problem{f, "is missing", "give a file glob such as apps/*/config.json"}
			}
			if _, err := path.Match(p, ""); err != nil {
				return nil, &problem{f, fmt.Sprintf("%q is not a glob: %v", p, err), "fix the pattern"}
			}
			if ex, _ := m["exclude"].(bool); ex {
				exclude = append(exclude, glob{p, f})
			} else {
				include = append(include, glob{p, f})
			}
		}
		for _, g := range include {
		files:
			for _, file := range st.files {
				if !globMatch(g.pattern, file) {
					continue
				}
				for _, x := range exclude {
					if globMatch(x.pattern, file) {
						continue files // an exclusion wins, as for directories
					}
				}
				elems, prob := r.fileElements(file, g.field)
				if prob != nil {
					return nil, prob
				}
				for _, el := range elems {
					out = append(out, r.pathParams(path.Dir(file), path.Base(file), prefix, el))
				}
				if len(out) > MaxAppSetParams {
					return nil, &problem{field, fmt.Sprintf("yields more than %d elements", MaxAppSetParams), "split the ApplicationSet"}
				}
			}
		}
	}
	if values, ok := spec["values"].(map[string]any); ok && len(values) > 0 {
		return r.withValues(out, values, field+".values")
	}
	return out, nil
}

// withValues adds a generator's values, templated with each element.
func (r *appSetRun) withValues(params []map[string]any, values map[string]any, field string) ([]map[string]any, *problem) {
	done, prob := r.apply(values, params, field)
	if prob != nil {
		return nil, prob
	}
	for i, p := range params {
		v, _ := done[i].(map[string]any)
		if r.goTemplate {
			p["values"] = v
			continue
		}
		for k, e := range v {
			p["values."+k] = stringOf(e)
		}
	}
	return params, nil
}

// fileElements reads a git files generator's file: a JSON or YAML
// mapping, or a list of them.
func (r *appSetRun) fileElements(file, field string) ([]map[string]any, *problem) {
	info, err := fs.Stat(r.d.fsys, file)
	if err != nil {
		return nil, &problem{field, fmt.Sprintf("%s cannot be read: %v", file, err), "check the file in Git"}
	}
	if info.Size() > render.DefaultMaxFileBytes {
		return nil, &problem{field, fmt.Sprintf("%s is %d bytes, more than %d", file, info.Size(), render.DefaultMaxFileBytes), "make the file smaller"}
	}
	data, err := fs.ReadFile(r.d.fsys, file)
	if err != nil {
		return nil, &problem{field, fmt.Sprintf("%s cannot be read: %v", file, err), "check the file in Git"}
	}
	if err := render.CheckYAML(file, data, render.DefaultOptions()); err != nil {
		return nil, &problem{field, err.Error(), "fix the file"}
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, &problem{field, fmt.Sprintf("%s is neither JSON nor YAML: %v", file, err), "fix the file"}
	}
	switch x := v.(type) {
	case map[string]any:
		return []map[string]any{x}, nil
	case []any:
		var out []map[string]any
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, &problem{field, fmt.Sprintf("%s: element %d is not a mapping", file, i), "write a list of mappings"}
			}
			out = append(out, m)
		}
		return out, nil
	case nil:
		return nil, nil
	}
	return nil, &problem{field, fmt.Sprintf("%s is not a mapping or a list of mappings", file), "write key: value pairs"}
}

// pathParams are the parameters of a folder (dir) or a file (dir and
// filename), with a file's contents, as Argo CD names them.
func (r *appSetRun) pathParams(dir, filename, prefix string, content map[string]any) map[string]any {
	segments := strings.Split(dir, "/")
	base := path.Base(dir)
	if r.goTemplate {
		pp := map[string]any{"path": dir, "basename": base, "basenameNormalized": render.SanitizeName(base)}
		segs := make([]any, len(segments))
		for i, s := range segments {
			segs[i] = s
		}
		pp["segments"] = segs
		if filename != "" {
			pp["filename"] = filename
			pp["filenameNormalized"] = render.SanitizeName(filename)
		}
		p := map[string]any{}
		for k, v := range content {
			p[k] = v
		}
		if prefix != "" {
			p[prefix] = map[string]any{"path": pp}
		} else {
			p["path"] = pp
		}
		return p
	}
	p := map[string]any{}
	for k, v := range flatten(content) {
		p[k] = v
	}
	key := "path"
	if prefix != "" {
		key = prefix + ".path"
	}
	p[key] = dir
	p[key+".basename"] = base
	p[key+".basenameNormalized"] = render.SanitizeName(base)
	for i, s := range segments {
		p[key+"["+strconv.Itoa(i)+"]"] = s
	}
	if filename != "" {
		p[key+".filename"] = filename
		p[key+".filenameNormalized"] = render.SanitizeName(filename)
	}
	return p
}

// listTree lists the repository's folders and files for git generators,
// skipping hidden folders (.git) as Argo CD does, within MaxAppSetPaths.
func (d *discovery) listTree() {
	st := d.argo()
	st.dirs, st.files = []string{}, []string{}
	n := 0
	err := fs.WalkDir(d.fsys, ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > MaxAppSetPaths {
			st.listErr = fmt.Sprintf("the repository has more than %d folders and files, more than a git generator looks at", MaxAppSetPaths)
			return fs.SkipAll
		}
		if e.IsDir() {
			if name != "." && strings.HasPrefix(path.Base(name), ".") {
				return fs.SkipDir
			}
			if name != "." {
				st.dirs = append(st.dirs, name)
			}
			return nil
		}
		if e.Type().IsRegular() {
			st.files = append(st.files, name)
		}
		return nil
	})
	if err != nil && st.listErr == "" {
		st.listErr = "cannot list the repository: " + err.Error()
	}
}

// matchAny reports whether name matches one of the globs.
func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// globMatch matches a git files generator's path: path.Match per
// segment, and ** for any number of folders.
func globMatch(pattern, name string) bool {
	return matchSegments(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegments(pat, name []string) bool {
	// ok[i][j]: pat[i:] matches name[j:]; filled from the end, so that
	// several ** cost len(pat)*len(name), never exponential time.
	ok := make([][]bool, len(pat)+1)
	for i := range ok {
		ok[i] = make([]bool, len(name)+1)
	}
	ok[len(pat)][len(name)] = true
	for i := len(pat) - 1; i >= 0; i-- {
		for j := len(name); j >= 0; j-- {
			if pat[i] == "**" {
				ok[i][j] = ok[i+1][j] || (j < len(name) && ok[i][j+1])
				continue
			}
			if j < len(name) {
				m, _ := path.Match(pat[i], name[j])
				ok[i][j] = m && ok[i+1][j+1]
			}
		}
	}
	return ok[0][0]
}
