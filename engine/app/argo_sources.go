package app

import (
	"fmt"
	"path"
	"strings"
)

// argoSources reads an Application's spec.sources, where every source is
// this repository: the one source with a path is the app (returned with
// its field name), and the ref sources name this repository's root for
// its helm.valueFiles ($values/x/values.yaml becomes /x/values.yaml, a
// file kdrift reads from the same tree). One source may instead be a
// chart of a Helm repository or an OCI registry (the usual pairing of a
// remote chart with values kept in Git); a folder of another repository
// is a problem that says exactly what kdrift would have to fetch.
func argoSources(sources []any, same func(string) bool) (map[string]any, string, *problem) {
	refs := map[string]bool{}
	var src map[string]any
	field := ""
	for i, e := range sources {
		f := fmt.Sprintf("spec.sources[%d]", i)
		s, ok := e.(map[string]any)
		if !ok {
			return nil, "", &problem{f, "is not a mapping", "give repoURL, path or ref"}
		}
		repoURL, _ := s["repoURL"].(string)
		chart, _ := s["chart"].(string)
		if chart != "" {
			// A chart of a Helm repository or an OCI registry, rendered
			// with values this repository's ref sources hold.
			if src != nil {
				return nil, "", &problem{f + ".chart", fmt.Sprintf("is a second thing to render (after %s); kdrift renders one chart or folder per app", field),
					"split the Application into one per chart, or declare the apps in " + Dir + "/"}
			}
			src, field = s, f
			continue
		}
		if same == nil || !same(repoURL) {
			return nil, "", &problem{f + ".repoURL", fmt.Sprintf("names another repository (%s), which kdrift cannot fetch yet (it reads this repository only)", repoURL),
				"keep every source of the app in this repository, or declare the app in " + Dir + "/"}
		}
		if ref, _ := s["ref"].(string); ref != "" {
			refs[ref] = true
		}
		if p, _ := s["path"].(string); strings.TrimSpace(p) != "" {
			if src != nil {
				return nil, "", &problem{f + ".path", fmt.Sprintf("is a second folder to render (after %s); kdrift renders one folder per app", field),
					"split the Application into one per folder, or declare the apps in " + Dir + "/"}
			}
			src, field = s, f
		}
	}
	if src == nil {
		return nil, "", &problem{"spec.sources", "has no source with a path or a chart, so nothing is rendered", "give the source to render a path or a chart"}
	}
	h, ok := src["helm"].(map[string]any)
	if !ok {
		return src, field, nil
	}
	files, _ := h["valueFiles"].([]any)
	rewritten := make([]any, len(files))
	for i, v := range files {
		s, _ := v.(string)
		rewritten[i] = s
		if !strings.HasPrefix(s, "$") {
			continue
		}
		ref, rest, _ := strings.Cut(strings.TrimPrefix(s, "$"), "/")
		if !refs[ref] {
			return nil, "", &problem{fmt.Sprintf("%s.helm.valueFiles[%d]", field, i), fmt.Sprintf("%q names ref %q, which no source of spec.sources declares", s, ref),
				"add a source with ref: " + ref + " for this repository, or fix the name"}
		}
		clean := path.Clean("/" + rest)
		if rest == "" || clean == "/" {
			return nil, "", &problem{fmt.Sprintf("%s.helm.valueFiles[%d]", field, i), fmt.Sprintf("%q names no file", s), "write $" + ref + "/PATH/values.yaml"}
		}
		rewritten[i] = clean
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
	return out, field, nil
}
