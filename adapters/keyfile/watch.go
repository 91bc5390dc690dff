package keyfile

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/pmgate/pmgate/domain/keyring"
)

// Cause says why the file was looked at; the log line of a reload names it.
type Cause string

// The causes of a look at the file.
const (
	CausePoll       Cause = "poll"        // the periodic look
	CauseSignal     Cause = "sighup"      // SIGHUP: look now
	CauseUnknownKey Cause = "unknown_key" // a request presented a key no slot has
)

// fileID is what tells one version of the file from another without reading
// it (see idOf).
type fileID struct {
	dev, ino uint64
	size     int64
	mod      int64 // modification time, ns
	change   int64 // change time (ctime), ns
}

// Watcher is the one owner of what the key file gave a running gateway: the
// content in force and the file it was read from. Every look at the file —
// the poll, SIGHUP, a request with a key no slot has — goes through it, under
// its lock, and compares with the content whose set is in force whoever loaded
// it: a revocation that brings the file back to bytes an earlier look saw is
// still a change from what is in force.
//
// A valid new content is passed to apply. An invalid one is passed to
// refused, and the previous set stays in force except for its revocations:
// when the refused file can still be read as a list of slots, kept reports
// which slots (id and digest) it still has, and a slot it no longer has must
// be dropped (kept is nil when nothing can be concluded). A content is
// reported once, not on every look. Both run under the Watcher's lock, so
// sets are applied in the order the contents were read.
type Watcher struct {
	path    string
	models  []string
	apply   func(keyring.Ring, Cause)
	refused func(err error, kept func(id string, digest [32]byte) bool, cause Cause)

	mu   sync.Mutex
	last [32]byte // the SHA-256 of the content in force; zero after a file that could not be read
	seen fileID   // the file the last look read (zero: the next unknown key reads it)
}

// NewWatcher returns the watcher of the file at path whose content with
// SHA-256 loaded is in force (the one read at start-up). models are the
// configured public model ids (nil skips the allowlist check).
func NewWatcher(path string, models []string, loaded [32]byte, apply func(keyring.Ring, Cause),
	refused func(err error, kept func(id string, digest [32]byte) bool, cause Cause)) *Watcher {
	return &Watcher{path: path, models: models, apply: apply, refused: refused, last: loaded}
}

// Run looks at the file every interval and whenever trigger fires (SIGHUP),
// until ctx ends. The first look comes one interval after the start, and
// compares with the content loaded at start-up, so a change made in between is
// applied too.
func (w *Watcher) Run(ctx context.Context, every time.Duration, trigger <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		cause := CausePoll
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-trigger:
			cause = CauseSignal
		}
		w.Look(cause)
	}
}

// Look reads the file — whatever its size, times or inode say, so a file
// renamed over the path with a preserved modification time is seen too — and
// applies its content unless it is the content in force. It reports whether
// a new set was applied.
func (w *Watcher) Look(cause Cause) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.look(cause)
}

// Refresh is the check of a request whose key matches no slot, so a key
// `gateway keys new` just printed works on its first request: one stat, and
// the file is read only when it is not the file the last look read (another
// device, inode, size, modification or change time). A flood of unknown keys
// costs a stat each. It reports whether a new set was applied.
func (w *Watcher) Refresh() bool {
	st, err := os.Stat(w.path)
	if err != nil {
		return false // the poll reports it
	}
	id := idOf(st)
	w.mu.Lock()
	defer w.mu.Unlock()
	if id == w.seen {
		return false
	}
	w.seen = id // a file that cannot be read is tried once, not on every unknown key
	return w.look(CauseUnknownKey)
}

func (w *Watcher) look(cause Cause) bool {
	v, err := read(w.path, false)
	if err != nil {
		// Reported when it starts (or on SIGHUP); the keys in force stay.
		if w.last != ([32]byte{}) || cause == CauseSignal {
			w.refused(err, nil, cause)
		}
		w.last = [32]byte{}
		return false
	}
	w.seen = v.id
	if v.sum == w.last {
		return false
	}
	r, err := keyring.Parse(v.data, w.models)
	w.last = v.sum
	if err != nil {
		w.refused(err, keyring.Listed(v.data), cause)
		return false
	}
	w.apply(r, cause)
	return true
}
