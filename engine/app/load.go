package app

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"kdrift.dev/kdrift/engine/render"
)

// LoadResult is every App declared at one revision: the valid ones, and the
// invalid ones with the reason. An invalid App never hides the valid ones.
type LoadResult struct {
	// Apps are the valid Apps, sorted by name.
	Apps []App
	// Invalid are the Apps (or whole files) that could not be used, sorted
	// by name then file.
	Invalid []Invalid
	// Flux is what discovery saw of Flux's layout: the cluster folder it
	// followed and the candidates; nil when the tree declares no Flux
	// Kustomization.
	Flux *FluxLayout
}

// Invalid is an App (or a file) that kdrift cannot use, and why.
type Invalid struct {
	// Name is the App's metadata.name; empty when it could not be read.
	Name string
	// File is the App file relative to the repository root.
	File string
	// Err says what is wrong and what to do; it wraps one or more *Error.
	Err error
}

// Find returns the valid App named name. An Argo CD Application or Flux
// Kustomization answers to its App name and to NAMESPACE/NAME.
func (r LoadResult) Find(name string) (App, bool) {
	for _, a := range r.Apps {
		if a.Metadata.Name == name {
			return a, true
		}
	}
	if strings.Contains(name, "/") {
		for _, a := range r.Apps {
			if a.Origin != nil && a.Origin.QualifiedName() == name {
				return a, true
			}
		}
	}
	return App{}, false
}

// Canonical is the App name that name (an App name or NAMESPACE/NAME)
// stands for; name itself when no App answers to it.
func (r LoadResult) Canonical(name string) string {
	if a, ok := r.Find(name); ok {
		return a.Metadata.Name
	}
	return name
}

// FindInvalid returns the first invalid entry named name.
func (r LoadResult) FindInvalid(name string) (Invalid, bool) {
	for _, in := range r.Invalid {
		if in.Name == name {
			return in, true
		}
	}
	return Invalid{}, false
}

// Load reads every App file (*.yaml and *.yml) in the .kdrift folder of the
// repository tree at root inside fsys (use "." when fsys is the repository
// itself), parses and validates each App and rejects every App whose name is
// declared more than once. Valid Apps come back with spec.path cleaned
// ("./a/b/" becomes "a/b"). A repository without .kdrift has no Apps.
func Load(fsys fs.FS, root string) LoadResult {
	return load(fsys, root, nil)
}

// load is Load, taking the Apps of an App file from kept when it holds
// that file's blob (discovery's cache; nil parses every file).
func load(fsys fs.FS, root string, kept *keptAppFiles) LoadResult {
	var res LoadResult
	repo := fsys
	if root != "" && root != "." {
		sub, err := fs.Sub(fsys, root)
		if err != nil {
			res.Invalid = append(res.Invalid, Invalid{File: Dir, Err: fmt.Errorf("%s: cannot open repository root %q: %w", Dir, root, err)})
			return res
		}
		repo = sub
	}
	entries, err := fs.ReadDir(repo, Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return res
	}
	if err != nil {
		res.Invalid = append(res.Invalid, Invalid{File: Dir, Err: fmt.Errorf("%s: cannot list App files: %w", Dir, err)})
		return res
	}
	var parsed []App
	contents := map[string][]byte{} // file -> data, to find lines of errors
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		file := path.Join(Dir, e.Name())
		if file == SettingsFile {
			continue // the Settings document (settings.go), not an App
		}
		blob := kept.blob(file)
		if apps, ok := kept.get(file, blob); ok {
			parsed = append(parsed, apps...)
			continue
		}
		if info, err := e.Info(); err == nil && info.Size() > render.DefaultMaxFileBytes {
			res.Invalid = append(res.Invalid, Invalid{File: file, Err: &Error{File: file,
				Problem: fmt.Sprintf("is %d bytes, more than the %d an App file may have", info.Size(), render.DefaultMaxFileBytes), Fix: "split the Apps over several files"}})
			continue
		}
		data, err := fs.ReadFile(repo, file)
		if err != nil {
			res.Invalid = append(res.Invalid, Invalid{File: file, Err: &Error{File: file, Problem: "cannot read: " + err.Error(), Fix: "check the file in Git"}})
			continue
		}
		apps, errs := Parse(file, data)
		if len(errs) == 0 {
			kept.put(file, blob, apps)
		}
		contents[file] = data
		parsed = append(parsed, apps...)
		res.Invalid = append(res.Invalid, groupErrors(file, errs)...)
	}
	// A name declared twice is ambiguous even when one declaration is
	// itself broken, so broken documents that name themselves count too.
	byName := map[string][]string{}
	for _, a := range parsed {
		byName[a.Metadata.Name] = append(byName[a.Metadata.Name], a.File)
	}
	for _, in := range res.Invalid {
		if in.Name != "" {
			byName[in.Name] = append(byName[in.Name], in.File)
		}
	}
	for _, a := range parsed {
		errs := Validate(a, repo)
		if files := byName[a.Metadata.Name]; len(files) > 1 && a.Metadata.Name != "" {
			errs = append(errs, &Error{File: a.File, App: a.Metadata.Name, Field: "metadata.name",
				Problem: fmt.Sprintf("is declared %d times (in %s)", len(files), strings.Join(files, ", ")),
				Fix:     "give each App a unique name"})
		}
		if len(errs) > 0 {
			for _, err := range errs {
				var e *Error
				if errors.As(err, &e) && e.Line == 0 {
					if _, read := contents[a.File]; !read {
						// A kept file's Apps were not read this time.
						contents[a.File], _ = fs.ReadFile(repo, a.File)
					}
					e.Line = findLine(contents[a.File], a.Metadata.Name, e.Field)
				}
			}
			res.Invalid = append(res.Invalid, Invalid{Name: a.Metadata.Name, File: a.File, Err: errors.Join(errs...)})
			continue
		}
		a.Spec.Path = path.Clean(a.Spec.Path)
		res.Apps = append(res.Apps, a)
	}
	sort.SliceStable(res.Apps, func(i, j int) bool { return res.Apps[i].Metadata.Name < res.Apps[j].Metadata.Name })
	sort.SliceStable(res.Invalid, func(i, j int) bool {
		if res.Invalid[i].Name != res.Invalid[j].Name {
			return res.Invalid[i].Name < res.Invalid[j].Name
		}
		return res.Invalid[i].File < res.Invalid[j].File
	})
	return res
}

// groupErrors makes one Invalid per document of file from Parse's errors.
func groupErrors(file string, errs []error) []Invalid {
	var out []Invalid
	byDoc := map[int]int{}
	for _, err := range errs {
		var e *Error
		doc, name := 0, ""
		if errors.As(err, &e) {
			doc, name = e.Doc, e.App
		}
		if i, ok := byDoc[doc]; ok {
			out[i].Err = errors.Join(out[i].Err, err)
			continue
		}
		byDoc[doc] = len(out)
		out = append(out, Invalid{Name: name, File: file, Err: err})
	}
	return out
}
