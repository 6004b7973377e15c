package render

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// FuzzImportCandidates: whatever a .jsonnet file imports, and from
// wherever, every candidate path is a valid path inside the repository,
// and what is refused is an *ImportError.
func FuzzImportCandidates(f *testing.F) {
	for _, s := range []struct{ from, path string }{
		{"apps/a/main.jsonnet", "params.libsonnet"},
		{"apps/a/main.jsonnet", "../../lib/x.libsonnet"},
		{"apps/a/main.jsonnet", "../../../etc/passwd"},
		{"apps/a/main.jsonnet", "/etc/passwd"},
		{"apps/a/main.jsonnet", "https://example.com/x.libsonnet"},
		{"apps/a/main.jsonnet", `C:\x`},
		{"<extvar:x>", "params.libsonnet"},
		{jsonnetMain, "apps/a/main.jsonnet"},
		{jsonnetMain, "../x"},
		{"", "./a/../../b"},
	} {
		f.Add(s.from, s.path)
	}
	f.Fuzz(func(t *testing.T, from, imp string) {
		cands, err := importCandidates(from, imp, "apps/a", []string{"lib", "vendor/k"})
		if err != nil {
			var ie *ImportError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "import") {
				t.Fatalf("refusal %v is not an ImportError", err)
			}
			return
		}
		if len(cands) == 0 {
			t.Fatalf("no candidate and no error for %q from %q", imp, from)
		}
		for _, c := range cands {
			if !fs.ValidPath(c) || c == ".." || strings.HasPrefix(c, "../") || strings.Contains(imp, "://") || strings.HasPrefix(imp, "/") {
				t.Fatalf("import %q from %q gives candidate %q outside the repository", imp, from, c)
			}
		}
	})
}

// TestImportCandidatesOrder: the importing file's folder, then the
// library folders from the last one, then the App's folder, as go-jsonnet's
// FileImporter with Argo CD's library paths looks.
func TestImportCandidatesOrder(t *testing.T) {
	got, err := importCandidates("apps/a/sub/main.jsonnet", "x.libsonnet", "apps/a", []string{"lib", "vendor"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "apps/a/sub/x.libsonnet vendor/x.libsonnet lib/x.libsonnet apps/a/x.libsonnet"; strings.Join(got, " ") != want {
		t.Fatalf("candidates = %v, want %s", got, want)
	}
}
