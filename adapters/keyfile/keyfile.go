// Package keyfile reads, edits and watches the key file (PROVIDER_KEYS_FILE)
// whose format and rules are domain/keyring's.
//
// Edits are atomic: the new content goes to a temporary file in the same
// directory, is synced, and replaces the file by rename, so a reader sees the
// old file or the new one, never a mix. Two edits never interleave: an edit
// holds an exclusive lock on FILE.lock, and it refuses to replace a file whose
// content changed since it was read (an edit by hand meanwhile).
package keyfile

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/keyring"
)

// MaxFileBytes bounds the key file.
const MaxFileBytes = 1 << 20

// ErrBusy is returned by Edit when another edit holds the lock.
var ErrBusy = errors.New("keyfile: another edit of the key file is in progress")

// ErrChanged is returned by Edit when the file changed while it was edited.
var ErrChanged = errors.New("keyfile: the key file changed during the edit; nothing was written")

// version is one reading of the file: its bytes, their SHA-256 and the
// identity of the file they were read from.
type version struct {
	data []byte
	sum  [32]byte
	id   fileID
}

// read returns the file's bytes and their SHA-256. A missing file reads as
// empty when missingOK. Only a regular file is read (a FIFO or a device at the
// path would block or never end), and at most MaxFileBytes of it: the file is
// opened without blocking and checked on the open descriptor, so a swap after
// a check cannot slip a FIFO in.
func read(path string, missingOK bool) (version, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if missingOK && errors.Is(err, fs.ErrNotExist) {
			return version{sum: sha256.Sum256(nil)}, nil
		}
		return version{}, errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: cannot be read (%s)", osProblem(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return version{}, errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return version{}, errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: cannot be read (%s)", osProblem(err))
	}
	if len(data) > MaxFileBytes {
		return version{}, errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: larger than %d bytes", MaxFileBytes)
	}
	return version{data: data, sum: sha256.Sum256(data), id: idOf(st)}, nil
}

// resolve follows a symbolic link at path to the file it names, so that an
// edit replaces (and locks) the target that every reader of the link sees,
// not the link itself. A missing path resolves to itself.
func resolve(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(path); lerr == nil {
			return "", fmt.Errorf("keyfile: %s is a symbolic link to a missing file", filepath.Base(path))
		}
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("keyfile: resolve: %s", osProblem(err))
	}
	return real, nil
}

// osProblem names an OS error's kind without its path (which is the
// operator's own, but keeps messages uniform).
func osProblem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err.Error()
		}
		return err.Error()
	}
}

// Load reads and validates the file. models are the configured public model
// ids (nil skips the allowlist check).
func Load(path string, models []string) (keyring.Ring, [32]byte, error) {
	v, err := read(path, false)
	if err != nil {
		return keyring.Ring{}, v.sum, err
	}
	r, err := keyring.Parse(v.data, models)
	return r, v.sum, err
}

// Edit applies fn to the file's ring under the edit lock and writes the
// result atomically. A missing file is an empty ring when create is true. It
// returns ErrBusy when another edit holds the lock and ErrChanged when the
// file changed between reading and replacing it.
func Edit(path string, models []string, create bool, fn func(keyring.Ring) (keyring.Ring, error)) error {
	path, err := resolve(path)
	if err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("keyfile: lock: %s", osProblem(err))
	}
	defer lock.Close()
	if lockHook != nil {
		lockHook()
	}
	if err := tryLock(lock); err != nil {
		return ErrBusy
	}
	defer unlock(lock) //nolint:errcheck // closing releases it too
	// The lock file is removed while the lock is held, so none stays behind.
	// An edit that opened it just before the removal holds a lock on a file
	// no longer at the path: it sees that below and answers busy, so two
	// edits never both believe they hold the lock.
	if !sameLock(lock, path+".lock") {
		return ErrBusy
	}
	defer os.Remove(path + ".lock") //nolint:errcheck // best effort; the next edit recreates it

	v, err := read(path, create)
	if err != nil {
		return err
	}
	var r keyring.Ring
	if len(v.data) > 0 {
		if r, err = keyring.Parse(v.data, models); err != nil {
			return err
		}
	}
	next, err := fn(r)
	if err != nil {
		return err
	}
	return replace(path, keyring.Marshal(next), v.sum, create)
}

// sameLock reports whether the locked file is still the one at path.
func sameLock(lock *os.File, path string) bool {
	held, err := lock.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(held, now)
}

// lockHook runs between opening the lock file and locking it; tests use it to
// remove the lock file under the edit, as another edit ending then would.
var lockHook func()

// editHook runs between writing the temporary file and the final check; tests
// use it to simulate an edit by hand at the worst moment.
var editHook func()

func replace(path string, content []byte, readSum [32]byte, create bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("keyfile: temporary file: %s", osProblem(err))
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	// A new file is the editor's alone (0600). An existing one keeps its
	// owner, group and group bits (never world bits): a file that root
	// edits for a service account (systemd User=pmgate) stays readable by
	// the service, which would otherwise refuse every key after the edit.
	mode := os.FileMode(0o600)
	old, statErr := os.Stat(path)
	if statErr == nil {
		mode = old.Mode().Perm()&0o660 | 0o600
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("keyfile: chmod: %s", osProblem(err))
	}
	if statErr == nil {
		if err := keepOwner(tmp, old); err != nil {
			tmp.Close()
			return fmt.Errorf("keyfile: the file's owner cannot be kept (%s): run the edit as its owner, or as root", osProblem(err))
		}
	}
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return fmt.Errorf("keyfile: write: %s", osProblem(err))
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("keyfile: sync: %s", osProblem(err))
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keyfile: close: %s", osProblem(err))
	}
	if editHook != nil {
		editHook()
	}
	if now, err := read(path, create); err != nil || now.sum != readSum {
		return ErrChanged
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("keyfile: rename: %s", osProblem(err))
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename durable where the platform allows
		d.Close()
	}
	return nil
}
