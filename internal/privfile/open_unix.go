//go:build unix

package privfile

import (
	"fmt"
	"os"
	"syscall"
)

// Open opens path for reading when it is a regular file (not a
// link) owned by this user that neither group nor others may write.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 || !ok || int(st.Uid) != os.Getuid() {
		f.Close()
		return nil, fmt.Errorf("%s: not a private regular file of this user", path)
	}
	return f, nil
}
