package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-jsonnet"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// JsonnetMaxStack bounds how deeply a Jsonnet evaluation may call (go-jsonnet's
// MaxStack, and Argo CD's): an endless recursion stops there, in
// microseconds, as that app's error.
const JsonnetMaxStack = 500

// jsonnetMain is the name of the program kdrift evaluates around a .jsonnet
// file (see jsonnetProgram); no repository file can have it.
const jsonnetMain = "<kdrift>"

// jsonnetSizeError is the text the size guard of jsonnetProgram fails with.
const jsonnetSizeError = "kdrift size budget"

// ImportError is an import, importstr or importbin kdrift refuses: a URL,
// an absolute path, or a path that leaves the repository.
type ImportError struct {
	// From is the importing file, relative to the repository root.
	From string
	// Path is the path as the file wrote it.
	Path string
	// Problem says what is wrong.
	Problem string
}

// Error renders `FROM: import "PATH": PROBLEM; FIX`.
func (e *ImportError) Error() string {
	return fmt.Sprintf("%s: import %q: %s; import files of this repository by a path relative to the importing file, or to a folder of directory.jsonnet.libs", e.From, e.Path, e.Problem)
}

// importCandidates lists, in the order they are tried, the repository
// paths an import of importedPath from importedFrom may name: the
// importing file's folder, then libs from the last one, then the App's
// folder (go-jsonnet's FileImporter with Argo CD's library paths). The
// program kdrift wraps a file in imports it by its repository path; a
// snippet of directory.jsonnet (code variables) imports from the App's
// folder. A URL, an absolute path, or a path that leaves the repository is
// an *ImportError, whichever candidate would leave.
func importCandidates(importedFrom, importedPath, appDir string, libs []string) ([]string, error) {
	refuse := func(problem string) ([]string, error) {
		return nil, &ImportError{From: importedFrom, Path: importedPath, Problem: problem}
	}
	switch {
	case importedPath == "":
		return refuse("the path is empty")
	case strings.Contains(importedPath, "://"):
		return refuse("URLs are never fetched: rendering reads this repository only")
	case strings.HasPrefix(importedPath, "/") || strings.Contains(importedPath, "\\") ||
		(len(importedPath) > 1 && importedPath[1] == ':'):
		return refuse("absolute paths are refused: rendering never reads outside the repository")
	case strings.ContainsRune(importedPath, 0):
		return refuse("the path holds a NUL byte")
	}
	inside := func(p string) bool {
		return p != ".." && !strings.HasPrefix(p, "../") && fs.ValidPath(p)
	}
	if importedFrom == jsonnetMain {
		p := path.Clean(importedPath)
		if !inside(p) {
			return refuse("the path leaves the repository")
		}
		return []string{p}, nil
	}
	var dirs []string
	if strings.HasPrefix(importedFrom, "<") || importedFrom == "" {
		dirs = append(dirs, appDir)
	} else {
		dirs = append(dirs, path.Dir(importedFrom))
	}
	for i := len(libs) - 1; i >= 0; i-- {
		dirs = append(dirs, libs[i])
	}
	dirs = append(dirs, appDir)
	var out []string
	for _, d := range dirs {
		p := path.Join(d, importedPath)
		if !inside(p) {
			return refuse("the path leaves the repository")
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// treeImporter is go-jsonnet's Importer over the repository: every file
// through fsys (in a render worker, a read the parent answers through the
// render's treeFS, with its budgets, its context and the inputs of the
// cache), nothing outside the repository.
type treeImporter struct {
	fsys   filesys.FileSystem
	appDir string
	libs   []string
	files  map[string]jsonnet.Contents
	// refused is the first import refused, reported as the render's error.
	refused error
}

// Import implements jsonnet.Importer.
func (im *treeImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	if importedFrom == "" {
		// kdrift's own wrapper program, evaluated as an anonymous snippet:
		// its one import names the App's file from the repository root.
		importedFrom = jsonnetMain
	}
	cands, err := importCandidates(importedFrom, importedPath, im.appDir, im.libs)
	if err != nil {
		if im.refused == nil {
			im.refused = err
		}
		return jsonnet.Contents{}, "", err
	}
	for _, c := range cands {
		if got, ok := im.files[c]; ok {
			return got, c, nil
		}
		data, err := im.fsys.ReadFile("/" + c)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			// A budget the parent refused the read for is the render's
			// error: the parent reports it (see evalJsonnet).
			return jsonnet.Contents{}, "", fmt.Errorf("%s: %w", c, err)
		}
		got := jsonnet.MakeContentsRaw(data)
		im.files[c] = got
		return got, c, nil
	}
	return jsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: not in %s", importedPath, strings.Join(cands, ", "))
}

// importFS is the parent's side of a Jsonnet evaluation's reads: the
// render's treeFS, recording the files read (the importer reads nothing
// else).
type importFS struct {
	*treeFS
	mu       sync.Mutex
	imported map[string]bool
}

// ReadFile reads through the treeFS and records the file; a SOPS file
// is refused (sopsrule.go).
func (f *importFS) ReadFile(name string) ([]byte, error) {
	data, err := f.treeFS.readFor(name, "Jsonnet (import, importstr or importbin)")
	if err == nil {
		f.mu.Lock()
		f.imported[strings.TrimPrefix(name, "/")] = true
		f.mu.Unlock()
	}
	return data, err
}

// jsonnetIdent is a Jsonnet identifier.
var jsonnetIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jsonnetKeywords cannot name a top-level argument.
var jsonnetKeywords = []string{"assert", "else", "error", "false", "for", "function", "if", "import", "importstr", "importbin", "in", "local", "null", "tailstrict", "then", "self", "super", "true"}

// CheckJsonnetTLA says what is wrong with a top-level argument's name,
// or "" when it can name a parameter.
func CheckJsonnetTLA(name string) string {
	switch {
	case !jsonnetIdent.MatchString(name):
		return fmt.Sprintf("%q is not a Jsonnet identifier (letters, digits and _, not starting with a digit)", name)
	case slices.Contains(jsonnetKeywords, name):
		return fmt.Sprintf("%q is a Jsonnet keyword", name)
	case name == "std" || strings.HasPrefix(name, "kdrift__"):
		return fmt.Sprintf("%q is reserved", name)
	}
	return ""
}

// jsonnetProgram is the program kdrift evaluates for file: it imports the
// file, calls it with the top-level arguments when its value is a
// function (as go-jsonnet does), and then, before go-jsonnet writes the
// output, adds up the output's size without building it (a string's
// length is known without joining its pieces) and fails past maxBytes or
// past maxDepth levels of nesting. A string doubled thirty times is thus
// refused while it is still thirty pieces, not a gigabyte.
func jsonnetProgram(file string, tlas []string, maxBytes int64, maxDepth int) string {
	lit, _ := json.Marshal(file)
	var b strings.Builder
	fmt.Fprintf(&b, "local kdrift__file = import %s;\n", lit)
	b.WriteString("local kdrift__isFunction = std.isFunction, kdrift__isString = std.isString, kdrift__isArray = std.isArray, kdrift__isObject = std.isObject, kdrift__length = std.length, kdrift__foldl = std.foldl, kdrift__fields = std.objectFields;\n")
	fmt.Fprintf(&b, "local kdrift__max = %d, kdrift__maxDepth = %d;\n", maxBytes, maxDepth)
	fmt.Fprintf(&b, `local kdrift__size(x, d) =
  if d > kdrift__maxDepth then error "%[1]s: nesting deeper than %[2]d levels"
  else if kdrift__isString(x) then kdrift__length(x) + 2
  else if kdrift__isArray(x) then kdrift__foldl(function(acc, e) if acc > kdrift__max then acc else acc + 1 + kdrift__size(e, d + 1), x, 2)
  else if kdrift__isObject(x) then kdrift__foldl(function(acc, k) if acc > kdrift__max then acc else acc + kdrift__length(k) + 4 + kdrift__size(x[k], d + 1), kdrift__fields(x), 2)
  else 8;
local kdrift__check(v) =
  if kdrift__size(v, 1) > kdrift__max then error "%[1]s: the output is larger than %[3]d bytes" else v;
`, jsonnetSizeError, maxDepth, maxBytes)
	var params, args []string
	for _, n := range tlas {
		if slices.Contains(params, n) {
			continue
		}
		params = append(params, n)
		args = append(args, n+"="+n)
	}
	call := "kdrift__check(if kdrift__isFunction(kdrift__file) then kdrift__file(" + strings.Join(args, ", ") + ") else kdrift__file)"
	if len(params) == 0 {
		b.WriteString(call + "\n")
	} else {
		b.WriteString("function(" + strings.Join(params, ", ") + ") " + call + "\n")
	}
	return b.String()
}

// jsonnetRequest is what a render worker evaluates: one .jsonnet file
// of an App folder, with its variables, its library folders (checked) and
// the output budgets.
type jsonnetRequest struct {
	AppDir   string       `json:"appDir"`
	File     string       `json:"file"`
	Libs     []string     `json:"libs,omitempty"`
	ExtVars  []JsonnetVar `json:"extVars,omitempty"`
	TLAs     []JsonnetVar `json:"tlas,omitempty"`
	MaxBytes int64        `json:"maxBytes"`
	MaxDepth int          `json:"maxDepth"`
}

// evalJsonnet evaluates one .jsonnet file of appDir and flattens its
// value into objects as Argo CD does: an object is one object (a List
// kind its items), an array is its elements (each an object; nulls are
// skipped). Files it imports are added to imported.
//
// The evaluation runs in a render worker (see jsonnetHandler), which
// reads the files it imports through fsys: go-jsonnet cannot be
// interrupted and bounds no memory, so an evaluation that runs past the
// render's time or allocates past the worker's memory budget is ended by
// killing the worker, as that app's *LimitError. Endless recursion stops
// at JsonnetMaxStack, an output past the size or depth budget before it
// is written out.
func evalJsonnet(fsys *treeFS, appDir, file string, j *Jsonnet, opts Options, imported map[string]bool) ([]*unstructured.Unstructured, error) {
	if j == nil {
		j = &Jsonnet{}
	}
	req := &jsonnetRequest{AppDir: appDir, File: file, ExtVars: j.ExtVars, TLAs: j.TLAs, MaxBytes: opts.MaxRenderBytes, MaxDepth: opts.MaxDepth}
	for _, l := range j.Libs {
		p := path.Clean(strings.TrimPrefix(l, "/"))
		if strings.Contains(l, "://") || p == ".." || strings.HasPrefix(p, "../") || !fs.ValidPath(p) {
			return nil, fmt.Errorf("directory.jsonnet.libs: %q is not a folder inside the repository; name a folder by its path from the repository root", l)
		}
		req.Libs = append(req.Libs, p)
	}
	for _, v := range j.TLAs {
		if p := CheckJsonnetTLA(v.Name); p != "" {
			return nil, fmt.Errorf("directory.jsonnet.tlas: %s; rename the argument", p)
		}
	}
	answer := &importFS{treeFS: fsys, imported: imported}
	out, err := runRenderer(fsys, answer, kindJsonnet, jsonnetHandler, req)
	if err != nil {
		return nil, err
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("%s: the render worker sent %d Jsonnet outputs, not one", file, len(out))
	}
	if int64(len(out[0])) > opts.MaxRenderBytes {
		return nil, limitf(file, "rendered size", "the output is larger than %d bytes", opts.MaxRenderBytes)
	}
	if err := fsys.spendJSON(file, out[0]); err != nil {
		return nil, err
	}
	var v any
	if err := utiljson.Unmarshal(out[0], &v); err != nil {
		return nil, fmt.Errorf("%s: jsonnet output: %w", file, err)
	}
	var objs []*unstructured.Unstructured
	switch x := v.(type) {
	case nil:
	case map[string]any:
		got, err := objects(x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		objs = got
	case []any:
		for i, e := range x {
			switch m := e.(type) {
			case nil:
			case map[string]any:
				got, err := objects(m)
				if err != nil {
					return nil, fmt.Errorf("%s: item %d: %w", file, i, err)
				}
				objs = append(objs, got...)
			default:
				return nil, fmt.Errorf("%s: item %d is a %s; a .jsonnet file gives an object or a list of objects", file, i, jsonType(e))
			}
		}
	default:
		return nil, fmt.Errorf("%s: the value is a %s; a .jsonnet file gives an object or a list of objects", file, jsonType(v))
	}
	return objs, nil
}

// jsonnetHandler is the render worker's side of evalJsonnet: it evaluates
// the request's file with go-jsonnet, importing through fsys, and returns
// the output, one JSON value.
func jsonnetHandler(fsys filesys.FileSystem, payload json.RawMessage, _ int64) ([]json.RawMessage, error) {
	var req jsonnetRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("jsonnet request: %w", err)
	}
	out, err := evaluateJsonnet(fsys, &req)
	if err != nil {
		return nil, coded(err)
	}
	return []json.RawMessage{json.RawMessage(out)}, nil
}

// evaluateJsonnet runs go-jsonnet on req; a budget is a *LimitError, a
// refused import an *ImportError.
func evaluateJsonnet(fsys filesys.FileSystem, req *jsonnetRequest) (string, error) {
	file := req.File
	im := &treeImporter{fsys: fsys, appDir: req.AppDir, libs: req.Libs, files: map[string]jsonnet.Contents{}}
	vm := jsonnet.MakeVM()
	vm.MaxStack = JsonnetMaxStack
	vm.SetTraceOut(io.Discard)
	vm.ErrorFormatter.SetMaxStackTraceSize(5)
	vm.Importer(im)
	for _, v := range req.ExtVars {
		if v.Code {
			vm.ExtCode(v.Name, v.Value)
		} else {
			vm.ExtVar(v.Name, v.Value)
		}
	}
	var names []string
	for _, v := range req.TLAs {
		if p := CheckJsonnetTLA(v.Name); p != "" {
			return "", fmt.Errorf("directory.jsonnet.tlas: %s; rename the argument", p)
		}
		names = append(names, v.Name)
		if v.Code {
			vm.TLACode(v.Name, v.Value)
		} else {
			vm.TLAVar(v.Name, v.Value)
		}
	}
	out, err := vm.EvaluateAnonymousSnippet(jsonnetMain, jsonnetProgram(file, names, req.MaxBytes, req.MaxDepth))
	if err != nil {
		if im.refused != nil {
			return "", im.refused
		}
		msg := err.Error()
		switch {
		case strings.Contains(msg, jsonnetSizeError):
			if strings.Contains(msg, "nesting deeper") {
				return "", limitf(file, "nesting depth", "the output nests deeper than %d levels", req.MaxDepth)
			}
			return "", limitf(file, "rendered size", "the output is larger than %d bytes", req.MaxBytes)
		case strings.Contains(msg, "max stack frames exceeded"):
			return "", limitf(file, "jsonnet stack", "the evaluation went deeper than %d calls (endless recursion?)", JsonnetMaxStack)
		}
		return "", fmt.Errorf("%s: jsonnet: %s", file, strings.TrimSpace(msg))
	}
	if int64(len(out)) > req.MaxBytes {
		return "", limitf(file, "rendered size", "the output is larger than %d bytes", req.MaxBytes)
	}
	return out, nil
}

// jsonType names a decoded JSON value's type.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "number"
}
