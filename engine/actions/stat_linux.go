//go:build linux

package actions

import (
	"os"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// fillStat copies the stat data git compares into an index entry, so `git
// status` need not re-read the file.
func fillStat(e *index.Entry, fi os.FileInfo) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	e.Dev, e.Inode, e.UID, e.GID = uint32(st.Dev), uint32(st.Ino), st.Uid, st.Gid
	e.CreatedAt = time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
}

// pidAlive reports whether a process with this id runs.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
