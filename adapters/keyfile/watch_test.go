package keyfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/keyring"
)

// recorder is a Watcher's callbacks: what it applied and refused.
type recorder struct {
	applied []keyring.Ring
	causes  []Cause
	refused []refusal
}

func (r *recorder) watcher(path string, models []string, loaded [32]byte) *Watcher {
	return NewWatcher(path, models, loaded,
		func(ring keyring.Ring, c Cause) { r.applied = append(r.applied, ring); r.causes = append(r.causes, c) },
		func(err error, kept func(string, [32]byte) bool, _ Cause) {
			r.refused = append(r.refused, refusal{err, kept})
		})
}

func (r *recorder) ids() []string {
	last := r.applied[len(r.applied)-1]
	ids := make([]string, len(last.Slots))
	for i, s := range last.Slots {
		ids[i] = s.ID
	}
	return ids
}

// TestARevocationRightAfterAnUnknownKeyLoadedTheSlotIsApplied: the check of an
// unknown key loads a new slot; its revocation brings the file back to the
// very bytes loaded at start-up. That is still a change from the set in
// force, for the poll and for SIGHUP alike.
func TestARevocationRightAfterAnUnknownKeyLoadedTheSlotIsApplied(t *testing.T) {
	for _, cause := range []Cause{CausePoll, CauseSignal} {
		t.Run(string(cause), func(t *testing.T) {
			is := is.New(t)
			path := filepath.Join(t.TempDir(), "keys.json")
			is.NoErr(Edit(path, nil, true, add("a")))
			_, started, err := Load(path, nil)
			is.NoErr(err)
			var rec recorder
			w := rec.watcher(path, nil, started)

			is.NoErr(Edit(path, nil, false, add("fresh"))) // keys new while serve runs
			is.True(w.Refresh())                           // its key's first request loads it
			is.Equal(rec.ids(), []string{"a", "fresh"})
			is.Equal(rec.causes[0], CauseUnknownKey)

			is.NoErr(Edit(path, nil, false, keyringRevoke("fresh"))) // revoked at once
			_, now, err := Load(path, nil)
			is.NoErr(err)
			is.Equal(now, started) // the file is byte for byte the one loaded at start-up
			is.True(w.Look(cause)) // and yet the revocation is applied
			is.Equal(rec.ids(), []string{"a"})
			is.True(!w.Look(cause)) // once
		})
	}
}

// sameSizeRing is a file of one slot whose id has the length of "b1", so two
// of them differ only in content.
func sameSizeRing(id string) []byte {
	return keyring.Marshal(keyring.Ring{Slots: []keyring.Slot{newSlot(id)}})
}

// renameWithTime writes content to a temporary file with mtime, then renames
// it over path (what `cp -p` to a temporary name, `rsync -a` or `touch -r`
// then `mv` do).
func renameWithTime(t *testing.T, path string, content []byte, mtime time.Time) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestASameSizeFileWithAPreservedTimeIsSeen: a file renamed over the key file
// (or written in place) with the same size and the old modification time is
// another version of it, for the poll and for the check of an unknown key.
func TestASameSizeFileWithAPreservedTimeIsSeen(t *testing.T) {
	for name, swap := range map[string]func(t *testing.T, path string, content []byte, mtime time.Time){
		"renamed over": renameWithTime,
		"written in place": func(t *testing.T, path string, content []byte, mtime time.Time) {
			t.Helper()
			time.Sleep(50 * time.Millisecond) // past the kernel's timestamp granularity: a new change time
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		},
	} {
		for _, check := range []string{"poll", "unknown key"} {
			t.Run(name+"/"+check, func(t *testing.T) {
				is := is.New(t)
				path := filepath.Join(t.TempDir(), "keys.json")
				is.NoErr(os.WriteFile(path, sameSizeRing("b1"), 0o600))
				before, err := os.Stat(path)
				is.NoErr(err)
				var rec recorder
				w := rec.watcher(path, nil, [32]byte{})
				is.True(w.Look(CausePoll)) // b1 in force, its file seen

				swap(t, path, sameSizeRing("b2"), before.ModTime())
				after, err := os.Stat(path)
				is.NoErr(err)
				is.Equal(after.Size(), before.Size())            // the same size
				is.True(after.ModTime().Equal(before.ModTime())) // and the same modification time
				if check == "poll" {
					is.True(w.Look(CausePoll)) // still applied by the poll
				} else {
					is.True(w.Refresh()) // and by an unknown key's check
				}
				is.Equal(rec.ids(), []string{"b2"})
			})
		}
	}
}

// TestAnEditWhoseLockFileIsRemovedUnderItDoesNotGoOn: an edit opens FILE.lock;
// before it locks it, the edit that held it ends and removes it, and a third
// edit creates and locks a new one. The first edit's lock is on a file no
// longer at the path: it must answer busy, not edit beside the third.
func TestAnEditWhoseLockFileIsRemovedUnderItDoesNotGoOn(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	before, err := os.ReadFile(path)
	is.NoErr(err)
	var third *os.File
	lockHook = func() {
		is.NoErr(os.Remove(path + ".lock")) // the holder ends
		third, err = os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
		is.NoErr(err)
		is.NoErr(syscall.Flock(int(third.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)) // the third edit holds the lock at the path
	}
	defer func() { lockHook = nil }()
	err = Edit(path, nil, false, add("b"))
	lockHook = nil
	defer third.Close()
	is.True(errors.Is(err, ErrBusy)) // two edits never both believe they hold the lock
	now, _ := os.ReadFile(path)
	is.Equal(string(now), string(before)) // and nothing was written beside the lock's holder
	_, err = os.Stat(path + ".lock")
	is.NoErr(err) // the third edit's lock file is left to it
}

// TestARefusedFileWithARotatedKeyRevokesTheOldOne: a refused file that lists
// a slot under the same id with another digest revokes the key in force.
func TestARefusedFileWithARotatedKeyRevokesTheOldOne(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(Edit(path, nil, true, add("a")))
	is.NoErr(Edit(path, nil, false, add("b")))
	_, sum, err := Load(path, []string{"m"})
	is.NoErr(err)
	var rec recorder
	w := rec.watcher(path, []string{"m"}, sum)
	rotated := newSlot("a")
	rotated.Digest[0] ^= 0xff // a's key rotated by hand
	b := newSlot("b")
	b.Models = []string{"unknown"} // and a model serve does not know: the file is refused
	is.NoErr(os.WriteFile(path, keyring.Marshal(keyring.Ring{Slots: []keyring.Slot{rotated, b}}), 0o600))
	is.True(!w.Look(CausePoll))
	is.Equal(len(rec.refused), 1)
	kept := rec.refused[0].kept
	is.True(kept != nil)
	is.True(!kept("a", newSlot("a").Digest)) // the old key of a is revoked
	is.True(kept("b", newSlot("b").Digest))  // b keeps its previous definition
}

// TestASameSizeFileWithAPreservedTimeIsSeenByTheRunningPoll: the same, through
// the poll loop a running gateway uses.
func TestASameSizeFileWithAPreservedTimeIsSeenByTheRunningPoll(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	is.NoErr(os.WriteFile(path, sameSizeRing("b1"), 0o600))
	before, err := os.Stat(path)
	is.NoErr(err)
	_, sum, err := Load(path, nil)
	is.NoErr(err)
	applied, _ := watch(t, path, nil, sum)
	time.Sleep(100 * time.Millisecond) // the poll has looked at b1's file a few times
	renameWithTime(t, path, sameSizeRing("b2"), before.ModTime())
	select {
	case r := <-applied:
		is.Equal(r.Slots[0].ID, "b2") // applied by the poll
	case <-time.After(5 * time.Second):
		t.Fatal("a same-size file renamed over the key file with its time preserved was never applied")
	}
}
