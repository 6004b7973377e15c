package fluxtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Public example repositories in testdata/flux (copied in part, with
// their licence; see testdata/flux/README.md).
const (
	MultiTenancy       = "flux2-multi-tenancy"
	MonitoringExample  = "flux2-monitoring-example"
	KustomizeHelm      = "flux2-kustomize-helm-example"
	MultiTenancyURL    = "https://github.com/fluxcd/flux2-multi-tenancy"
	MonitoringURL      = "https://github.com/fluxcd/flux2-monitoring-example"
	KustomizeHelmURL   = "https://github.com/fluxcd/flux2-kustomize-helm-example"
	publicExamplesRoot = "testdata/flux"
)

// Public is the files of the public example repository name (one of the
// constants above), by path in that repository, for gittest or a test's
// own repository; LICENSE is left out of the tree.
func Public(t testing.TB, name string) map[string]string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("fluxtest: cannot find the module root")
	}
	root := filepath.Join(filepath.Dir(self), "..", "..", publicExamplesRoot, name)
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "LICENSE" {
			return err
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("fluxtest: example %s: %v (%d files)", name, err, len(files))
	}
	return files
}
