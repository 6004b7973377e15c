package gittest

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"testing"
)

// Files reads every file under folder root of the disk (a test's
// testdata) into repository files under prefix, ready for Commit.
func Files(t testing.TB, root, prefix string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files[path.Join(prefix, filepath.ToSlash(rel))] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
