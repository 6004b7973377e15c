package app

import (
	"fmt"
	"path"
	"strings"
)

// argoSources reads an Application's spec.sources. Exactly one source is
// rendered: a folder of this repository (path) or a chart of a Helm
// repository or an OCI registry (chart), returned with its field name and
// index. The ref sources a values file reads must be this repository
// (another repository's is ignored otherwise): they name its root for
// the rendered source's helm.valueFiles ($values/x/values.yaml becomes
// /x/values.yaml, a file kdrift reads from the same tree, the way a
// chart folder of the repository reads it). Argo CD renders every source
// and concatenates them; an app of kdrift renders one chart or folder, so
// a second one is a problem that names both.
func argoSources(sources []any, same func(string) bool) (map[string]any, string, int, *problem) {
	refs := map[string]bool{}
	foreign := map[string]*problem{}
	var src map[string]any
	field, index := "", -1
	for i, e := range sources {
		f := fmt.Sprintf("spec.sources[%d]", i)
		s, ok := e.(map[string]any)
		if !ok {
			return nil, "", 0, &problem{f, "is not a mapping", "give repoURL, path or ref"}
		}
		repoURL, _ := s["repoURL"].(string)
		chart, _ := s["chart"].(string)
		p, _ := s["path"].(string)
		ref, _ := s["ref"].(string)
		switch {
		case chart != "":
			// A chart of a Helm repository or an OCI registry, rendered
			// with values this repository's ref sources hold.
			if src != nil {
				return nil, "", 0, &problem{f + ".chart", fmt.Sprintf("is a second thing to render (after %s); Argo CD renders each source and concatenates them, kdrift renders one chart or folder per app", field),
					"split the Application into one per chart, or declare the apps in " + Dir + "/"}
			}
			src, field, index = s, f, i
			continue
		case strings.TrimSpace(p) == "" && ref == "":
			return nil, "", 0, &problem{f, "has no path, chart or ref, so kdrift cannot tell what Argo CD renders from it", "give the folder to render in path, or remove the source"}
		case same == nil || !same(repoURL):
			if strings.TrimSpace(p) == "" {
				// A ref of another repository: an error only when a
				// values file reads through it.
				foreign[ref] = &problem{f + ".repoURL", fmt.Sprintf("is ref %q of another repository (%s); kdrift reads $%s value files from this repository only", ref, repoURL, ref),
					"keep the value files in this repository, or declare the app in " + Dir + "/"}
				continue
			}
			return nil, "", 0, &problem{f + ".repoURL", fmt.Sprintf("names another repository (%s), which kdrift cannot fetch yet (it reads this repository only)", repoURL),
				"keep every source of the app in this repository, or declare the app in " + Dir + "/"}
		}
		if ref != "" {
			refs[ref] = true
		}
		if strings.TrimSpace(p) != "" {
			if src != nil {
				return nil, "", 0, &problem{f + ".path", fmt.Sprintf("is a second folder to render (after %s); Argo CD renders each source and concatenates them, kdrift renders one chart or folder per app", field),
					"split the Application into one per folder, or declare the apps in " + Dir + "/"}
			}
			src, field, index = s, f, i
		}
	}
	if src == nil {
		return nil, "", 0, &problem{"spec.sources", "has no source with a path or a chart, so nothing is rendered", "give the source to render a path or a chart"}
	}
	h, ok := src["helm"].(map[string]any)
	if !ok {
		return src, field, index, nil
	}
	files, _ := h["valueFiles"].([]any)
	rewritten := make([]any, len(files))
	for i, v := range files {
		s, _ := v.(string)
		rewritten[i] = s
		if !strings.HasPrefix(s, "$") {
			continue
		}
		vf := fmt.Sprintf("%s.helm.valueFiles[%d]", field, i)
		ref, rest, _ := strings.Cut(strings.TrimPrefix(s, "$"), "/")
		if p := foreign[ref]; p != nil && !refs[ref] {
			return nil, "", 0, p
		}
		if !refs[ref] {
			return nil, "", 0, &problem{vf, fmt.Sprintf("%q names ref %q, which no source of spec.sources declares", s, ref),
				"add a source with ref: " + ref + " for this repository, or fix the name"}
		}
		clean := path.Clean(rest)
		switch {
		case rest == "" || clean == "." || clean == "/":
			return nil, "", 0, &problem{vf, fmt.Sprintf("%q names no file", s), "write $" + ref + "/PATH/values.yaml"}
		case clean == ".." || strings.HasPrefix(clean, "../"):
			// Argo CD refuses a values file outside the ref's
			// repository; kdrift never reads outside the tree.
			return nil, "", 0, &problem{vf, fmt.Sprintf("%q leaves the repository of ref %q", s, ref), "name a file inside the repository: $" + ref + "/PATH/values.yaml"}
		}
		rewritten[i] = "/" + strings.TrimPrefix(clean, "/")
	}
	out := map[string]any{}
	for k, v := range src {
		out[k] = v
	}
	hc := map[string]any{}
	for k, v := range h {
		hc[k] = v
	}
	if files != nil {
		hc["valueFiles"] = rewritten
	}
	out["helm"] = hc
	return out, field, index, nil
}
