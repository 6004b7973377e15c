package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	yaml3 "gopkg.in/yaml.v3"

	"kdrift.dev/kdrift/engine/render"
)

// ArgoAPIVersion is the apiVersion of Argo CD Applications.
const ArgoAPIVersion = "argoproj.io/v1alpha1"

// ArgoNamespace is the namespace an Application that names none lives in:
// Argo CD's own.
const ArgoNamespace = "argocd"

// InClusterServer is the destination server Argo CD calls its own
// cluster; kdrift reads it as the current kubeconfig context.
const InClusterServer = "https://kubernetes.default.svc"

// argoApplication is the part of an Application kdrift reads.
type argoApplication struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec argoSpec `json:"spec"`
}

// argoSpec is the part of an Application's spec kdrift reads.
type argoSpec struct {
	Project     string         `json:"project"`
	Source      map[string]any `json:"source"`
	Sources     []any          `json:"sources"`
	Destination struct {
		Server    string `json:"server"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"destination"`
	SyncPolicy *struct {
		Automated *struct {
			Enabled  *bool `json:"enabled"`
			SelfHeal bool  `json:"selfHeal"`
			Prune    bool  `json:"prune"`
		} `json:"automated"`
	} `json:"syncPolicy"`
	IgnoreDifferences []IgnoreRule `json:"ignoreDifferences"`
}

// argoHelmFields are the source.helm fields kdrift maps into Spec.Helm;
// the rest change the output in ways kdrift does not follow.
var argoHelmFields = map[string]bool{"releaseName": true, "valueFiles": true, "values": true, "valuesObject": true, "parameters": true, "version": true, "passCredentials": true, "ignoreMissingValueFiles": false}

// argoDirectoryFields are the source.directory fields kdrift maps.
var argoDirectoryFields = map[string]bool{"recurse": true, "include": true, "exclude": true, "jsonnet": true}

// argoDirectory is an Application's source.directory.
type argoDirectory struct {
	Recurse bool            `json:"recurse"`
	Include string          `json:"include"`
	Exclude string          `json:"exclude"`
	Jsonnet *render.Jsonnet `json:"jsonnet"`
}

// argoBuildEnv are the build environment variables Argo CD substitutes in
// Jsonnet variables that kdrift cannot know: a render of a folder is
// shared by every revision whose folder is the same.
var argoBuildEnv = []string{"ARGOCD_APP_REVISION", "ARGOCD_APP_REVISION_SHORT", "ARGOCD_APP_REVISION_SHORT_8"}

// argoEnvsubst substitutes $VAR and ${VAR} in a Jsonnet variable's value as
// Argo CD does ($$ is a dollar; an unknown variable is empty), or says
// which variable kdrift cannot substitute.
func argoEnvsubst(s, app, namespace, project, appPath, repoURL, target string) (string, string) {
	env := map[string]string{
		"ARGOCD_APP_NAME": app, "ARGOCD_APP_NAMESPACE": namespace, "ARGOCD_APP_PROJECT_NAME": project,
		"ARGOCD_APP_SOURCE_PATH": appPath, "ARGOCD_APP_SOURCE_REPO_URL": repoURL, "ARGOCD_APP_SOURCE_TARGET_REVISION": target,
	}
	problem := ""
	out := os.Expand(s, func(v string) string {
		if v == "$" {
			return "$"
		}
		if slices.Contains(argoBuildEnv, v) && problem == "" {
			problem = fmt.Sprintf("$%s is the commit Argo CD renders, which kdrift does not pass to Jsonnet", v)
		}
		return env[v]
	})
	return out, problem
}

// targetRevision is source.targetRevision, or "".
func targetRevision(src map[string]any) string {
	t, _ := src["targetRevision"].(string)
	return t
}

// argoApp maps one Application document into an App, or says what kdrift
// cannot follow in it.
func argoApp(fsys fs.FS, body *yaml3.Node, file string, doc, line int, generatedBy, from string, opts DiscoverOptions) found {
	ns, name := metaOf(body, ArgoNamespace)
	f := found{kind: "Application", ns: ns, name: name}
	origin := &Origin{Engine: EngineArgoCD, Kind: "Application", Namespace: ns, Name: name, File: file, Doc: doc, GeneratedBy: generatedBy, GeneratedFrom: from}
	shown := file
	if file == "" {
		shown = origin.Where()
	}
	bad := func(field, problem, fix string) found {
		f.invalid = &Invalid{Name: name, File: shown, Err: &Error{File: shown, Doc: doc, Line: line, App: name, Field: field,
			Problem: problem, Fix: fix}}
		return f
	}
	if name == "" {
		return bad("metadata.name", "is missing", "name the Application")
	}
	var a argoApplication
	if err := decodeNode(body, &a); err != nil {
		return bad("", "cannot be read as an Argo CD Application: "+err.Error(), "fix the document")
	}
	s := a.Spec
	src, sourceIndex := "spec.source", -1
	switch {
	case len(s.Sources) > 0:
		one, field, index, p := argoSources(s.Sources, opts.SameRepo)
		if p != nil {
			return bad(p.field, p.problem, p.fix)
		}
		s.Source, src, sourceIndex = one, field, index
	case s.Source == nil:
		return bad(src, "is missing", "give spec.source with repoURL and path")
	}
	repoURL, _ := s.Source["repoURL"].(string)
	out := App{APIVersion: APIVersion, Kind: Kind, File: file, Origin: origin}
	out.Metadata.Name = name
	if c, _ := s.Source["chart"].(string); c != "" {
		// A chart from a Helm repository or an OCI registry: fetched by
		// the engine from a location an Argo CD repository Secret or
		// --chart-repo allows, never because this file names it.
		for _, k := range []string{"kustomize", "directory", "plugin"} {
			if _, ok := s.Source[k]; ok {
				return bad(src+"."+k, "is set on a chart source, which Argo CD renders with Helm only", "remove it")
			}
		}
		out.Spec.Chart = &RemoteChart{RepoURL: argoChartRepo(repoURL), Chart: c, Version: targetRevision(s.Source), ArgoSource: sourceIndex + 1}
		out.Spec.Path = RemoteChartPath("Application", ns, name)
		h, p := argoHelm(s.Source, src)
		if p != nil {
			return bad(p.field, p.problem, p.fix)
		}
		out.Spec.Helm = h
		return argoFinish(f, out, a, s, fsys, shown, opts, bad)
	}
	if opts.SameRepo == nil || !opts.SameRepo(repoURL) {
		return bad(src+".repoURL", "names another repository, which kdrift does not read (it renders this repository only)", "open kdrift on that repository")
	}
	if _, ok := s.Source["plugin"]; ok {
		return bad(src+".plugin", "config management plugins run programs, which kdrift never does", "render the manifests into the repository, or declare the app in "+Dir+"/")
	}
	origin.Follows = strings.TrimSpace(targetRevision(s.Source))
	p, _ := s.Source["path"].(string)
	if strings.TrimSpace(p) == "" {
		return bad(src+".path", "is missing", "give the folder to render")
	}
	out.Spec.Path = path.Clean(strings.TrimPrefix(p, "/"))
	if err := checkPath(out.Spec.Path, fsys); err != nil {
		return bad(src+".path", err.problem, err.fix)
	}
	h, hp := argoHelm(s.Source, src)
	if hp != nil {
		return bad(hp.field, hp.problem, hp.fix)
	}
	out.Spec.Helm = h
	if k, ok := s.Source["kustomize"].(map[string]any); ok {
		ov, p := argoOverlay(k, fsys, out.Spec.Path)
		if p != nil {
			return bad(p.field, p.problem, p.fix)
		}
		out.Spec.Overlay = ov
	}
	if dir, ok := s.Source["directory"].(map[string]any); ok {
		if field := unknownKey(dir, argoDirectoryFields); field != "" {
			return bad(src+".directory."+field, "is not supported by kdrift", "remove it, or declare the app in "+Dir+"/")
		}
		var d argoDirectory
		if err := remarshal(dir, &d); err != nil {
			return bad(src+".directory", "cannot be read: "+err.Error(), "fix the directory source")
		}
		if built(fsys, out.Spec.Path) && (d.Recurse || d.Include != "" || d.Exclude != "" || d.Jsonnet != nil) {
			// Argo CD reads a folder as a plain directory when
			// source.directory says something, kustomization or not.
			return bad(src+".directory", fmt.Sprintf("makes Argo CD read %s as a plain folder, but it holds a kustomization or a chart, which kdrift renders as such", out.Spec.Path), "remove spec.source.directory, or point the path at a plain folder")
		}
		if d.Jsonnet != nil {
			for _, list := range [][]render.JsonnetVar{d.Jsonnet.ExtVars, d.Jsonnet.TLAs} {
				for i := range list {
					v, problem := argoEnvsubst(list[i].Value, name, s.Destination.Namespace, s.Project, out.Spec.Path, repoURL, targetRevision(s.Source))
					if problem != "" {
						return bad(src+".directory.jsonnet", problem, "pass the value without it, or declare the app in "+Dir+"/")
					}
					list[i].Value = v
				}
			}
			out.Spec.Jsonnet = d.Jsonnet
		}
		recurse := d.Recurse
		out.Spec.Directory = &Directory{Recurse: &recurse, Include: d.Include, Exclude: d.Exclude}
	} else {
		// Argo CD reads a folder's own files only unless told to recurse.
		recurse := false
		out.Spec.Directory = &Directory{Recurse: &recurse}
	}
	if !built(fsys, out.Spec.Path) {
		a := App{File: file, Spec: out.Spec}
		a.Metadata.Name = name
		if errs := validateDirectory(a, fsys, src+".directory", src+".directory.jsonnet", func(field, problem, fix string) error {
			return &Error{File: shown, Doc: doc, Line: line, App: name, Field: field, Problem: problem, Fix: fix}
		}); len(errs) > 0 {
			f.invalid = &Invalid{Name: name, File: shown, Err: errs[0]}
			return f
		}
	} else {
		out.Spec.Directory = nil
	}
	return argoFinish(f, out, a, s, fsys, shown, opts, bad)
}

// argoHelm reads a source's helm settings (field src), nil without them.
func argoHelm(source map[string]any, src string) (*Helm, *problem) {
	h, ok := source["helm"].(map[string]any)
	if !ok {
		return nil, nil
	}
	if field := unknownKey(h, argoHelmFields); field != "" {
		return nil, &problem{src + ".helm." + field, "is not supported by kdrift", "remove it, or declare the app in " + Dir + "/"}
	}
	var helm Helm
	if err := remarshal(h, &helm); err != nil {
		return nil, &problem{src + ".helm", "cannot be read: " + err.Error(), "fix the helm source"}
	}
	return &helm, nil
}

// argoChartRepo is an Argo CD chart source's repoURL as a location: an
// OCI registry is written without a scheme ("ghcr.io/org/charts").
func argoChartRepo(u string) string {
	if u != "" && !strings.Contains(u, "://") {
		return "oci://" + u
	}
	return u
}

// argoFinish maps an Application's destination, sync policy and ignore
// rules onto out.
func argoFinish(f found, out App, a argoApplication, s argoSpec, fsys fs.FS, shown string, opts DiscoverOptions, bad func(field, problem, fix string) found) found {
	origin := out.Origin
	switch d := s.Destination; {
	case d.Name == "in-cluster" || (d.Name == "" && strings.TrimRight(d.Server, "/") == InClusterServer) || (d.Name == "" && d.Server == ""):
	case d.Server == "" || strings.TrimRight(d.Server, "/") == InClusterServer:
		out.Spec.Destination.Context = d.Name
	default:
		ctx, p := contextOf(d.Server, d.Name, opts.Clusters, opts.ClustersErr)
		if p != nil {
			return bad(p.field, p.problem, p.fix)
		}
		out.Spec.Destination.Context = ctx
	}
	out.Spec.Destination.Namespace = s.Destination.Namespace
	if sp := s.SyncPolicy; sp != nil && sp.Automated != nil && (sp.Automated.Enabled == nil || *sp.Automated.Enabled) {
		out.Spec.SyncPolicy.SelfHeal = sp.Automated.SelfHeal
		out.Spec.SyncPolicy.Prune = sp.Automated.Prune
	}
	origin.SkipReconcile = a.Metadata.Annotations["argocd.argoproj.io/skip-reconcile"] == "true"
	if origin.SkipReconcile {
		// Argo CD leaves the Application alone: nothing heals it.
		out.Spec.SyncPolicy.SelfHeal, out.Spec.SyncPolicy.Prune = false, false
	}
	origin.Heals = out.Spec.SyncPolicy.SelfHeal
	out.Spec.IgnoreDifferences = s.IgnoreDifferences
	return finish(f, out, a.Metadata.Annotations, fsys, shown, bad)
}

// finish reads the freeze kdrift wrote into a declaration's annotations
// and checks the App's ignore rules: f becomes the App, or why not.
func finish(f found, out App, ann map[string]string, fsys fs.FS, shown string, bad func(field, problem, fix string) found) found {
	fr, err := freezeOf(ann)
	if err != nil {
		return bad("metadata.annotations", err.Error(), "unfreeze and freeze again with kdrift")
	}
	out.Spec.Freeze = fr
	if errs := checkRules(out, fsys); len(errs) > 0 {
		f.invalid = &Invalid{Name: f.name, File: shown, Err: errs[0]}
		return f
	}
	f.app = &out
	return f
}

// checkRules validates an App's ignore rules and path the way Validate
// does, without its name rules (a declaration's name is the other
// engine's).
func checkRules(a App, fsys fs.FS) []error {
	var out []error
	for _, err := range Validate(a, fsys) {
		var e *Error
		if errors.As(err, &e) && (e.Field == "metadata.name" || e.Field == "spec.path" || e.Field == "spec.destination.namespace") {
			continue
		}
		out = append(out, err)
	}
	return out
}

// unknownKey is the first key of m (sorted) that allowed does not list as
// true; "" when there is none.
func unknownKey(m map[string]any, allowed map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !allowed[k] {
			return k
		}
	}
	return ""
}

// decodeNode decodes a YAML node into v through JSON, so that v's json
// tags apply.
func decodeNode(n *yaml3.Node, v any) error {
	var m any
	if err := n.Decode(&m); err != nil {
		return err
	}
	return remarshal(m, v)
}

// remarshal converts a decoded YAML value into v through JSON.
func remarshal(m any, v any) error {
	js, err := json.Marshal(jsonable(m))
	if err != nil {
		return err
	}
	return json.Unmarshal(js, v)
}

// jsonable turns yaml.v3's map[any]any (from non-string keys) into
// map[string]any.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonable(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}
