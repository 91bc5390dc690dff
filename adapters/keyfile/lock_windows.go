//go:build windows

package keyfile

import (
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes the exclusive edit lock on f without waiting.
func tryLock(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
}

func unlock(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

// keepOwner is a no-op on Windows: a replaced file inherits its directory's
// access control.
func keepOwner(*os.File, os.FileInfo) error { return nil }
