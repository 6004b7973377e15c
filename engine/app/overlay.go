package app

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"kdrift.dev/kdrift/engine/render"
)

// problem is why a declaration's field cannot be followed: the field
// (under the declaration's spec), what is wrong and what to do.
type problem struct{ field, problem, fix string }

// argoKustomizeFields are the source.kustomize fields kdrift follows;
// version names a kustomize binary, and kdrift builds with its own.
var argoKustomizeFields = map[string]bool{"version": true, "namePrefix": true, "nameSuffix": true, "images": true, "replicas": true,
	"commonLabels": true, "forceCommonLabels": true, "labelWithoutSelector": true, "labelIncludeTemplates": true,
	"commonAnnotations": true, "forceCommonAnnotations": true, "commonAnnotationsEnvsubst": true, "namespace": true,
	"patches": true, "components": true, "ignoreMissingComponents": true}

// argoKustomize is Argo CD's ApplicationSourceKustomize.
type argoKustomize struct {
	NamePrefix                string            `json:"namePrefix"`
	NameSuffix                string            `json:"nameSuffix"`
	Images                    []string          `json:"images"`
	Replicas                  []argoReplica     `json:"replicas"`
	CommonLabels              map[string]string `json:"commonLabels"`
	ForceCommonLabels         bool              `json:"forceCommonLabels"`
	LabelWithoutSelector      bool              `json:"labelWithoutSelector"`
	LabelIncludeTemplates     bool              `json:"labelIncludeTemplates"`
	CommonAnnotations         map[string]string `json:"commonAnnotations"`
	ForceCommonAnnotations    bool              `json:"forceCommonAnnotations"`
	CommonAnnotationsEnvsubst bool              `json:"commonAnnotationsEnvsubst"`
	Namespace                 string            `json:"namespace"`
	Patches                   []types.Patch     `json:"patches"`
	Components                []string          `json:"components"`
	IgnoreMissingComponents   bool              `json:"ignoreMissingComponents"`
}

// argoReplica is one replicas override; Argo CD takes the count as a
// number or a string of digits.
type argoReplica struct {
	Name  string `json:"name"`
	Count any    `json:"count"`
}

// argoOverlay maps source.kustomize (k) of an app at dir into the
// overlay Argo CD applies with `kustomize edit`; nil when it changes
// nothing.
func argoOverlay(k map[string]any, fsys fs.FS, dir string) (*render.Overlay, *problem) {
	const at = "spec.source.kustomize."
	if field := unknownKey(k, argoKustomizeFields); field != "" {
		return nil, &problem{at + field, "is not followed by kdrift", "remove it, or declare the app in " + Dir + "/"}
	}
	var a argoKustomize
	if err := remarshal(k, &a); err != nil {
		return nil, &problem{"spec.source.kustomize", "cannot be read: " + err.Error(), "fix the kustomize source"}
	}
	o := &render.Overlay{Style: render.ArgoCD, NamePrefix: a.NamePrefix, NameSuffix: a.NameSuffix, Namespace: a.Namespace,
		CommonLabels: a.CommonLabels, ForceCommonLabels: a.ForceCommonLabels, LabelWithoutSelector: a.LabelWithoutSelector,
		LabelIncludeTemplates: a.LabelIncludeTemplates, CommonAnnotations: a.CommonAnnotations, ForceCommonAnnotations: a.ForceCommonAnnotations,
		Patches: a.Patches}
	// Argo CD expands its build environment ($ARGOCD_APP_NAME, ...) in
	// these; kdrift has none of it, so a value that uses it is refused
	// rather than rendered differently.
	envsubst := func(field, v string) *problem {
		if strings.Contains(v, "$") {
			return &problem{at + field, fmt.Sprintf("%q uses Argo CD's build environment ($ARGOCD_APP_...), which kdrift does not have", v), "write the value out, or declare the app in " + Dir + "/"}
		}
		return nil
	}
	for i, s := range a.Images {
		if p := envsubst(fmt.Sprintf("images[%d]", i), s); p != nil {
			return nil, p
		}
		im, err := parseArgoImage(s)
		if err != nil {
			return nil, &problem{fmt.Sprintf("%simages[%d]", at, i), err.Error(), "write NAME=NEWNAME:TAG, NAME:TAG or NAME@DIGEST"}
		}
		o.Images = append(o.Images, im)
	}
	for k, v := range a.CommonLabels {
		if p := envsubst("commonLabels."+k, v); p != nil {
			return nil, p
		}
	}
	if a.CommonAnnotationsEnvsubst {
		for k, v := range a.CommonAnnotations {
			if p := envsubst("commonAnnotations."+k, v); p != nil {
				return nil, p
			}
		}
	}
	for i, r := range a.Replicas {
		n, ok := replicaCount(r.Count)
		if !ok || r.Name == "" {
			return nil, &problem{fmt.Sprintf("%sreplicas[%d]", at, i), fmt.Sprintf("name %q count %v is not a name and a count of replicas", r.Name, r.Count), "write {name: DEPLOYMENT, count: 3}"}
		}
		o.Replicas = append(o.Replicas, types.Replica{Name: r.Name, Count: n})
	}
	for i, p := range a.Patches {
		if (p.Patch == "") == (p.Path == "") {
			return nil, &problem{fmt.Sprintf("%spatches[%d]", at, i), "needs one of patch and path", "give the patch inline, or the path of a file beside the kustomization"}
		}
	}
	for _, c := range a.Components {
		if a.IgnoreMissingComponents {
			if _, err := fs.Stat(fsys, path.Join(dir, c)); err != nil && !strings.HasPrefix(path.Join(dir, c), "..") {
				continue
			}
		}
		o.Components = append(o.Components, c)
	}
	if !overlayEdits(o) {
		return nil, nil
	}
	if !hasKustomization(fsys, dir) {
		return nil, &problem{"spec.source.kustomize", dir + " has no kustomization.yaml; Argo CD applies these overrides with `kustomize edit`, which needs one (Argo CD fails the same way)", "add a kustomization.yaml to " + dir + ", or remove the overrides"}
	}
	return o, nil
}

// fluxOverlay maps a Flux Kustomization's spec fields that change what
// is built into the overlay Flux's generator and post-build apply; nil
// when it has none.
func fluxOverlay(s fluxSpec, fsys fs.FS, dir string) (*render.Overlay, *problem) {
	o := &render.Overlay{Style: render.Flux, NamePrefix: s.NamePrefix, NameSuffix: s.NameSuffix}
	for i, c := range s.Components {
		if path.IsAbs(c) || strings.Contains(c, "://") {
			return nil, &problem{fmt.Sprintf("spec.components[%d]", i), fmt.Sprintf("%q is not a local relative path (Flux refuses it too)", c), "name the component's folder relative to spec.path"}
		}
		if _, err := fs.Stat(fsys, path.Join(dir, c)); err != nil && s.IgnoreMissingComponents {
			continue
		}
		o.Components = append(o.Components, c)
	}
	var pr *problem
	if o.Patches, o.Images, pr = fluxKustomize("spec", s.Patches, s.Images); pr != nil {
		return nil, pr
	}
	if cm := s.CommonMetadata; cm != nil {
		o.MetadataLabels, o.MetadataAnnotations = cm.Labels, cm.Annotations
	}
	if pb := s.PostBuild; pb != nil {
		if len(pb.SubstituteFrom) > 0 {
			return nil, &problem{"spec.postBuild.substituteFrom", "takes variables from ConfigMaps and Secrets in the cluster, which kdrift does not read while rendering (a render reads nothing but the repository)", "move the variables into spec.postBuild.substitute, or declare the app in " + Dir + "/"}
		}
		if err := render.CheckSubstitute(pb.Substitute); err != nil {
			return nil, &problem{"spec.postBuild.substitute", err.Error(), "rename the variable"}
		}
		o.Substitute = pb.Substitute
	}
	if !overlayEdits(o) && len(o.Substitute) == 0 && len(o.MetadataLabels) == 0 && len(o.MetadataAnnotations) == 0 {
		if nestedKustomization(fsys, dir) {
			// Flux generates the folder's kustomization: a subfolder
			// with its own is one resource, built, not plain files.
			return &render.Overlay{Style: render.Flux, Namespace: s.TargetNamespace}, nil
		}
		return nil, nil
	}
	// Flux's generator sets the kustomization's namespace too.
	o.Namespace = s.TargetNamespace
	return o, nil
}

// nestedKustomization reports whether dir holds no kustomization file
// and a folder below it does: read as plain files, that folder's
// kustomization and its configurations would be taken for manifests,
// where Flux's generated kustomization lists the folder as one resource.
//
// A repository is untrusted and many Kustomizations may name one large
// folder, so at most maxNestedFolders folders are looked at; past that
// the folder is taken to hold one, and the render, which generates the
// kustomization within its own budgets, says what it finds.
func nestedKustomization(fsys fs.FS, dir string) bool {
	if hasKustomization(fsys, dir) {
		return false
	}
	found, folders := false, 0
	_ = fs.WalkDir(fsys, dir, func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return fs.SkipDir
		case name == dir || !d.IsDir():
			return nil
		}
		if folders++; folders > maxNestedFolders || hasKustomization(fsys, name) {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// maxNestedFolders bounds the folders nestedKustomization looks at.
const maxNestedFolders = 10_000

// overlayEdits reports whether o edits the kustomization.
func overlayEdits(o *render.Overlay) bool {
	return o.NamePrefix != "" || o.NameSuffix != "" || o.Namespace != "" || len(o.Images) > 0 || len(o.Replicas) > 0 ||
		len(o.CommonLabels) > 0 || len(o.CommonAnnotations) > 0 || len(o.Patches) > 0 || len(o.Components) > 0
}

// kustomizationFiles are the names kustomize reads a folder's
// kustomization from.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// hasKustomization reports whether dir holds a kustomization file.
func hasKustomization(fsys fs.FS, dir string) bool {
	for _, n := range kustomizationFiles {
		if st, err := fs.Stat(fsys, path.Join(dir, n)); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}

// replicaCount reads a replicas count written as a number or a string of
// digits.
func replicaCount(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n < 0 || n != float64(int64(n)) {
			return 0, false
		}
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil && i >= 0
	}
	return 0, false
}

// parseArgoImage reads an image override as `kustomize edit set image`
// takes it: NAME=NEWNAME[:TAG|@DIGEST], or NAME[:TAG|@DIGEST] for a new
// tag or digest only.
func parseArgoImage(s string) (types.Image, error) {
	if s == "" {
		return types.Image{}, fmt.Errorf("is empty")
	}
	old, repl, renamed := strings.Cut(s, "=")
	if !renamed {
		repl = s
	}
	name, tag, digest := splitImage(repl)
	im := types.Image{NewTag: tag, Digest: digest}
	if renamed {
		im.Name, im.NewName = old, name
	} else {
		im.Name = name
	}
	if im.Name == "" || (renamed && im.NewName == "") {
		return types.Image{}, fmt.Errorf("%q names no image", s)
	}
	return im, nil
}

// splitImage splits NAME[:TAG][@DIGEST]; a colon before the last slash is
// a registry's port, not a tag.
func splitImage(s string) (name, tag, digest string) {
	if i := strings.Index(s, "@"); i >= 0 {
		return s[:i], "", s[i+1:]
	}
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		return s[:i], s[i+1:], ""
	}
	return s, "", ""
}
