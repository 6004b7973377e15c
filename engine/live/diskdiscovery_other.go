//go:build !unix

package live

import (
	"fmt"
	"os"
)

// openPrivate opens path for reading when it is a regular file (not a
// link); ownership is not checked on this platform.
func openPrivate(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return os.Open(path)
}
