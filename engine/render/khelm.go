package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// fixHelmRepo says what to do with a helmCharts entry that names a chart
// repository.
const fixHelmRepo = "vendor the chart: `helm pull REPO/CHART --untar --untardir CHARTHOME`, commit it and remove repo:"

// inflateHelmCharts renders, in process, the helmCharts of kustomization
// file (already decoded as k) from charts kept under the chart home
// (helmGlobals.chartHome, default charts/, relative to the
// kustomization), as kustomize's Helm generator would with the helm
// program. The output becomes a file beside the kustomization, served
// from memory, that the kustomization lists last in resources instead of
// its helmCharts. An entry that names a chart repository is refused.
func (g *kguard) inflateHelmCharts(file string, k map[string]any) error {
	var globals types.HelmGlobals
	if v := lookup(k, "helmGlobals"); len(v) > 0 && v[0] != nil {
		if err := recode(v[0], &globals); err != nil {
			return &RefusedError{File: file, Field: "helmGlobals", Entry: summary(v[0]), Problem: "is not a helmGlobals mapping: " + err.Error(), Fix: "write helmGlobals: {chartHome: charts}"}
		}
	}
	dir := path.Dir(file)
	home := globals.ChartHome
	if home == "" {
		home = types.HelmDefaultHome
	}
	homeDir, err := g.local(file, "helmGlobals.chartHome", home)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for i, entry := range mappingsOf(lookup(k, "helmCharts")) {
		var c types.HelmChart
		if err := recode(entry, &c); err != nil {
			return &RefusedError{File: file, Field: "helmCharts", Entry: summary(entry), Problem: "is not a helmCharts entry: " + err.Error(), Fix: "fix the entry"}
		}
		field := fmt.Sprintf("helmCharts[%d]", i)
		switch {
		case c.Repo != "":
			return &RefusedError{File: file, Field: "helmCharts", Entry: c.Name + " from " + c.Repo,
				Problem: "names a chart repository; kdrift fetches nothing while rendering", Fix: fixHelmRepo}
		case c.Name == "" || strings.Contains(c.Name, "/") || c.Name == "." || c.Name == "..":
			return &RefusedError{File: file, Field: field, Entry: c.Name, Problem: "does not name a chart folder under the chart home", Fix: "set name: to the chart's folder under " + home}
		}
		chartDir := path.Join(homeDir, c.Name)
		if !IsChart(g.fsys.tree, chartDir) {
			return &RefusedError{File: file, Field: field, Entry: c.Name, Problem: fmt.Sprintf("%s has no %s at this revision, and kdrift fetches nothing", chartDir, ChartFile), Fix: fixHelmRepo}
		}
		h := &Helm{ReleaseName: c.ReleaseName, Namespace: c.Namespace, KubeVersion: c.KubeVersion, APIVersions: c.ApiVersions, skipCRDs: !c.IncludeCRDs}
		if h.ReleaseName == "" {
			// helm would generate a random name: a new drift each render.
			h.ReleaseName = c.Name
		}
		var files []string
		if c.ValuesFile != "" {
			p, err := g.local(file, field+".valuesFile", c.ValuesFile)
			if err != nil {
				return err
			}
			files = append(files, "/"+p)
		}
		for _, f := range c.AdditionalValuesFiles {
			p, err := g.local(file, field+".additionalValuesFiles", f)
			if err != nil {
				return err
			}
			files = append(files, "/"+p)
		}
		switch c.ValuesMerge {
		case "", "override":
			h.ValueFiles, h.ValuesObject = files, c.ValuesInline
		case "merge":
			h.ValueFiles, h.ValuesObject, h.inlineFirst = files, c.ValuesInline, true
		case "replace":
			h.ValueFiles, h.ValuesObject = files[min(len(files), boolInt(c.ValuesFile != "")):], c.ValuesInline
		default:
			return &RefusedError{File: file, Field: field + ".valuesMerge", Entry: c.ValuesMerge, Problem: "is not override, merge or replace", Fix: "use one of them"}
		}
		objs, err := renderChart(g.fsys, chartDir, h)
		if err != nil {
			return fmt.Errorf("%s: %s (chart %s): %w", file, field, c.Name, err)
		}
		if c.SkipHooks || c.SkipTests {
			objs = withoutHelmHooks(objs)
		}
		for _, o := range objs {
			js, err := yaml.Marshal(o.Object)
			if err != nil {
				return fmt.Errorf("%s: %s (chart %s): %s/%s: %w", file, field, c.Name, o.GetKind(), o.GetName(), err)
			}
			out.WriteString("---\n")
			out.Write(js)
		}
	}
	// The kustomization without its Helm fields, listing the output last.
	rendered := path.Join(dir, ".kdrift-helmcharts.yaml")
	rest := map[string]any{}
	var resources []any
	for key, v := range k {
		switch {
		case strings.EqualFold(key, "helmCharts"), strings.EqualFold(key, "helmGlobals"):
		case strings.EqualFold(key, "resources"):
			if l, ok := v.([]any); ok {
				resources = append(resources, l...)
			}
		default:
			rest[key] = v
		}
	}
	rest["resources"] = append(resources, path.Base(rendered))
	kdata, err := yaml3.Marshal(rest)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if g.fsys.virtual == nil {
		g.fsys.virtual = map[string][]byte{}
	}
	g.fsys.virtual[file] = kdata
	g.fsys.virtual[rendered] = out.Bytes()
	return nil
}

// recode decodes v (YAML decoded into maps) into out through JSON, as
// kustomize reads its kustomization.
func recode(v any, out any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(js, out)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
