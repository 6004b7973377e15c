package main

import (
	"fmt"
	"os"
	"syscall"
)

// dieWithParent asks the kernel to send SIGTERM to this process when its
// parent dies, so a crashed test run never leaves a control plane behind.
func dieWithParent() error {
	if _, _, err := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0); err != 0 {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %v", err)
	}
	// The parent may have died before the prctl took effect.
	if os.Getppid() == 1 {
		return fmt.Errorf("parent process already exited")
	}
	return nil
}
