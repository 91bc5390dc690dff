//go:build !linux

package main

import "errors"

// processCPUNanos has no equivalent here: cpuNanos falls back to the ticks.
func processCPUNanos(int) (int64, error) { return 0, errors.New("no process CPU clock") }
