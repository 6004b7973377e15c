package render

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/gobwas/glob"
)

// Directory says how a plain folder (no kustomization, no Chart.yaml) is
// read, as Argo CD's spec.source.directory says it. A nil *Directory reads
// every manifest file of the folder and its subfolders, as a kdrift App
// always did.
type Directory struct {
	// Recurse reads the subfolders too.
	Recurse bool `json:"recurse,omitempty"`
	// Include, when set, is a glob (Argo CD's syntax: *, ?, [...] and
	// {a,b} alternatives, * crossing "/") that a file's path relative to
	// the folder must match to be read.
	Include string `json:"include,omitempty"`
	// Exclude is a glob (same syntax) whose matching files are not read;
	// it wins over Include.
	Exclude string `json:"exclude,omitempty"`
	// Jsonnet is how .jsonnet files are evaluated; nil evaluates them with
	// no variables and no library folders.
	Jsonnet *Jsonnet `json:"jsonnet,omitempty"`
}

// Jsonnet are the variables and library folders .jsonnet files are
// evaluated with (Argo CD's directory.jsonnet).
type Jsonnet struct {
	// ExtVars are read with std.extVar.
	ExtVars []JsonnetVar `json:"extVars,omitempty"`
	// TLAs are the arguments of a file whose value is a function.
	TLAs []JsonnetVar `json:"tlas,omitempty"`
	// Libs are folders, relative to the repository root, that imports are
	// also looked up in (the last one first), after the importing file's
	// folder and before the App's folder.
	Libs []string `json:"libs,omitempty"`
}

// JsonnetVar is one external variable or top-level argument: a string,
// or Jsonnet code when Code.
type JsonnetVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Code  bool   `json:"code,omitempty"`
}

// recursive reports whether subfolders are read.
func (d *Directory) recursive() bool { return d == nil || d.Recurse }

// CompileGlob compiles an include or exclude pattern as Argo CD does (no
// separator: * matches across "/"); an empty pattern compiles to nil.
func CompileGlob(pattern string) (glob.Glob, error) {
	if pattern == "" {
		return nil, nil
	}
	g, err := glob.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("glob %q: %v", pattern, err)
	}
	return g, nil
}

// manifestExt reports whether a file is one Argo CD reads in a directory
// source: .yaml, .yml, .json or .jsonnet (kdrift also takes them in
// capitals, as it always did for YAML).
func manifestExt(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json", ".jsonnet":
		return true
	}
	return false
}

// Skipped is a file of an App's folder that the render did not read, and
// why.
type Skipped struct {
	// File is the path relative to the repository root.
	File string
	// Reason says why it was not read.
	Reason string
}

// NothingReadError is a plain folder that rendered no object while it
// holds files kdrift did not read: reporting it Synced would say the
// cluster matches Git when kdrift compared nothing.
type NothingReadError struct {
	// Skipped are the files not read (at most maxSkippedNamed of them).
	Skipped []Skipped
	// More is how many more there were.
	More int
}

// maxSkippedNamed bounds how many skipped files an error names.
const maxSkippedNamed = 5

// Error names the skipped files and says what to do.
func (e *NothingReadError) Error() string {
	var b strings.Builder
	b.WriteString("rendered no object, and kdrift did not read these files of the folder: ")
	for i, s := range e.Skipped {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s.File + " (" + s.Reason + ")")
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "; and %d more", e.More)
	}
	b.WriteString("; rename the manifests to .yaml, .yml, .json or .jsonnet (or set directory.recurse for a subfolder), " +
		"or, if the app is empty on purpose, move these files out or name them in directory.exclude")
	return b.String()
}

// inertFile reports whether a file is never a manifest in anyone's
// reading: dotfiles (.gitignore, .gitkeep), documentation (*.md,
// *.markdown, *.rst, *.adoc) and the usual repository files (README,
// LICENSE, OWNERS, ...). An empty folder holding only these is empty on
// purpose.
func inertFile(name string) bool {
	base := path.Base(name)
	if strings.HasPrefix(base, ".") {
		return true
	}
	switch strings.ToLower(path.Ext(base)) {
	case ".md", ".markdown", ".rst", ".adoc":
		return true
	}
	stem := strings.ToUpper(strings.TrimSuffix(base, path.Ext(base)))
	return slices.Contains([]string{"README", "LICENSE", "LICENCE", "COPYING", "NOTICE", "OWNERS", "CODEOWNERS", "AUTHORS", "CHANGELOG"}, stem)
}

// dirWalk lists the files of a plain folder: those to read, in lexical
// order, and those left out with the reason (files left out by Include
// or Exclude are the App's choice and are not listed).
type dirWalk struct {
	read    []string
	skipped []Skipped
}

// walkDirectory walks dir of tree as d says. Subfolders that d does not
// read are entered only when listNested, to list their manifest files as
// skipped.
func walkDirectory(tree fs.FS, dir string, d *Directory, listNested bool) (*dirWalk, error) {
	var include, exclude glob.Glob
	if d != nil {
		var err error
		if include, err = CompileGlob(d.Include); err != nil {
			return nil, fmt.Errorf("directory.include: %w", err)
		}
		if exclude, err = CompileGlob(d.Exclude); err != nil {
			return nil, fmt.Errorf("directory.exclude: %w", err)
		}
	}
	w := &dirWalk{}
	err := fs.WalkDir(tree, dir, func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if name != dir && !d.recursive() && !listNested {
				return fs.SkipDir
			}
			return nil
		}
		relPath := strings.TrimPrefix(name, dir+"/")
		if dir == "." {
			relPath = name
		}
		if exclude != nil && exclude.Match(relPath) {
			return nil
		}
		if include != nil && !include.Match(relPath) {
			return nil
		}
		nested := path.Dir(name) != dir
		switch {
		case inertFile(name):
		case !e.Type().IsRegular():
			w.skipped = append(w.skipped, Skipped{File: name, Reason: "not a regular file"})
		case !manifestExt(name):
			if strings.ToLower(path.Ext(name)) == ".libsonnet" {
				w.skipped = append(w.skipped, Skipped{File: name, Reason: "a Jsonnet library is read only when a .jsonnet file imports it"})
			} else {
				w.skipped = append(w.skipped, Skipped{File: name, Reason: "kdrift, like Argo CD, reads only .yaml, .yml, .json and .jsonnet files"})
			}
		case nested && !d.recursive():
			w.skipped = append(w.skipped, Skipped{File: name, Reason: "in a subfolder, and directory.recurse is off"})
		default:
			w.read = append(w.read, name)
		}
		return nil
	})
	return w, err
}

// nothingRead is the error of a render that produced no object while
// files were skipped (imported ones, read after all, aside); nil when
// there was nothing to skip.
func nothingRead(skipped []Skipped, imported map[string]bool) error {
	e := &NothingReadError{}
	for _, s := range skipped {
		if imported[s.File] {
			continue
		}
		if len(e.Skipped) == maxSkippedNamed {
			e.More++
			continue
		}
		e.Skipped = append(e.Skipped, s)
	}
	if len(e.Skipped) == 0 {
		return nil
	}
	return e
}
