package render

import (
	"fmt"
	"io/fs"
	"maps"

	"path"
	"slices"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
)

// OverlayStyle says whose semantics an Overlay follows.
type OverlayStyle string

// Overlay styles.
const (
	// ArgoCD edits the folder's kustomization as Argo CD does with
	// `kustomize edit` before it builds: a folder without a
	// kustomization is an error, as it is for Argo CD.
	ArgoCD OverlayStyle = "argocd"
	// Flux edits the folder's kustomization as Flux's kustomize
	// generator does, first generating one that lists the folder's YAML
	// files when there is none.
	Flux OverlayStyle = "flux"
)

// MaxOverlayPatchBytes bounds one inline patch of an Overlay: a patch is
// untrusted input like any file of the repository, and no patch a person
// writes into an Application comes near it.
const MaxOverlayPatchBytes = 256 << 10

// Overlay is what another GitOps engine applies over an App's folder
// beyond the folder's own kustomization: Argo CD's spec.source.kustomize
// or a Flux Kustomization's fields. It is applied to a copy of the
// kustomization held in memory, never to the repository, and the edited
// kustomization passes the same guard and budgets as one read from Git.
type Overlay struct {
	// Style is ArgoCD or Flux.
	Style OverlayStyle `json:"style"`
	// NamePrefix and NameSuffix replace the kustomization's own.
	NamePrefix string `json:"namePrefix,omitempty"`
	NameSuffix string `json:"nameSuffix,omitempty"`
	// Namespace replaces the kustomization's namespace.
	Namespace string `json:"namespace,omitempty"`
	// Images update the kustomization's entry of the same name (Argo CD
	// merges the fields given, Flux replaces the entry) or are added.
	Images []types.Image `json:"images,omitempty"`
	// Replicas replace the count of the entry of the same name, or are
	// added.
	Replicas []types.Replica `json:"replicas,omitempty"`
	// CommonLabels are added to commonLabels (labels and selectors), or,
	// with LabelWithoutSelector, as a labels entry that leaves selectors
	// alone (and templates too, unless LabelIncludeTemplates). A label
	// the kustomization already has is an error unless ForceCommonLabels.
	CommonLabels          map[string]string `json:"commonLabels,omitempty"`
	ForceCommonLabels     bool              `json:"forceCommonLabels,omitempty"`
	LabelWithoutSelector  bool              `json:"labelWithoutSelector,omitempty"`
	LabelIncludeTemplates bool              `json:"labelIncludeTemplates,omitempty"`
	// CommonAnnotations are added to commonAnnotations; one the
	// kustomization already has is an error unless ForceCommonAnnotations.
	CommonAnnotations      map[string]string `json:"commonAnnotations,omitempty"`
	ForceCommonAnnotations bool              `json:"forceCommonAnnotations,omitempty"`
	// Patches are appended to the kustomization's patches.
	Patches []types.Patch `json:"patches,omitempty"`
	// Components are added to the kustomization's components, relative
	// to the folder.
	Components []string `json:"components,omitempty"`
	// Substitute are Flux's postBuild variables: ${var} in every rendered
	// object is replaced, after the build (see Substitute).
	Substitute map[string]string `json:"substitute,omitempty"`
	// MetadataLabels and MetadataAnnotations are Flux's commonMetadata:
	// set on every rendered object's metadata, after substitution,
	// overriding what it has.
	MetadataLabels      map[string]string `json:"metadataLabels,omitempty"`
	MetadataAnnotations map[string]string `json:"metadataAnnotations,omitempty"`
}

// OverlayError is an Overlay kdrift cannot apply to a folder: a label the
// kustomization already has, a folder with no kustomization for Argo CD,
// a patch past its budget.
type OverlayError struct {
	// Field is the overlay's field, as the engine names it (namePrefix,
	// patches[2], ...).
	Field string
	// Problem says what is wrong.
	Problem string
	// Fix says what to do.
	Fix string
}

// Error renders `overlay FIELD: PROBLEM; FIX`.
func (e *OverlayError) Error() string {
	return "overlay " + e.Field + ": " + e.Problem + "; " + e.Fix
}

// edits reports whether the overlay changes the kustomization itself (and
// not only the rendered objects).
func (o *Overlay) edits() bool {
	return o.NamePrefix != "" || o.NameSuffix != "" || o.Namespace != "" || len(o.Images) > 0 || len(o.Replicas) > 0 ||
		len(o.CommonLabels) > 0 || len(o.CommonAnnotations) > 0 || len(o.Patches) > 0 || len(o.Components) > 0
}

// applyOverlay edits, in memory, the kustomization of dir as o says, or
// generates one for a Flux folder that has none. The result is served by
// fsys in place of the file in Git.
func applyOverlay(fsys *treeFS, dir string, o *Overlay) error {
	if o == nil || (!o.edits() && o.Style != Flux) {
		return nil
	}
	kname, err := kustomizationFile(fsys.tree, dir)
	if err != nil {
		return err
	}
	var k map[string]any
	file := path.Join(dir, kname)
	switch {
	case kname != "":
		data, err := fsys.ReadFile("/" + file)
		if err != nil {
			return err
		}
		if err := yaml3.Unmarshal(data, &k); err != nil {
			return &SyntaxError{File: file, Doc: 1, Err: err}
		}
		if k == nil {
			k = map[string]any{}
		}
	case o.Style == ArgoCD:
		return &OverlayError{Field: "kustomize", Problem: dir + " has no kustomization.yaml, and Argo CD applies kustomize overrides with `kustomize edit`, which needs one",
			Fix: "add a kustomization.yaml listing the folder's files, or remove spec.source.kustomize"}
	default:
		file = path.Join(dir, konfig.DefaultKustomizationFileName())
		if k, err = generateKustomization(fsys, dir); err != nil {
			return err
		}
	}
	if err := o.edit(k, fsys.opts); err != nil {
		return err
	}
	data, err := yaml3.Marshal(k)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if int64(len(data)) > fsys.opts.MaxFileBytes {
		return limitf(file, "file size", "the kustomization with the overlay comes to %d bytes, more than %d", len(data), fsys.opts.MaxFileBytes)
	}
	if fsys.virtual == nil {
		fsys.virtual = map[string][]byte{}
	}
	fsys.virtual[file] = data
	return nil
}

// generateKustomization is the kustomization Flux generates for a folder
// that has none: every .yaml and .yml file below it as a resource, and a
// subfolder holding a kustomization as one resource, not descended into.
func generateKustomization(fsys *treeFS, dir string) (map[string]any, error) {
	var resources []any
	err := fs.WalkDir(fsys.tree, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == dir {
			fsys.note(name)
			return nil
		}
		if d.IsDir() {
			fsys.note(name)
			kname, err := kustomizationFile(fsys.tree, name)
			if err != nil {
				return err
			}
			if kname != "" {
				resources = append(resources, "./"+strings.TrimPrefix(name, dir+"/"))
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if ext := path.Ext(name); ext == ".yaml" || ext == ".yml" {
			resources = append(resources, "./"+strings.TrimPrefix(name, dir+"/"))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	k := map[string]any{"apiVersion": types.KustomizationVersion, "kind": types.KustomizationKind, "resources": resources}
	if len(resources) == 0 {
		// As Flux does: kustomize refuses an empty kustomization.
		k["namespace"] = "_placeholder"
	}
	return k, nil
}

// edit applies o to the decoded kustomization k.
func (o *Overlay) edit(k map[string]any, opts Options) error {
	for _, f := range []struct{ key, value string }{{"namePrefix", o.NamePrefix}, {"nameSuffix", o.NameSuffix}, {"namespace", o.Namespace}} {
		if f.value != "" {
			setKey(k, f.key, f.value)
		}
	}
	if len(o.Images) > 0 {
		images := listOf(k, "images")
		for _, im := range o.Images {
			i := slices.IndexFunc(images, func(v any) bool { m, _ := v.(map[string]any); return m != nil && m["name"] == im.Name })
			if i < 0 {
				images = append(images, imageMap(im))
				continue
			}
			if o.Style == Flux {
				images[i] = imageMap(im)
				continue
			}
			// kustomize edit set image: the fields given win, and a tag
			// and a digest exclude each other.
			m := images[i].(map[string]any)
			if im.NewName != "" {
				m["newName"] = im.NewName
			}
			if im.NewTag != "" {
				m["newTag"] = im.NewTag
				delete(m, "digest")
			}
			if im.Digest != "" {
				m["digest"] = im.Digest
				delete(m, "newTag")
			}
		}
		setKey(k, "images", images)
	}
	if len(o.Replicas) > 0 {
		replicas := listOf(k, "replicas")
		for _, r := range o.Replicas {
			i := slices.IndexFunc(replicas, func(v any) bool { m, _ := v.(map[string]any); return m != nil && m["name"] == r.Name })
			if i < 0 {
				replicas = append(replicas, map[string]any{"name": r.Name, "count": r.Count})
				continue
			}
			replicas[i].(map[string]any)["count"] = r.Count
		}
		setKey(k, "replicas", replicas)
	}
	if len(o.CommonLabels) > 0 {
		if o.LabelWithoutSelector {
			labels := listOf(k, "labels")
			pairs := map[string]any{}
			for key, v := range o.CommonLabels {
				pairs[key] = v
			}
			entry := map[string]any{"pairs": pairs, "includeSelectors": false}
			if o.LabelIncludeTemplates {
				entry["includeTemplates"] = true
			}
			setKey(k, "labels", append(labels, entry))
		} else if err := addPairs(k, "commonLabels", o.CommonLabels, o.ForceCommonLabels, "label", "forceCommonLabels"); err != nil {
			return err
		}
	}
	if len(o.CommonAnnotations) > 0 {
		if err := addPairs(k, "commonAnnotations", o.CommonAnnotations, o.ForceCommonAnnotations, "annotation", "forceCommonAnnotations"); err != nil {
			return err
		}
	}
	if len(o.Patches) > 0 {
		patches := listOf(k, "patches")
		for i, p := range o.Patches {
			field := fmt.Sprintf("patches[%d]", i)
			if len(p.Patch) > MaxOverlayPatchBytes {
				return limitf("", "overlay patch size", "%s is %d bytes, more than %d", field, len(p.Patch), MaxOverlayPatchBytes)
			}
			if p.Patch != "" {
				// An inline patch is a YAML document kustomize parses: the
				// same guard as a file (aliases, depth).
				if err := CheckYAML(field, []byte(p.Patch), opts); err != nil {
					return err
				}
			}
			var m map[string]any
			if err := recode(p, &m); err != nil {
				return fmt.Errorf("%s: %w", field, err)
			}
			patches = append(patches, m)
		}
		setKey(k, "patches", patches)
	}
	if len(o.Components) > 0 {
		comps := listOf(k, "components")
		for _, c := range o.Components {
			// kustomize edit add component skips one already listed;
			// Flux appends.
			if o.Style == Flux || !slices.Contains(comps, any(c)) {
				comps = append(comps, c)
			}
		}
		setKey(k, "components", comps)
	}
	return nil
}

// addPairs adds pairs to the map field of k as `kustomize edit add label`
// (or annotation) does: a key already there is an error unless force.
func addPairs(k map[string]any, field string, pairs map[string]string, force bool, what, forceField string) error {
	cur := map[string]any{}
	if v, ok := getKey(k, field).(map[string]any); ok {
		cur = v
	}
	for _, key := range slices.Sorted(maps.Keys(pairs)) {
		if _, ok := cur[key]; ok && !force {
			return &OverlayError{Field: field, Problem: fmt.Sprintf("%s %s is already in the kustomization, and `kustomize edit add %s` refuses it (so does Argo CD)", what, key, what),
				Fix: "set " + forceField + ": true, or remove " + key + " from one of them"}
		}
		cur[key] = pairs[key]
	}
	setKey(k, field, cur)
	return nil
}

// imageMap is an images entry as kustomize reads it.
func imageMap(im types.Image) map[string]any {
	m := map[string]any{"name": im.Name}
	for key, v := range map[string]string{"newName": im.NewName, "newTag": im.NewTag, "digest": im.Digest, "tagSuffix": im.TagSuffix} {
		if v != "" {
			m[key] = v
		}
	}
	return m
}

// getKey is k's value for field, matched in any case as kustomize reads
// JSON; nil when absent.
func getKey(k map[string]any, field string) any {
	for key, v := range k {
		if strings.EqualFold(key, field) {
			return v
		}
	}
	return nil
}

// setKey sets field in k, dropping the keys that name it in another case.
func setKey(k map[string]any, field string, v any) {
	for key := range k {
		if strings.EqualFold(key, field) {
			delete(k, key)
		}
	}
	k[field] = v
}

// listOf is k's list field (a copy), empty when absent.
func listOf(k map[string]any, field string) []any {
	l, _ := getKey(k, field).([]any)
	return slices.Clone(l)
}

// kustomizationFile is kustomizationFile of the tree, with the
// kustomization an overlay generated in memory for a folder that has none.
func (t *treeFS) kustomizationFile(dir string) (string, error) {
	name, err := kustomizationFile(t.tree, dir)
	if name == "" && err == nil && t.virtual[path.Join(dir, konfig.DefaultKustomizationFileName())] != nil {
		name = konfig.DefaultKustomizationFileName()
	}
	return name, err
}
