package app

import (
	"io/fs"
	"path"

	yaml3 "gopkg.in/yaml.v3"

	"kdrift.dev/kdrift/engine/render"
)

// kustomizationPatches are the fields of a kustomization file that name
// patch files.
type kustomizationPatches struct {
	Patches []struct {
		Path string `yaml:"path"`
	} `yaml:"patches"`
	PatchesStrategicMerge []string `yaml:"patchesStrategicMerge"`
	PatchesJSON6902       []struct {
		Path string `yaml:"path"`
	} `yaml:"patchesJson6902"`
}

// patchFile reports whether file is a patch that the kustomization file
// of its folder or of a folder above it names (patches[].path,
// patchesStrategicMerge, patchesJson6902[].path): a partial document
// that only patches another, such as a Flux Kustomization that sets one
// field of a base's, and no declaration of its own. A patch named from a
// sibling folder (../patches/x.yaml) is not looked for.
func (d *discovery) patchFile(file string) bool {
	for dir := path.Dir(file); ; dir = path.Dir(dir) {
		if d.patchesOf(dir)[file] {
			return true
		}
		if dir == "." {
			return false
		}
	}
}

// patchesOf is the set of files the kustomization file of dir names as
// patches, read once per discovery. A kustomization file that is too
// large, fails the YAML guard or does not parse names none: the render
// of the app that uses it says what is wrong.
func (d *discovery) patchesOf(dir string) map[string]bool {
	if set, ok := d.patches[dir]; ok {
		return set
	}
	if d.patches == nil {
		d.patches = map[string]map[string]bool{}
	}
	set := map[string]bool{}
	d.patches[dir] = set
	for _, n := range kustomizationFiles {
		name := path.Join(dir, n)
		st, err := fs.Stat(d.fsys, name)
		if err != nil || !st.Mode().IsRegular() || st.Size() > render.DefaultMaxFileBytes {
			continue
		}
		data, err := fs.ReadFile(d.fsys, name)
		if err != nil || render.CheckYAML(name, data, render.DefaultOptions()) != nil {
			return set
		}
		var k kustomizationPatches
		if yaml3.Unmarshal(data, &k) != nil {
			return set
		}
		add := func(p string) {
			if p != "" {
				set[path.Join(dir, p)] = true
			}
		}
		for _, p := range k.Patches {
			add(p.Path)
		}
		for _, p := range k.PatchesStrategicMerge {
			add(p)
		}
		for _, p := range k.PatchesJSON6902 {
			add(p.Path)
		}
		return set
	}
	return set
}
