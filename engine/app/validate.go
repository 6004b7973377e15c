package app

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/render"
)

// Validate checks the meaning of one parsed App against the repository tree
// fsys, whose root is the repository root: the name, the path (required,
// relative, inside the repository, an existing folder), the ignore rules'
// JSON pointers (RFC 6901) and the freeze. It returns every problem found,
// each an *Error naming the file and field; nil means the App is valid.
func Validate(a App, fsys fs.FS) []error {
	mk := func(field, problem, fix string) error {
		return &Error{File: a.File, App: a.Metadata.Name, Field: field, Problem: problem, Fix: fix}
	}
	var errs []error
	switch {
	case a.Metadata.Name == "":
		errs = append(errs, mk("metadata.name", "is missing", "name the App (lowercase letters, digits and '-')"))
	default:
		for _, msg := range validation.IsDNS1123Subdomain(a.Metadata.Name) {
			errs = append(errs, mk("metadata.name", msg, "use lowercase letters, digits, '-' and '.'"))
		}
	}
	if a.Spec.Destination.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(a.Spec.Destination.Namespace) {
			errs = append(errs, mk("spec.destination.namespace", msg, "use a valid namespace name"))
		}
	}
	if err := checkPath(a.Spec.Path, fsys); err != nil {
		errs = append(errs, mk("spec.path", err.problem, err.fix))
	}
	errs = append(errs, validateHelm(a, fsys, mk)...)
	errs = append(errs, validateDirectory(a, fsys, "spec.directory", "spec.jsonnet", mk)...)
	for i, rule := range a.Spec.IgnoreDifferences {
		field := fmt.Sprintf("spec.ignoreDifferences[%d]", i)
		if len(rule.JSONPointers) == 0 && len(rule.ManagedFieldsManagers) == 0 && len(rule.JQPathExpressions) == 0 {
			errs = append(errs, mk(field, "ignores nothing", "give jsonPointers, managedFieldsManagers or jqPathExpressions"))
		}
		for j, q := range rule.JQPathExpressions {
			if err := CheckJQPath(q); err != nil {
				errs = append(errs, mk(fmt.Sprintf("%s.jqPathExpressions[%d]", field, j), err.Error(), "write a jq path expression such as .spec.replicas"))
			}
		}
		for j, p := range rule.JSONPointers {
			if err := CheckJSONPointer(p); err != nil {
				errs = append(errs, mk(fmt.Sprintf("%s.jsonPointers[%d]", field, j), err.Error(), "write an RFC 6901 pointer such as /spec/replicas (~0 for '~', ~1 for '/')"))
			}
		}
		for j, m := range rule.ManagedFieldsManagers {
			if strings.TrimSpace(m) == "" {
				errs = append(errs, mk(fmt.Sprintf("%s.managedFieldsManagers[%d]", field, j), "is empty", "name a field manager as it appears in metadata.managedFields"))
			}
		}
	}
	if f := a.Spec.Freeze; f != nil {
		if strings.TrimSpace(f.Reason) == "" {
			errs = append(errs, mk("spec.freeze.reason", "is blank", "say why the App is frozen (use `kdrift freeze --reason`)"))
		}
		if f.At.IsZero() {
			errs = append(errs, mk("spec.freeze.at", "is missing", "set when the freeze started, an RFC 3339 time (use `kdrift freeze`)"))
		}
		if f.Until != nil && !f.At.IsZero() && !f.Until.After(f.At) {
			errs = append(errs, mk("spec.freeze.until", fmt.Sprintf("%s is not after at %s", f.Until.Format("2006-01-02T15:04:05Z07:00"), f.At.Format("2006-01-02T15:04:05Z07:00")), "set until after at, or remove it"))
		}
	}
	errs = append(errs, validateFreezes(a, mk)...)
	errs = append(errs, validateHealth(a.Spec.Health, "spec.health", mk)...)
	return errs
}

type pathProblem struct{ problem, fix string }

// checkPath checks spec.path: required, relative, inside the repository, an
// existing folder of fsys.
func checkPath(p string, fsys fs.FS) *pathProblem {
	const fix = "give a folder relative to the repository root, such as deploy/overlays/prod"
	switch {
	case strings.TrimSpace(p) == "":
		return &pathProblem{"is missing", fix}
	case strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || (len(p) > 1 && p[1] == ':'):
		return &pathProblem{fmt.Sprintf("%q is not a relative path", p), fix}
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return &pathProblem{fmt.Sprintf("%q leaves the repository", p), fix}
	}
	if clean == ".git" || strings.HasPrefix(clean, ".git/") {
		return &pathProblem{fmt.Sprintf("%q is inside .git", p), fix}
	}
	st, err := fs.Stat(fsys, clean)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &pathProblem{fmt.Sprintf("folder %q does not exist in this revision", p), "commit the folder, or fix the path"}
	case err != nil:
		return &pathProblem{fmt.Sprintf("cannot read %q: %v", p, err), fix}
	case !st.IsDir():
		return &pathProblem{fmt.Sprintf("%q is a file, not a folder", p), "point at the folder that holds the kustomization or the YAML files"}
	}
	return nil
}

// CheckJSONPointer reports whether p is a well-formed RFC 6901 JSON pointer:
// empty (the whole document) or a sequence of "/"-prefixed tokens in which
// every '~' is followed by '0' or '1'.
func CheckJSONPointer(p string) error {
	if p == "" {
		return nil
	}
	if p[0] != '/' {
		return fmt.Errorf("pointer %q does not start with '/'", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '~' {
			continue
		}
		if i+1 >= len(p) || (p[i+1] != '0' && p[i+1] != '1') {
			return fmt.Errorf("pointer %q has '~' not followed by 0 or 1 at offset %d", p, i)
		}
	}
	return nil
}

// validateHelm checks spec.helm: only on a chart folder, a release name
// Helm accepts, values files inside the repository that exist, inline
// values that are a YAML mapping, parameters with a name.
func validateHelm(a App, fsys fs.FS, mk func(field, problem, fix string) error) []error {
	h := a.Spec.Helm
	if h == nil {
		return nil
	}
	var errs []error
	dir := path.Clean(a.Spec.Path)
	if checkPath(a.Spec.Path, fsys) == nil && !render.IsChart(fsys, dir) {
		errs = append(errs, mk("spec.helm", fmt.Sprintf("is set, but %q holds no %s", a.Spec.Path, render.ChartFile), "point spec.path at the chart folder, or remove spec.helm"))
	}
	if n := h.ReleaseName; n != "" {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, mk("spec.helm.releaseName", msg, "use lowercase letters, digits, '-' and '.'"))
		}
		if len(n) > 53 {
			errs = append(errs, mk("spec.helm.releaseName", fmt.Sprintf("%q is longer than Helm's 53 characters", n), "shorten it"))
		}
	}
	for i, vf := range h.ValueFiles {
		field := fmt.Sprintf("spec.helm.valueFiles[%d]", i)
		p, err := render.ValuesFilePath(dir, vf)
		if err != nil {
			errs = append(errs, mk(field, err.Error(), "name a values file relative to the chart folder, or from the repository root with a leading /"))
			continue
		}
		if a.Spec.Chart != nil && !strings.HasPrefix(vf, "/") {
			continue // in the remote chart: its render says when one is missing
		}
		if st, err := fs.Stat(fsys, p); err != nil || st.IsDir() {
			errs = append(errs, mk(field, fmt.Sprintf("%s does not exist in this revision", p), "commit the values file, or fix the path"))
		}
	}
	if strings.TrimSpace(h.Values) != "" {
		var m map[string]any
		if err := render.CheckYAML(a.File, []byte(h.Values), render.DefaultOptions()); err != nil {
			errs = append(errs, mk("spec.helm.values", err.Error(), "write a small YAML mapping"))
		} else if err := yaml.Unmarshal([]byte(h.Values), &m); err != nil {
			errs = append(errs, mk("spec.helm.values", "is not a YAML mapping: "+err.Error(), "write values as a YAML mapping (a block string: values: |)"))
		}
	}
	for i, p := range h.Parameters {
		if strings.TrimSpace(p.Name) == "" {
			errs = append(errs, mk(fmt.Sprintf("spec.helm.parameters[%d].name", i), "is empty", "name the value by dotted key, such as image.tag"))
		}
	}
	return errs
}

// validateDirectory checks spec.directory and spec.jsonnet (dirField and
// jsonnetField name them; an Argo CD Application's are under
// spec.source.directory): only on a plain folder, globs that compile,
// library folders inside the repository that exist, variables with a
// name and top-level arguments that can name a parameter.
func validateDirectory(a App, fsys fs.FS, dirField, jsonnetField string, mk func(field, problem, fix string) error) []error {
	d, j := a.Spec.Directory, a.Spec.Jsonnet
	if d == nil && j == nil {
		return nil
	}
	var errs []error
	dir := path.Clean(a.Spec.Path)
	if checkPath(a.Spec.Path, fsys) == nil {
		what := ""
		switch {
		case render.IsChart(fsys, dir):
			what = render.ChartFile
		case built(fsys, dir):
			what = "a kustomization"
		}
		if what != "" {
			field := dirField
			if d == nil {
				field = jsonnetField
			}
			errs = append(errs, mk(field, fmt.Sprintf("is set, but %q holds %s, which is rendered as such; these options read plain folders only", a.Spec.Path, what), "remove it, or point the path at a plain folder"))
		}
	}
	if d != nil {
		for _, g := range []struct{ field, pattern string }{{dirField + ".include", d.Include}, {dirField + ".exclude", d.Exclude}} {
			if _, err := render.CompileGlob(g.pattern); err != nil {
				errs = append(errs, mk(g.field, err.Error(), "write a glob such as *.yaml or {*.yml,*.json}"))
			}
		}
	}
	if j == nil {
		return errs
	}
	for i, l := range j.Libs {
		field := fmt.Sprintf("%s.libs[%d]", jsonnetField, i)
		p := strings.TrimPrefix(l, "/")
		if p == "" {
			errs = append(errs, mk(field, "is empty", "name a folder from the repository root"))
			continue
		}
		if perr := checkPath(p, fsys); perr != nil {
			errs = append(errs, mk(field, perr.problem, "name a library folder of this repository from its root, such as vendor or lib"))
		}
	}
	for _, vars := range []struct {
		field string
		list  []render.JsonnetVar
	}{{jsonnetField + ".extVars", j.ExtVars}, {jsonnetField + ".tlas", j.TLAs}} {
		for i, v := range vars.list {
			field := fmt.Sprintf("%s[%d].name", vars.field, i)
			switch {
			case strings.TrimSpace(v.Name) == "":
				errs = append(errs, mk(field, "is empty", "name the variable"))
			case vars.field == jsonnetField+".tlas":
				if p := render.CheckJsonnetTLA(v.Name); p != "" {
					errs = append(errs, mk(field, p, "name the argument as the file's function names its parameter"))
				}
			}
		}
	}
	return errs
}
