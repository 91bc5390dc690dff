package keyfile

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/keyring"
)

func newSlot(id string) keyring.Slot {
	return keyring.Slot{ID: id, Digest: sha256.Sum256([]byte("key-of-" + id)), Created: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
}

func add(id string) func(keyring.Ring) (keyring.Ring, error) {
	return func(r keyring.Ring) (keyring.Ring, error) { return r.Add(newSlot(id), nil) }
}

func TestEditCreatesTheFileAndWritesAtomically(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.True(Edit(path, nil, false, add("a")) != nil) // without create, a missing file is an error
	is.NoErr(Edit(path, nil, true, add("a")))
	is.NoErr(Edit(path, nil, false, add("b")))
	r, _, err := Load(path, nil)
	is.NoErr(err)
	is.Equal(len(r.Slots), 2)
	st, err := os.Stat(path)
	is.NoErr(err)
	is.Equal(st.Mode().Perm(), os.FileMode(0o600)) // only the owner reads the digests
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		is.True(!strings.Contains(e.Name(), ".tmp-")) // no temporary file is left behind
	}
}

func TestAFailedEditWritesNothing(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	before, _ := os.ReadFile(path)
	is.True(Edit(path, nil, false, add("a")) != nil) // a duplicate id is refused
	after, _ := os.ReadFile(path)
	is.Equal(string(before), string(after)) // and the file is unchanged
}

func TestAConcurrentEditIsRefused(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	is.NoErr(err)
	defer lock.Close()
	is.NoErr(syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	is.True(errors.Is(Edit(path, nil, false, add("b")), ErrBusy)) // another edit holds the lock
	is.NoErr(syscall.Flock(int(lock.Fd()), syscall.LOCK_UN))
	is.NoErr(Edit(path, nil, false, add("b"))) // and works once it is released
}

// TestAnEditLeavesNoLockFile: the lock file goes with the edit that made it,
// and an edit that locked a lock file already removed by another edit answers
// busy instead of editing alongside it.
func TestAnEditLeavesNoLockFile(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	_, err := os.Stat(path + ".lock")
	is.True(errors.Is(err, os.ErrNotExist)) // no .lock stays behind
	stale, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	is.NoErr(err)
	defer stale.Close()
	is.NoErr(os.Remove(path + ".lock")) // the holder of the lock removed it
	is.NoErr(os.WriteFile(path+".lock", nil, 0o600))
	is.True(sameLock(stale, path+".lock") == false) // the stale handle is not the lock at the path
	is.NoErr(Edit(path, nil, false, add("b")))
}

// Not parallel: it sets the package's edit hook.
func TestAnEditByHandDuringAnEditIsNotOverwritten(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	handEdit := keyring.Marshal(keyring.Ring{Slots: []keyring.Slot{newSlot("by-hand")}})
	editHook = func() { is.NoErr(os.WriteFile(path, handEdit, 0o600)) }
	defer func() { editHook = nil }()
	is.True(errors.Is(Edit(path, nil, false, add("b")), ErrChanged)) // the change is detected
	now, _ := os.ReadFile(path)
	is.Equal(string(now), string(handEdit)) // and the hand edit survives
}

func TestWatchAppliesValidChangesAndKeepsThePreviousSetOnABrokenFile(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	_, sum, err := Load(path, nil)
	is.NoErr(err)
	applied := make(chan keyring.Ring, 4)
	refused := make(chan error, 4)
	trigger := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewWatcher(path, nil, sum, func(r keyring.Ring, _ Cause) { applied <- r },
			func(err error, _ func(string, [32]byte) bool, _ Cause) { refused <- err }).Run(ctx, 10*time.Millisecond, trigger)
	}()
	defer func() { cancel(); <-done }()

	is.NoErr(Edit(path, nil, false, add("b")))
	select {
	case r := <-applied:
		is.Equal(len(r.Slots), 2) // a change is picked up without a restart
	case <-time.After(5 * time.Second):
		t.Fatal("change not applied")
	}

	is.NoErr(os.WriteFile(path, []byte(`{"version":1,"slots":[{"id":"x"`), 0o600))
	select {
	case err := <-refused:
		is.True(strings.Contains(err.Error(), "PROVIDER_KEYS_FILE")) // a broken file is reported
	case <-time.After(5 * time.Second):
		t.Fatal("broken file not reported")
	}
	select {
	case <-applied:
		t.Fatal("a broken file must not replace the set")
	case <-time.After(50 * time.Millisecond):
	}

	// A valid file written with the same size and time is still found by the trigger (SIGHUP).
	is.NoErr(os.WriteFile(path, keyring.Marshal(keyring.Ring{Slots: []keyring.Slot{newSlot("c")}}), 0o600))
	trigger <- struct{}{}
	select {
	case r := <-applied:
		is.Equal(r.Slots[0].ID, "c")
	case <-time.After(5 * time.Second):
		t.Fatal("fixed file not applied")
	}
}

// watch runs a Watcher on path until the test ends and returns its channels.
func watch(t *testing.T, path string, models []string, last [32]byte) (<-chan keyring.Ring, <-chan refusal) {
	applied := make(chan keyring.Ring, 4)
	refused := make(chan refusal, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewWatcher(path, models, last, func(r keyring.Ring, _ Cause) { applied <- r },
			func(err error, kept func(string, [32]byte) bool, _ Cause) { refused <- refusal{err, kept} }).Run(ctx, 10*time.Millisecond, nil)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the watcher did not stop (blocked reading the file?)")
		}
	})
	return applied, refused
}

type refusal struct {
	err  error
	kept func(string, [32]byte) bool
}

func TestWatchAppliesAChangeMadeBetweenTheLoadAndItsStart(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	_, sum, err := Load(path, nil)
	is.NoErr(err)
	is.NoErr(Edit(path, nil, false, keyringRevoke("a"))) // a revocation before the watcher's first look
	applied, _ := watch(t, path, nil, sum)
	select {
	case r := <-applied:
		is.Equal(len(r.Slots), 0) // the revocation is applied
	case <-time.After(5 * time.Second):
		t.Fatal("a change made before the watcher started was never applied")
	}
}

func keyringRevoke(id string) func(keyring.Ring) (keyring.Ring, error) {
	return func(r keyring.Ring) (keyring.Ring, error) { return r.Revoke(id) }
}

func TestAFIFOAtThePathIsRefusedAtOnce(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(syscall.Mkfifo(path, 0o600))
	done := make(chan error, 1)
	go func() { _, _, err := Load(path, nil); done <- err }()
	select {
	case err := <-done:
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "not a regular file"))
	case <-time.After(3 * time.Second):
		// Unblock the reader so the test can end.
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("reading a FIFO blocked")
	}
	is.True(Edit(path, nil, false, add("a")) != nil)
}

func TestAWatchedFileReplacedByAFIFOIsReportedAndTheWatcherGoesOn(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	_, sum, err := Load(path, nil)
	is.NoErr(err)
	applied, refused := watch(t, path, nil, sum)
	is.NoErr(os.Remove(path))
	is.NoErr(syscall.Mkfifo(path, 0o600))
	select {
	case r := <-refused:
		is.True(strings.Contains(r.err.Error(), "not a regular file"))
	case <-time.After(5 * time.Second):
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close() // unblock a reader stuck on the FIFO
		}
		t.Fatal("a FIFO was not reported")
	}
	is.NoErr(os.Remove(path))
	is.NoErr(os.WriteFile(path, keyring.Marshal(keyring.Ring{Slots: []keyring.Slot{newSlot("b")}}), 0o600))
	select {
	case r := <-applied:
		is.Equal(r.Slots[0].ID, "b") // the watcher is not wedged
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher stopped after the FIFO")
	}
}

func TestAnEditThroughASymlinkEditsTheTargetAndKeepsTheLink(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "shared", "keys.json")
	is.NoErr(os.MkdirAll(filepath.Dir(target), 0o700))
	is.NoErr(Edit(target, nil, true, add("a")))
	link := filepath.Join(dir, "keys.json")
	is.NoErr(os.Symlink(target, link))
	is.NoErr(Edit(link, nil, false, keyringRevoke("a")))
	fi, err := os.Lstat(link)
	is.NoErr(err)
	is.True(fi.Mode()&os.ModeSymlink != 0) // the link is still a link
	r, _, err := Load(target, nil)
	is.NoErr(err)
	is.Equal(len(r.Slots), 0) // and the target (what other replicas read) lost the key
}

func TestARefusedFileStillAppliesItsRevocations(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	is.NoErr(Edit(path, nil, false, add("b")))
	_, sum, err := Load(path, []string{"m"})
	is.NoErr(err)
	_, refused := watch(t, path, []string{"m"}, sum)
	// b revoked, and a's allowlist names a model serve does not know: the file is refused.
	a := newSlot("a")
	a.Models = []string{"unknown"}
	// Written whole at once (a temporary file renamed over it): a poll that
	// read a file half written in place would see an unreadable one first.
	tmp := path + ".new"
	is.NoErr(os.WriteFile(tmp, keyring.Marshal(keyring.Ring{Slots: []keyring.Slot{a}}), 0o600))
	is.NoErr(os.Rename(tmp, path))
	select {
	case r := <-refused:
		is.True(r.kept != nil)                     // the file was readable enough to see its slots
		is.True(r.kept("a", newSlot("a").Digest))  // a stays (its old definition)
		is.True(!r.kept("b", newSlot("b").Digest)) // b's revocation takes effect
	case <-time.After(5 * time.Second):
		t.Fatal("refusal not reported")
	}
	is.NoErr(os.WriteFile(path, []byte(`{"version":1,"slots":[{"id":"a"`), 0o600))
	select {
	case r := <-refused:
		is.True(r.kept == nil) // unreadable: nothing can be concluded, the previous set stays
	case <-time.After(5 * time.Second):
		t.Fatal("refusal not reported")
	}
}

func TestAnEditKeepsTheFilesOwnerGroupAndGroupBits(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	is.NoErr(os.Chmod(path, 0o644))
	owned := os.Getuid() == 0 // only root can give a file to another user
	if owned {
		is.NoErr(os.Chown(path, 65534, 65534)) // a service account's file (systemd User=)
	}
	is.NoErr(Edit(path, nil, false, add("b"))) // an owner's edit, as root
	st, err := os.Stat(path)
	is.NoErr(err)
	is.Equal(st.Mode().Perm(), os.FileMode(0o640)) // the group still reads it; the world never does
	if owned {
		sys := st.Sys().(*syscall.Stat_t)
		is.Equal(sys.Uid, uint32(65534)) // the service still owns it
		is.Equal(sys.Gid, uint32(65534))
	}
}
