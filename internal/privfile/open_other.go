//go:build !unix

package privfile

import (
	"fmt"
	"os"
)

// Open opens path for reading when it is a regular file (not a
// link); ownership is not checked on this platform.
func Open(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return os.Open(path)
}
