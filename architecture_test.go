package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "kdrift.dev/kdrift"

// architectureTable reads the package table of ARCHITECTURE.md: each
// package (as a folder relative to the module root, "." for the root) and
// the kdrift packages it may import.
func architectureTable(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatalf("ARCHITECTURE.md: %v", err)
	}
	text := string(data)
	start := strings.Index(text, "## Packages and what each may import")
	if start < 0 {
		t.Fatal(`ARCHITECTURE.md has no section "Packages and what each may import"`)
	}
	text = text[start:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	code := regexp.MustCompile("`([^`]+)`")
	table := map[string][]string{}
	for line := range strings.SplitSeq(text, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		m := code.FindStringSubmatch(cells[1])
		pkg := m[1]
		if _, dup := table[pkg]; dup {
			t.Errorf("ARCHITECTURE.md lists %s twice", pkg)
		}
		allowed := []string{}
		for _, m := range code.FindAllStringSubmatch(cells[3], -1) {
			allowed = append(allowed, m[1])
		}
		table[pkg] = allowed
	}
	if len(table) == 0 {
		t.Fatal("ARCHITECTURE.md's package table has no rows")
	}
	return table
}

// modulePackages returns every package folder of kdrift's module with the
// kdrift packages its non-test files import.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		imports := pkgs[dir]
		if imports == nil {
			imports = []string{}
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if rest, ok := strings.CutPrefix(path, modulePath+"/"); ok && !slices.Contains(imports, rest) {
				imports = append(imports, rest)
			}
		}
		pkgs[dir] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestArchitectureListsEveryPackage: ARCHITECTURE.md's package table names
// every package of the module and no other, and each package imports only
// the kdrift packages its row allows (engine/ never imports ui/).
func TestArchitectureListsEveryPackage(t *testing.T) {
	table := architectureTable(t)
	pkgs := modulePackages(t)
	for pkg := range table {
		if _, ok := pkgs[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md lists %s, which is not a package of the module", pkg)
		}
	}
	for pkg, imports := range pkgs {
		allowed, ok := table[pkg]
		if !ok {
			t.Errorf("package %s is not in ARCHITECTURE.md's package table: add its row (what it holds, what it may import)", pkg)
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which its row in ARCHITECTURE.md does not allow: change the import or the row (and say why)", pkg, imp)
			}
			if strings.HasPrefix(pkg, "engine/") && (imp == "ui" || strings.HasPrefix(imp, "ui/")) {
				t.Errorf("%s imports %s: engine/ never imports ui/", pkg, imp)
			}
		}
	}
}

// outsideDoc matches a comment that cites a document outside the
// repository by its usual names (the words are split so that this file
// does not match itself).
var outsideDoc = regexp.MustCompile(`(?i)(design|conventions)` + `\.md|the design` + ` doc|design` + ` document|the design\b|the brief` + `\b`)

// TestCommentsCiteOnlyTheRepository: no Go comment cites a document
// outside the repository; facts the code relies on are in ARCHITECTURE.md.
func TestCommentsCiteOnlyTheRepository(t *testing.T) {
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			_, comment, ok := strings.Cut(line, "//")
			if ok && outsideDoc.MatchString(comment) {
				t.Errorf("%s:%d cites a document outside the repository: cite ARCHITECTURE.md instead", p, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadmeLayoutListsEveryPackage: README's Layout list names every
// package of ARCHITECTURE.md's table (the root as `main.go`) and no
// package the table lacks.
func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	table := architectureTable(t)
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	text := string(data)
	start := strings.Index(text, "\nLayout: ")
	if start < 0 {
		t.Fatal(`README.md has no "Layout:" paragraph`)
	}
	text = text[start:]
	if end := strings.Index(text, "\nTests use the real"); end >= 0 {
		text = text[:end]
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(text, -1) {
		named[m[1]] = true
	}
	for pkg := range table {
		want := pkg
		if pkg == "." {
			want = "main.go"
		}
		if !named[want] {
			t.Errorf("README's Layout list lacks %s (ARCHITECTURE.md's table lists it)", want)
		}
	}
	for name := range named {
		if _, ok := table[name]; !ok && (strings.HasPrefix(name, "engine/") || strings.HasPrefix(name, "internal/") || strings.HasPrefix(name, "ui/")) {
			t.Errorf("README's Layout list names %s, which ARCHITECTURE.md's table does not list", name)
		}
	}
}

// maxInitRegexpInsts bounds the compiled program of a regexp that a
// package variable compiles: every kdrift process, the render worker
// included, compiles those before main, and a bounded repetition such as
// {0,1000} compiles into a program of thousands of instructions (it cost
// every process about 12 ms). Check such a bound apart, by length.
const maxInitRegexpInsts = 150

// TestPackageRegexpsAreSmall: no package-level regexp.MustCompile of a
// literal pattern in kdrift's non-test files compiles into more than
// maxInitRegexpInsts instructions.
func TestPackageRegexpsAreSmall(t *testing.T) {
	consts := packageStringConsts(t)
	parseSources(t, func(p string, f *ast.File) {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			ast.Inspect(gd, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "MustCompile" {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "regexp" {
					return true
				}
				pattern, ok := literalString(call.Args[0], consts[filepath.Dir(p)])
				if !ok {
					return true // built from constants: not checked
				}
				re, err := syntax.Parse(pattern, syntax.Perl)
				if err != nil {
					t.Errorf("%s: %v", p, err)
					return true
				}
				prog, err := syntax.Compile(re.Simplify())
				if err != nil {
					t.Errorf("%s: %v", p, err)
					return true
				}
				if len(prog.Inst) > maxInitRegexpInsts {
					t.Errorf("%s: the package-level regexp %q compiles into %d instructions (at most %d): check a length bound apart", p, pattern, len(prog.Inst), maxInitRegexpInsts)
				}
				return true
			})
		}
	})
}

// packageStringConsts reads, for each folder of kdrift's non-test Go
// files, its package's string constants written as literals.
func packageStringConsts(t *testing.T) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	parseSources(t, func(p string, f *ast.File) {
		dir := filepath.Dir(p)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if v, ok := literalString(vs.Values[i], nil); ok {
						if out[dir] == nil {
							out[dir] = map[string]string{}
						}
						out[dir][name.Name] = v
					}
				}
			}
		}
	})
	return out
}

// parseSources parses every non-test Go file of kdrift's module (outside
// testdata and hidden folders) and calls fn with it.
func parseSources(t *testing.T, fn func(path string, f *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		fn(p, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// literalString is the value of a string literal, of one of consts, or
// of those joined by +.
func literalString(e ast.Expr, consts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		v, ok := consts[e.Name]
		return v, ok
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok := literalString(e.X, consts)
		if !ok {
			return "", false
		}
		b, ok := literalString(e.Y, consts)
		return a + b, ok
	}
	return "", false
}
