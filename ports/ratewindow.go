package ports

import "time"

// RateWindow is the upstream's request window as the last answer that
// announced one described it (the Postman adapter reads it from the
// X-RateLimit-* and RateLimit-Policy headers; docs/UPSTREAM.md). It is what
// the service said, never an estimate: the gateway does not count its own
// dispatches against it. The control page and /metrics show it.
type RateWindow struct {
	// Known: an answer carried a readable X-RateLimit-Remaining; every other
	// field is meaningless without it.
	Known bool
	// Limit is X-RateLimit-Limit (0 when absent or unreadable).
	Limit int
	// Remaining is X-RateLimit-Remaining: the requests the service said were
	// left in its window.
	Remaining int
	// Reset is when the service said the window resets (zero when it did not
	// say in a readable form); the adapter bounds it.
	Reset time.Time
	// Window is the length of the service's window from RateLimit-Policy's
	// w parameter (0 when absent or unreadable).
	Window time.Duration
	// Seen is when the answer that carried it arrived.
	Seen time.Time
}

// HeldFor is the one rule of the window (docs/UPSTREAM.md): when the service
// said no request remains and its reset is still ahead at now, a fresh turn
// waits until then. 0 means it may be sent. The upstream adapter applies it
// before sending a fresh turn (never tool results); the control page shows
// it.
func (w RateWindow) HeldFor(now time.Time) time.Duration {
	if !w.Known || w.Remaining > 0 || w.Reset.IsZero() {
		return 0
	}
	return max(w.Reset.Sub(now), 0)
}
