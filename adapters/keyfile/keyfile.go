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
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/keyring"
)

// MaxFileBytes bounds the key file.
const MaxFileBytes = 1 << 20

// ErrBusy is returned by Edit when another edit holds the lock.
var ErrBusy = errors.New("keyfile: another edit of the key file is in progress")

// ErrChanged is returned by Edit when the file changed while it was edited.
var ErrChanged = errors.New("keyfile: the key file changed during the edit; nothing was written")

// read returns the file's bytes and their SHA-256. A missing file reads as
// empty when missingOK. Only a regular file is read (a FIFO or a device at the
// path would block or never end), and at most MaxFileBytes of it: the file is
// opened without blocking and checked on the open descriptor, so a swap after
// a check cannot slip a FIFO in.
func read(path string, missingOK bool) ([]byte, [32]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if missingOK && errors.Is(err, fs.ErrNotExist) {
			return nil, sha256.Sum256(nil), nil
		}
		return nil, [32]byte{}, errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: cannot be read (%s)", osProblem(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, [32]byte{}, errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, [32]byte{}, errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: cannot be read (%s)", osProblem(err))
	}
	if len(data) > MaxFileBytes {
		return nil, [32]byte{}, errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: larger than %d bytes", MaxFileBytes)
	}
	return data, sha256.Sum256(data), nil
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
	data, sum, err := read(path, false)
	if err != nil {
		return keyring.Ring{}, sum, err
	}
	r, err := keyring.Parse(data, models)
	return r, sum, err
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

	data, sum, err := read(path, create)
	if err != nil {
		return err
	}
	var r keyring.Ring
	if len(data) > 0 {
		if r, err = keyring.Parse(data, models); err != nil {
			return err
		}
	}
	next, err := fn(r)
	if err != nil {
		return err
	}
	return replace(path, keyring.Marshal(next), sum, create)
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
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("keyfile: chmod: %s", osProblem(err))
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
	if _, now, err := read(path, create); err != nil || now != readSum {
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

// Watch reloads the file when it changes (polled every interval by size,
// modification time and content hash) and whenever trigger fires (SIGHUP). A
// valid new content is passed to apply; an invalid one to refused, and the
// previous set stays in force except for its revocations: when the refused
// file can still be read as a list of slots, kept reports which slots (id and
// digest) it still has, and a slot it no longer has must be dropped (kept is
// nil when nothing can be concluded). It returns when ctx ends. last is the
// hash of the content already applied; the first tick compares the content
// with it, so a change made between that load and the watcher's start is
// applied too.
func Watch(ctx context.Context, path string, models []string, every time.Duration, trigger <-chan struct{}, last [32]byte,
	apply func(keyring.Ring), refused func(err error, kept func(id string, digest [32]byte) bool)) {
	t := time.NewTicker(every)
	defer t.Stop()
	var lastStat statKey // zero: the first tick reads the content
	seen := false
	for {
		forced := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-trigger:
			forced = true
		}
		st, err := os.Stat(path)
		if err != nil {
			if forced || lastStat != (statKey{}) {
				refused(errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: cannot be read (%s)", osProblem(err)), nil)
			}
			lastStat, seen = statKey{}, true
			continue
		}
		k := keyOf(st)
		if !forced && seen && k == lastStat {
			continue
		}
		lastStat, seen = k, true
		data, sum, err := read(path, false)
		if sum == last && err == nil {
			continue
		}
		var r keyring.Ring
		if err == nil {
			r, err = keyring.Parse(data, models)
		}
		if err != nil {
			if sum != last {
				last = sum // report a broken content once, not on every tick
				refused(err, keyring.Listed(data))
			}
			continue
		}
		last = sum
		apply(r)
	}
}

type statKey struct {
	size int64
	mod  time.Time
}

func keyOf(st fs.FileInfo) statKey { return statKey{size: st.Size(), mod: st.ModTime()} }
