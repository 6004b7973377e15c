//go:build !linux

package sandbox

import (
	"runtime"
	"syscall"
)

// netnsSupported says whether a worker may be started in a network
// namespace of its own: only Linux has them.
const netnsSupported = false

// sysProcAttr has nothing to add outside Linux.
func sysProcAttr(bool) *syscall.SysProcAttr { return nil }

// confine can only report: outside Linux there is no seccomp, no network
// namespace and no Landlock. The worker still has an empty environment
// (no PATH for kustomize to find git on), no descriptor but its pipes, an
// empty private working folder, and reads the repository through the
// parent only.
func confine(bool) (Report, error) {
	return Report{
		Exec:    "not enforced on " + runtime.GOOS + ": the worker has an empty environment (no PATH) and kustomize's exec plugins are off, but no kernel filter refuses a program",
		Network: "not enforced on " + runtime.GOOS + ": kdrift's guard refuses remote entries, but no kernel filter refuses a connection",
		FS:      "not enforced on " + runtime.GOOS + ": the worker reads the repository through the parent and is given no path, but could open local files",
	}, nil
}

// setMemoryLimit has no hard ceiling outside Linux; the Go memory limit
// set by the worker still applies.
func setMemoryLimit(int64) {}

// residentBytes cannot be read outside Linux without cgo.
func residentBytes(int) int64 { return 0 }
