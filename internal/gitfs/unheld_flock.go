//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package gitfs

import (
	"os"
	"syscall"
)

// unheld says no process holds path's flock: its writer, which takes it
// right after creating the lock file (lockFS.acquire), is gone.
func unheld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}
