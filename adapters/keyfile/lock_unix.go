//go:build unix

package keyfile

import (
	"os"
	"syscall"
)

// tryLock takes the exclusive edit lock on f without waiting.
func tryLock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
