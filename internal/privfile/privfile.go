// Package privfile reads and writes kdrift's cache files: files of this
// user alone, which no one else may have written, replaced atomically.
package privfile

import (
	"os"
	"path/filepath"
)

// WriteAtomic writes data to path through a temporary file in the same
// folder and a rename, so a reader sees the old file or the new one,
// never half of one. The folder is made 0700 when missing; the file is
// 0600. Temporary files are named ".tmp-*" (see IsTemp).
func WriteAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is none
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// IsTemp says whether a file name is one of WriteAtomic's temporary files
// (one a killed process left behind may be removed).
func IsTemp(name string) bool { return len(name) > 5 && name[:5] == ".tmp-" }
