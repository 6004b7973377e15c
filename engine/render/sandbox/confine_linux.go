//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// netnsSupported says whether a worker may be started in a network
// namespace of its own (with a user namespace, so no privilege is needed).
const netnsSupported = true

// refused are the system calls the worker's seccomp filter fails with
// EPERM: starting a program; every socket (a render needs none, and
// without one no connection can be opened, whatever the address family);
// and what could undo the confinement or reach other processes.
var refused = []string{
	"execve", "execveat",
	"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
	"ptrace", "process_vm_readv", "process_vm_writev",
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
	"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"kexec_load", "init_module", "finit_module", "delete_module",
}

// sysProcAttr starts the worker in its own process group, killed with
// kdrift, and in a network namespace of its own when netns (with a user
// namespace mapping only kdrift's own user and group).
func sysProcAttr(netns bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if netns {
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// confine restricts the worker before its first render: Landlock (no file
// of the disk but the empty working folder, no TCP, no signals or
// abstract sockets outside the worker) where the kernel has it, then a
// seccomp filter on all threads with no_new_privs. It fails when seccomp
// cannot be installed: a worker that could start a program must not run.
func confine(netns bool) (Report, error) {
	var rep Report
	wd, err := os.Getwd()
	if err != nil {
		return rep, fmt.Errorf("working folder: %w", err)
	}
	// Past its container's memory, the kernel kills the worker rather
	// than kdrift.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	abi, _ := ll.LandlockGetABIVersion()
	if abi > 0 {
		if err := landlock.V9.BestEffort().Restrict(landlock.RWDirs(wd)); err != nil {
			return rep, fmt.Errorf("landlock: %w", err)
		}
	}
	filter := seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: refused}},
		},
	}
	if err := seccomp.LoadFilter(filter); err != nil {
		return rep, fmt.Errorf("seccomp filter: %w", err)
	}
	rep.Exec = "seccomp refuses execve and execveat on every thread (no_new_privs)"
	rep.Network = "seccomp refuses every socket"
	if netns {
		rep.Network += "; own network namespace, no interface up"
	}
	switch {
	case abi >= 4:
		rep.Network += fmt.Sprintf("; Landlock ABI %d refuses TCP", abi)
		rep.FS = fmt.Sprintf("Landlock ABI %d: no file of the disk but an empty private working folder; the repository is read through the parent", abi)
	case abi > 0:
		rep.FS = fmt.Sprintf("Landlock ABI %d: no file of the disk but an empty private working folder; the repository is read through the parent", abi)
	default:
		rep.FS = "not enforced: this kernel has no Landlock; the worker is given no path and reads the repository through the parent, but could open local files"
	}
	return rep, nil
}

// setMemoryLimit has no hard ceiling to set: a Go heap refused memory by
// a data segment limit crashes in ways the parent cannot tell from a bug
// (the runtime faults instead of saying it is out of memory). The parent's
// watch of the resident memory and, in a container, the kernel's OOM
// killer, which picks the worker first (see confine), bound it instead.
func setMemoryLimit(int64) {}

// residentBytes is process pid's resident memory, or 0 when it cannot be
// read.
func residentBytes(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(data)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
