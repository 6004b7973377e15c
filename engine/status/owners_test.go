package status

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestEveryOwnerClassIsRanked fails when an OwnerClass constant is declared
// without a place in OwnerClasses (and so without a rank, and without the
// UI's style, which its own test checks against OwnerClasses).
func TestEveryOwnerClassIsRanked(t *testing.T) {
	t.Parallel()
	declared := ownerClassConsts(t)
	if len(declared) == 0 {
		t.Fatal("found no OwnerClass constants: the test lost track of status.go")
	}
	listed := map[OwnerClass]bool{}
	for _, c := range OwnerClasses() {
		listed[c] = true
	}
	for name, value := range declared {
		if !listed[OwnerClass(value)] {
			t.Errorf("%s (%q) is not in ownerClasses: give it a rank there", name, value)
		}
	}
	if len(listed) != len(declared) {
		t.Errorf("ownerClasses lists %d classes, %d are declared", len(listed), len(declared))
	}
}

func TestOwnerClassRank(t *testing.T) {
	t.Parallel()
	tests := []struct {
		hi, lo OwnerClass
	}{
		{OwnerPerson, OwnerController},
		{OwnerController, OwnerKdrift},
		{OwnerKdrift, OwnerDefaulted},
		{OwnerDefaulted, OwnerClass("from-a-newer-engine")},
	}
	for _, tt := range tests {
		if tt.hi.Rank() >= tt.lo.Rank() {
			t.Errorf("%s ranks %d, not before %s (%d)", tt.hi, tt.hi.Rank(), tt.lo, tt.lo.Rank())
		}
	}
	seen := map[int]OwnerClass{}
	for _, c := range OwnerClasses() {
		if prev, dup := seen[c.Rank()]; dup {
			t.Errorf("%s and %s share rank %d", prev, c, c.Rank())
		}
		seen[c.Rank()] = c
	}
}

// ownerClassConsts reads this package's source for every constant of type
// OwnerClass, by name, with its string value.
func ownerClassConsts(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "OwnerClass" {
					continue
				}
				for i, n := range vs.Names {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						out[n.Name] = lit.Value[1 : len(lit.Value)-1]
					}
				}
			}
		}
	}
	return out
}
