package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime/debug"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/ignore"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/render/sandbox"
)

// ChartFile is the file whose presence makes a folder a Helm chart.
const ChartFile = "Chart.yaml"

// Helm is how a chart folder renders: an App's spec.helm with its release
// name and namespace. Values merge in this order, later winning: the
// chart's values.yaml, ValueFiles, Values, ValuesObject, Parameters.
type Helm struct {
	// ReleaseName is .Release.Name; empty means the chart folder's name.
	ReleaseName string `json:"releaseName,omitempty"`
	// Namespace is .Release.Namespace; empty means "default".
	Namespace string `json:"namespace,omitempty"`
	// ValueFiles are values files relative to the chart folder, or to the
	// repository root when they start with "/".
	ValueFiles []string `json:"valueFiles,omitempty"`
	// Values is an inline values document (YAML).
	Values string `json:"values,omitempty"`
	// ValuesObject is inline values as a map.
	ValuesObject map[string]any `json:"valuesObject,omitempty"`
	// Parameters are single values set by dotted key, as `--set` does.
	Parameters []HelmParameter `json:"parameters,omitempty"`
	// KubeVersion is .Capabilities.KubeVersion: the destination cluster's
	// version ("v1.31.2"), as Argo CD passes it; empty (or not a version)
	// means the Kubernetes version kdrift is built with.
	KubeVersion string `json:"kubeVersion,omitempty"`
	// APIVersions are added to .Capabilities.APIVersions, as `helm
	// template --api-versions` adds them: the group/versions and
	// group/version/kinds the destination serves.
	APIVersions []string `json:"apiVersions,omitempty"`
	// Overlay is another GitOps engine's edits of a kustomization or plain
	// folder (see Overlay); it does not apply to a chart folder. It rides
	// here so that every caller rendering an App passes it.
	Overlay *Overlay `json:"overlay,omitempty"`
	// Directory says how a plain folder is read (Argo CD's
	// source.directory, a kdrift App's spec.directory and spec.jsonnet);
	// nil reads every manifest file of the folder and its subfolders. It
	// rides here for the same reason as Overlay.
	Directory *Directory `json:"directory,omitempty"`

	// Sensitive says Values or ValuesObject hold values taken from a
	// Secret (a Flux HelmRelease's valuesFrom): the render is kept in
	// memory only, never in the disk cache.
	Sensitive bool `json:"sensitive,omitempty"`

	// SkipCRDs leaves the chart's crds/ folder out (a Flux HelmRelease's
	// install.crds: Skip).
	SkipCRDs bool `json:"skipCRDs,omitempty"`
	// PostRender are kustomize passes over a chart folder's output, in
	// order (a Flux HelmRelease's postRenderers).
	PostRender []PostRender `json:"postRender,omitempty"`

	// skipCRDs leaves the chart's crds/ out (kustomize's helmCharts
	// without includeCRDs).
	skipCRDs bool
	// inlineFirst merges ValuesObject under ValueFiles (kustomize's
	// valuesMerge: merge).
	inlineFirst bool
}

// HelmParameter is one `--set` (or `--set-string` when ForceString) value.
type HelmParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	ForceString bool   `json:"forceString,omitempty"`
}

// key is what, beside the folder, makes one render differ from another.
func (h *Helm) key() string {
	if h == nil {
		return ""
	}
	js, err := json.Marshal(h)
	if err != nil {
		return fmt.Sprintf("%p", h) // not cached across calls: still correct
	}
	return string(js)
}

// IsChart reports whether dir of tree holds a Chart.yaml.
func IsChart(tree fs.FS, dir string) bool {
	st, err := fs.Stat(tree, path.Join(dir, ChartFile))
	return err == nil && !st.IsDir()
}

// ChartError is a chart kdrift will not or cannot render: a dependency
// that is not vendored, a values file that is missing or outside the
// repository, a template that fails.
type ChartError struct {
	// Chart is the chart folder, relative to the repository root.
	Chart string
	// Problem says what is wrong, naming the template and line when
	// Helm's template engine failed.
	Problem string
	// Fix says what to do.
	Fix string
	// Err is the typed cause callers may branch on (a *SchemaRefError),
	// or nil.
	Err error
}

// Unwrap returns the typed cause, or nil.
func (e *ChartError) Unwrap() error { return e.Err }

// Error renders `chart CHART: PROBLEM; FIX`.
func (e *ChartError) Error() string {
	s := "chart " + e.Chart + ": " + e.Problem
	if e.Fix != "" {
		s += "; " + e.Fix
	}
	return s
}

// helm renders the chart in dir of tree as `helm template` would,
// offline, in a render worker (see renderChart).
func (r *Renderer) helm(ctx context.Context, tree Tree, dir string, opts Options, h *Helm) *cacheEntry {
	secrets := &redact.Secrets{}
	fsys := newTreeFS(ctx, tree, opts, secrets)
	fsys.sops = r.newSOPSReader(dir)
	r.sandboxFS(fsys, dir)
	objs, err := renderChart(fsys, dir, h)
	if err == nil && h != nil && len(h.PostRender) > 0 {
		objs, err = r.postRender(ctx, fsys, dir, opts, h.PostRender, objs)
	}
	e := r.entry(fsys)
	if le := fsys.limit(); le != nil {
		err = le
	}
	if err != nil {
		var le *sandbox.LimitError
		switch {
		case errors.As(err, &le):
			// A budget of the post render's build is a setting, not the
			// input: never cached.
			e.inputs, err = nil, limitf("", le.Limit, "%s", le.Detail)
		case errors.Is(err, sandbox.ErrWorker), ctx.Err() != nil:
			e.inputs = nil
		}
		e.err = &Error{Path: dir, Err: scrubbed(fsys.sops.scrub(err), secrets)}
		return e
	}
	e.objs = objs
	return e
}

// chartRoot and valuesFile are where a chart's files and its merged
// values are, in the file system the parent answers a Helm render
// worker's reads from.
const (
	chartRoot  = "/chart/"
	valuesFile = "/values.json"
)

// helmRequest is what a render worker renders: the chart of Dir, whose
// files (Files, relative to the chart) and merged values it reads, the
// release, the parameters set last and the budgets.
type helmRequest struct {
	Dir         string          `json:"dir"`
	Files       []string        `json:"files"`
	Release     string          `json:"release"`
	Namespace   string          `json:"namespace"`
	KubeVersion string          `json:"kubeVersion,omitempty"`
	APIVersions []string        `json:"apiVersions,omitempty"`
	Parameters  []HelmParameter `json:"parameters,omitempty"`
	SkipCRDs    bool            `json:"skipCRDs,omitempty"`
	Options     Options         `json:"options"`
}

// renderedFile is one manifest a chart rendered: its path from the
// repository root, and its text.
type renderedFile struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// renderChart renders the chart in dir; objects come back ordered by
// template path, then document. The parent (this function) reads the
// chart's files and the values files through fsys, within its budgets
// (vendored archives are measured unpacked before anything loads them),
// and merges the values; a render worker loads the chart, checks the
// values against its schemas and runs the templates (see helmHandler),
// confined and bounded in time and memory, reading the files through its
// pipes; the parent passes the rendered manifests through the YAML guard
// and decodes them. Templates see no cluster (`lookup` returns nothing,
// DNS lookups are off, `env` is gone), and the functions that allocate by
// an argument are bounded.
func renderChart(fsys *treeFS, dir string, h *Helm) (objs []*unstructured.Unstructured, err error) {
	if h == nil {
		h = &Helm{}
	}
	files, err := readChart(fsys, dir)
	if err != nil {
		return nil, err
	}
	vals, err := helmValues(fsys, dir, h)
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	req := &helmRequest{Dir: dir, Release: h.ReleaseName, Namespace: h.Namespace, KubeVersion: h.KubeVersion, APIVersions: h.APIVersions,
		Parameters: h.Parameters, SkipCRDs: h.skipCRDs || h.SkipCRDs, Options: fsys.opts}
	for _, f := range files {
		if err := mem.WriteFile(chartRoot+f.Name, f.Data); err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", dir, f.Name, err)
		}
		req.Files = append(req.Files, f.Name)
	}
	js, err := json.Marshal(vals)
	if err != nil {
		return nil, &ChartError{Chart: dir, Problem: "the values cannot be written as JSON: " + err.Error(), Fix: "fix the values"}
	}
	if err := mem.WriteFile(valuesFile, js); err != nil {
		return nil, err
	}
	out, err := runRenderer(fsys, mem, kindHelm, helmHandler, req)
	if err != nil {
		return nil, err
	}
	var errs []error
	var size int64
	for _, raw := range out {
		var f renderedFile
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("chart %s: the render worker sent a manifest that is not one: %w", dir, err)
		}
		if size += int64(len(f.Text)); size > fsys.opts.MaxRenderBytes {
			return nil, limitf("", "rendered size", "the chart's templates rendered more than %d bytes", fsys.opts.MaxRenderBytes)
		}
		got, err := decodeRendered(fsys, f.Name, []byte(f.Text))
		AfterDecode(len(f.Text))
		var le *LimitError
		if errors.As(err, &le) {
			return nil, err
		}
		errs = append(errs, err)
		objs = append(objs, got...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return objs, nil
}

// helmHandler is the render worker's side of renderChart: it reads the
// chart's files and values from fsys and renders the chart.
func helmHandler(fsys filesys.FileSystem, payload json.RawMessage, _ int64) ([]json.RawMessage, error) {
	var req helmRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("helm request: %w", err)
	}
	files := make([]*archive.BufferedFile, 0, len(req.Files))
	for _, name := range req.Files {
		data, err := fsys.ReadFile(chartRoot + name)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", req.Dir, name, err)
		}
		files = append(files, &archive.BufferedFile{Name: name, Data: data})
	}
	data, err := fsys.ReadFile(valuesFile)
	if err != nil {
		return nil, fmt.Errorf("chart %s: values: %w", req.Dir, err)
	}
	vals := map[string]any{}
	if err := json.Unmarshal(data, &vals); err != nil {
		return nil, fmt.Errorf("chart %s: values: %w", req.Dir, err)
	}
	// Budget errors of the template functions are recorded here, as in
	// the parent's treeFS.
	wfs := newTreeFS(context.Background(), nil, req.Options, &redact.Secrets{})
	rendered, err := renderLoaded(context.Background(), wfs, &req, files, vals)
	if le := wfs.limit(); le != nil {
		err = le
	}
	if err != nil {
		return nil, coded(err)
	}
	out := make([]json.RawMessage, 0, len(rendered))
	for _, f := range rendered {
		js, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		out = append(out, js)
	}
	return out, nil
}

// renderLoaded loads the chart of req from files, sets the parameters
// over vals and renders it: its CRDs first (unless SkipCRDs), then its
// templates by path. A budget is recorded in fsys.
func renderLoaded(ctx context.Context, fsys *treeFS, req *helmRequest, files []*archive.BufferedFile, vals map[string]any) ([]renderedFile, error) {
	dir := req.Dir
	c, err := loadChart(fsys, dir, files)
	if err != nil {
		return nil, err
	}
	if err := checkVendored(dir, c); err != nil {
		return nil, err
	}
	if err := setParameters(dir, req.Parameters, vals); err != nil {
		return nil, err
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return nil, &ChartError{Chart: dir, Problem: err.Error(), Fix: "fix the dependencies in Chart.yaml"}
	}
	release := common.ReleaseOptions{Name: req.Release, Namespace: req.Namespace, Revision: 1, IsInstall: true}
	if release.Name == "" {
		release.Name = path.Base(dir)
	}
	if release.Namespace == "" {
		release.Namespace = "default"
	}
	// Helm's own schema check is skipped: it fetches a $ref to a URL and
	// opens one to a file; validateSchemas checks the same values offline.
	top, err := util.ToRenderValuesWithSchemaValidation(c, vals, release, capabilities(&Helm{KubeVersion: req.KubeVersion, APIVersions: req.APIVersions}), true)
	if err != nil {
		return nil, &ChartError{Chart: dir, Problem: err.Error(), Fix: "fix the values"}
	}
	coalesced, _ := top["Values"].(common.Values)
	if err := validateSchemas(ctx, dir, c, coalesced, fsys.opts); err != nil {
		return nil, err
	}
	instrument(c)
	funcs := boundedFuncs(ctx, fsys)
	for name, fn := range tickFuncs(ctx, fsys) {
		funcs[name] = fn
	}
	eng := engine.Engine{CustomTemplateFuncs: funcs}
	rendered, err := eng.RenderWithContext(ctx, c, top)
	if le := fsys.limit(); le != nil {
		return nil, le
	}
	if err != nil {
		if cerr := context.Cause(ctx); cerr != nil {
			return nil, cerr
		}
		var le *LimitError
		if errors.As(err, &le) {
			return nil, le
		}
		return nil, &ChartError{Chart: dir, Problem: oneLine(err.Error()), Fix: "fix the template (`helm template` shows the same error)"}
	}
	names := make([]string, 0, len(rendered))
	var size int64
	for name, text := range rendered {
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(text) == "" {
			continue
		}
		if size += int64(len(text)); size > fsys.opts.MaxRenderBytes {
			return nil, limitf("", "rendered size", "the chart's templates rendered more than %d bytes", fsys.opts.MaxRenderBytes)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var out []renderedFile
	// CRDs first, as Helm installs them (their documents are not templates).
	for _, crd := range c.CRDObjects() {
		if req.SkipCRDs {
			break
		}
		out = append(out, renderedFile{Name: path.Join(path.Dir(dir), crd.Filename), Text: string(crd.File.Data)})
	}
	for _, name := range names {
		// name is CHART/templates/...; shown relative to the repository.
		out = append(out, renderedFile{Name: path.Join(path.Dir(dir), name), Text: rendered[name]})
	}
	return out, nil
}

// decodeRendered passes one rendered manifest through the YAML guard (a
// template can write aliases), counts its nodes against the render's
// budget of rendered nodes and decodes its documents.
func decodeRendered(fsys *treeFS, name string, data []byte) ([]*unstructured.Unstructured, error) {
	cost, err := checkYAML(name, data, fsys.opts, nil)
	if err != nil {
		return nil, err
	}
	if err := fsys.spend(name, cost, true); err != nil {
		return nil, err
	}
	return decodeFile(name, data)
}

// oneLine joins Helm's multi-line messages into one line and cuts the
// middle of a long one: a recursion nests one "error calling include"
// per level, and the first template and the last cause are what matter.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 1200 {
		s = s[:600] + " … " + s[len(s)-400:]
	}
	return s
}

// readChart reads every file of the chart in dir through fsys (within its
// budgets) and leaves out what .helmignore names; the archives in charts/
// are measured unpacked against what is left of the read budget before
// anything loads them.
func readChart(fsys *treeFS, dir string) ([]*archive.BufferedFile, error) {
	rules := ignore.Empty()
	if data, err := fsys.readFor("/"+path.Join(dir, ignore.HelmIgnore), "Helm chart "+dir); err == nil {
		if rules, err = ignore.Parse(strings.NewReader(string(data))); err != nil {
			return nil, &ChartError{Chart: dir, Problem: ".helmignore: " + err.Error(), Fix: "fix the pattern"}
		}
	} else if le := fsys.limit(); le != nil {
		return nil, le
	}
	rules.AddDefaults()
	var files []*archive.BufferedFile
	err := fs.WalkDir(fsys.tree, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(name, dir), "/")
		if rel == "" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if rules.Ignore(rel, info) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		data, err := fsys.readFor("/"+name, "Helm chart "+dir)
		if le := fsys.limit(); le != nil {
			return le
		}
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	fsys.mu.Lock()
	left := fsys.opts.MaxRenderBytes - fsys.read
	fsys.mu.Unlock()
	if err := checkArchives(dir, files, left); err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return nil, fsys.refuse(err)
		}
		return nil, err
	}
	return files, nil
}

// loadChart loads the chart of dir from its files as Helm does (archives
// in charts/ are unpacked in memory) and counts what the archives
// unpacked to against fsys's budget.
func loadChart(fsys *treeFS, dir string, files []*archive.BufferedFile) (*chart.Chart, error) {
	c, err := loadFilesSafe(files)
	if err != nil {
		return nil, &ChartError{Chart: dir, Problem: oneLine(err.Error()), Fix: "fix the chart so that `helm template` loads it"}
	}
	// Archives in charts/ were unpacked by the loader: count them too.
	var size int64
	var count func(*chart.Chart)
	count = func(c *chart.Chart) {
		for _, f := range c.Raw {
			size += int64(len(f.Data))
		}
		for _, d := range c.Dependencies() {
			count(d)
		}
	}
	count(c)
	if size > fsys.opts.MaxRenderBytes {
		return nil, fsys.refuse(limitf(dir, "read size", "the chart and its dependencies come to more than %d bytes unpacked", fsys.opts.MaxRenderBytes))
	}
	return c, nil
}

// loadFilesSafe is loader.LoadFiles with a panic turned into an error.
func loadFilesSafe(files []*archive.BufferedFile) (c *chart.Chart, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, &PanicError{Value: p, Stack: debug.Stack(), Renderer: kindHelm}
		}
	}()
	return loader.LoadFiles(files)
}

// checkVendored refuses a chart whose Chart.yaml names a dependency that
// is not under its charts/ folder: Helm would fetch it from a chart
// repository.
func checkVendored(dir string, c *chart.Chart) error {
	for _, dep := range c.Metadata.Dependencies {
		if dep == nil {
			continue
		}
		found := false
		for _, d := range c.Dependencies() {
			if d.Name() == dep.Name {
				found = true
			}
		}
		if !found {
			where := "a chart repository"
			if dep.Repository != "" {
				where = redact.Text(dep.Repository)
			}
			return &ChartError{Chart: dir, Problem: fmt.Sprintf("dependency %q (version %q) is not vendored under %s/charts and would be fetched from %s; kdrift fetches nothing while rendering", dep.Name, dep.Version, dir, where),
				Fix: "vendor it: run `helm dependency build` and commit the charts/ folder"}
		}
	}
	for _, d := range c.Dependencies() {
		if err := checkVendored(path.Join(dir, "charts", d.Name()), d); err != nil {
			return err
		}
	}
	return nil
}

// helmValues merges the user values of h: value files, inline values and
// the values object (the parameters are set over them by setParameters,
// and the chart's values.yaml is merged under them by Helm).
func helmValues(fsys *treeFS, dir string, h *Helm) (map[string]any, error) {
	vals := map[string]any{}
	if h.inlineFirst {
		var err error
		if vals, err = mergeObject(dir, h, vals); err != nil {
			return nil, err
		}
	}
	for _, vf := range h.ValueFiles {
		p, err := ValuesFilePath(dir, vf)
		if err != nil {
			return nil, &ChartError{Chart: dir, Problem: err.Error(), Fix: "name a values file of the repository"}
		}
		data, err := fsys.readFor("/"+p, "Helm as a values file of chart "+dir)
		if le := fsys.limit(); le != nil {
			return nil, le
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &ChartError{Chart: dir, Problem: fmt.Sprintf("values file %q (%s) does not exist in this revision", vf, p), Fix: "commit it, or fix spec.helm.valueFiles"}
		}
		if err != nil {
			return nil, err
		}
		m, err := common.ReadValues(data)
		if err != nil {
			return nil, &ChartError{Chart: dir, Problem: fmt.Sprintf("values file %s: %s", p, oneLine(err.Error())), Fix: "fix its YAML"}
		}
		vals = loader.MergeMaps(vals, m)
	}
	if strings.TrimSpace(h.Values) != "" {
		if err := CheckYAML("spec.helm.values", []byte(h.Values), fsys.opts); err != nil {
			return nil, err
		}
		m, err := common.ReadValues([]byte(h.Values))
		if err != nil {
			return nil, &ChartError{Chart: dir, Problem: "spec.helm.values: " + oneLine(err.Error()), Fix: "write a YAML mapping"}
		}
		vals = loader.MergeMaps(vals, m)
	}
	if !h.inlineFirst {
		var err error
		if vals, err = mergeObject(dir, h, vals); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// setParameters sets the parameters over vals, as `--set` does; the
// render worker does it after the values came through the pipe as JSON,
// so that a parameter's value keeps the type `--set` gives it (an int64,
// not JSON's float64).
func setParameters(dir string, params []HelmParameter, vals map[string]any) error {
	for _, p := range params {
		set := strvals.ParseInto
		if p.ForceString {
			set = strvals.ParseIntoString
		}
		if err := set(p.Name+"="+setValue(p.Value), vals); err != nil {
			return &ChartError{Chart: dir, Problem: fmt.Sprintf("spec.helm.parameters %q: %s", p.Name, err), Fix: "write a dotted key such as image.tag"}
		}
	}
	return nil
}

// setValue escapes a parameter value for `--set` syntax, as Argo CD does:
// commas are literal unless the value is a {a,b} list.
func setValue(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		return v
	}
	return strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), ",", `\,`)
}

// ValuesFilePath resolves a spec.helm.valueFiles entry of the chart in dir
// to a repository path: relative to the chart folder, or to the repository
// root when it starts with "/". A URL or a path that leaves the
// repository is an error.
func ValuesFilePath(dir, vf string) (string, error) {
	switch {
	case strings.TrimSpace(vf) == "":
		return "", errors.New("a values file is empty")
	case remote(vf):
		return "", fmt.Errorf("values file %q is a remote location; kdrift never fetches from the network while rendering", redact.Text(vf))
	}
	p := path.Join(dir, vf)
	if strings.HasPrefix(vf, "/") {
		p = path.Clean(strings.TrimPrefix(vf, "/"))
	}
	if p == ".." || strings.HasPrefix(p, "../") || !fs.ValidPath(p) {
		return "", fmt.Errorf("values file %q is outside the repository", vf)
	}
	return p, nil
}

// capabilities is .Capabilities: Helm's defaults (every built-in API
// version) plus h's API versions, and h's Kubernetes version or else that
// of the client-go kdrift is built with, as `helm template --kube-version
// --api-versions` does. The cluster's values come in h: rendering asks no
// cluster anything.
func capabilities(h *Helm) *common.Capabilities {
	caps := common.DefaultCapabilities.Copy()
	// Copy shares the default list: concatenate, never append to it.
	caps.APIVersions = slices.Concat(caps.APIVersions, h.APIVersions)
	if h.KubeVersion != "" {
		if kv, err := common.ParseKubeVersion(h.KubeVersion); err == nil {
			caps.KubeVersion = *kv
			return caps
		}
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path != "k8s.io/client-go" {
				continue
			}
			// client-go v0.N.x goes with Kubernetes 1.N.
			parts := strings.Split(strings.TrimPrefix(m.Version, "v"), ".")
			if len(parts) >= 2 && parts[0] == "0" {
				if kv, err := common.ParseKubeVersion("v1." + parts[1] + ".0"); err == nil {
					caps.KubeVersion = *kv
				}
			}
		}
	}
	return caps
}

// mergeObject merges a copy of h.ValuesObject into vals: through JSON, so
// that rendering never changes the App.
func mergeObject(dir string, h *Helm, vals map[string]any) (map[string]any, error) {
	if len(h.ValuesObject) == 0 {
		return vals, nil
	}
	js, err := json.Marshal(h.ValuesObject)
	if err != nil {
		return nil, &ChartError{Chart: dir, Problem: "spec.helm.valuesObject: " + err.Error(), Fix: "write a YAML mapping"}
	}
	m, err := common.ReadValues(js)
	if err != nil {
		return nil, &ChartError{Chart: dir, Problem: "spec.helm.valuesObject: " + err.Error(), Fix: "write a YAML mapping"}
	}
	return loader.MergeMaps(vals, m), nil
}
