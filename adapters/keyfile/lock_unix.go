//go:build unix

package keyfile

import (
	"os"
	"syscall"
)

// tryLock takes the exclusive edit lock on f without waiting.
func tryLock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// keepOwner gives f the owner and group of old, when they differ from f's.
func keepOwner(f *os.File, old os.FileInfo) error {
	want, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if have, ok := st.Sys().(*syscall.Stat_t); ok && have.Uid == want.Uid && have.Gid == want.Gid {
		return nil
	}
	return f.Chown(int(want.Uid), int(want.Gid))
}
