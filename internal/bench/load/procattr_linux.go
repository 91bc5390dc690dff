package main

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the child get SIGKILL if the rig dies without cleaning up.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
