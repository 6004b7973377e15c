package app

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"

	yaml3 "gopkg.in/yaml.v3"

	"kdrift.dev/kdrift/engine/render"
)

// Quiet renders: a parent that discovery rendered and that yielded no
// declaration need not render again after a commit that changed only
// what it reads, when the new render provably yields none either
// (ARCHITECTURE.md, "Quiet renders"). A commit to one app's manifests
// then costs discovery no render at all.
//
// A kustomize build puts out a declaration only with an apiVersion whose
// group holds a tool's marker ("argoproj.io", "fluxcd.io"). Without the
// constructs that compose strings (replacements, vars, Helm charts,
// plug-ins, custom configurations: quietKustomizationKeys leaves them
// out), an output string comes from the inputs as written: literally, or
// through YAML or JSON escapes, which need a backslash. So a build whose
// folders hold no file with a marker or a backslash, and whose
// kustomization files use none of those constructs, yields no
// declaration. Which folders a build reads follows from its
// kustomization files and which of their paths are files or folders:
// when every kustomization file is unchanged and every folder read has
// the same entries with the same modes, the build reads the same folders
// as before.

// quietTree is a tree that can say how a folder changed since an earlier
// version (source.Snapshot is one).
type quietTree interface {
	fs.FS
	treeHasher
	ChangedEntries(dir, since string) ([]string, error)
}

// quietKustomizationKeys are the kustomization fields that cannot make a
// string the inputs do not hold: any other field (replacements, vars,
// helmCharts, transformers, generators, configurations, openapi...)
// makes the build render.
var quietKustomizationKeys = map[string]bool{
	"apiVersion": true, "kind": true, "metadata": true,
	"resources": true, "bases": true, "components": true,
	"namespace": true, "namePrefix": true, "nameSuffix": true,
	"commonLabels": true, "labels": true, "commonAnnotations": true,
	"images": true, "replicas": true,
	"patches": true, "patchesStrategicMerge": true, "patchesJson6902": true,
	"configMapGenerator": true, "secretGenerator": true, "generatorOptions": true,
	"buildMetadata": true, "sortOptions": true,
}

// Bounds on what one quiet check reads; past them the parent renders.
const (
	quietMaxFiles = 1000
	quietMaxBytes = 8 << 20
)

// quietParent reports whether p is rendered by kustomize alone, with no
// option of its declaration that adds to its inputs: no artifact, no
// post-render, no substitution, patches or components.
func quietParent(p parent) bool {
	if p.artifact != nil {
		return false
	}
	h := p.helm
	if h == nil {
		return true
	}
	if len(h.PostRender) > 0 {
		return false
	}
	ov := h.Overlay
	return ov == nil || (len(ov.Substitute) == 0 && len(ov.Patches) == 0 && len(ov.Components) == 0)
}

// quietRender reports whether the kustomize build of folder dir, which
// read the folders inputs (by tree hash then; "" for one that did not
// exist) and yielded no declaration, yields none in t either, and
// returns its inputs' tree hashes in t. It does not render: see the top
// of this file.
func quietRender(t quietTree, dir string, inputs map[string]string) (map[string]string, bool) {
	if !hasKustomization(t, dir) {
		return nil, false // a chart's templates can compose any string
	}
	now := make(map[string]string, len(inputs))
	files, size := 0, 0
	for in, was := range inputs {
		h, err := t.TreeHash(in)
		if was == "" {
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, false
			}
			now[in] = ""
			continue
		}
		if err != nil {
			return nil, false
		}
		now[in] = h
		if h != was {
			changed, err := t.ChangedEntries(in, was)
			if err != nil {
				return nil, false
			}
			for _, name := range changed {
				if slices.Contains(kustomizationFiles, name) {
					return nil, false
				}
			}
		}
		entries, err := fs.ReadDir(t, in)
		if err != nil {
			return nil, false
		}
		for _, e := range entries {
			switch {
			case e.IsDir():
				continue // read by the build only if it is an input itself
			case !e.Type().IsRegular():
				return nil, false // a symbolic link or a submodule
			}
			if files++; files > quietMaxFiles {
				return nil, false
			}
			name := path.Join(in, e.Name())
			data, err := fs.ReadFile(t, name)
			if err != nil {
				return nil, false
			}
			if size += len(data); size > quietMaxBytes || !quietFile(e.Name(), data) {
				return nil, false
			}
		}
	}
	return now, true
}

// quietFile reports whether a file a build may read cannot help it put
// out a declaration: no tool's marker, no backslash (an escape could
// spell one), and, for a kustomization file, only the fields of
// quietKustomizationKeys.
func quietFile(name string, data []byte) bool {
	if mayDeclare(data) || bytes.IndexByte(data, '\\') >= 0 {
		return false
	}
	if !slices.Contains(kustomizationFiles, name) {
		return true
	}
	if render.CheckYAML(name, data, render.DefaultOptions()) != nil {
		return false
	}
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	var doc map[string]any
	if dec.Decode(&doc) != nil || dec.Decode(new(any)) != io.EOF {
		return false // not one mapping: the build says what is wrong
	}
	for k := range doc {
		if !quietKustomizationKeys[k] {
			return false
		}
	}
	return true
}
