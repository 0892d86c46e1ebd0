package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd when the bench dies, so that
// neither redis-server nor a worker outlives a bench stopped by a signal.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
