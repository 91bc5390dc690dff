//go:build !linux

package main

import "os/exec"

// setDeathSignal has no equivalent here; the rig needs /proc and Linux anyway.
func setDeathSignal(*exec.Cmd) {}
