package postman

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// The service's rate-limit headers (docs/UPSTREAM.md, "Rate-limit window"):
// every answer of the chat route carries X-RateLimit-Limit: 30,
// X-RateLimit-Remaining, X-RateLimit-Reset in epoch milliseconds and
// RateLimit-Policy: 30;w=60 (ps2Api internal/provider/ossfunc_test.go:43,
// parsed by errors.go:36-61; confidence: code, a captured-looking fixture).
const (
	hdrRateLimit     = "X-RateLimit-Limit"
	hdrRateRemaining = "X-RateLimit-Remaining"
	hdrRateReset     = "X-RateLimit-Reset"
	hdrRatePolicy    = "RateLimit-Policy"
)

// Thresholds of X-RateLimit-Reset's three readings: at least epochMillis is
// epoch milliseconds (what the service sends: 13 digits until the year
// 2286), at least epochSeconds is epoch seconds (10 digits), anything
// smaller is a delay in seconds (the IETF RateLimit drafts' form).
const (
	epochMillis  = 1_000_000_000_000
	epochSeconds = 1_000_000_000
)

// rateWindow holds the window the service's last answer announced. One per
// Client: the window is the account's, and a Client serves one credential.
type rateWindow struct {
	mu sync.Mutex
	w  ports.RateWindow
}

// record keeps the window an answer announced; an answer without a readable
// X-RateLimit-Remaining says nothing and changes nothing.
func (r *rateWindow) record(w ports.RateWindow) {
	if !w.Known {
		return
	}
	r.mu.Lock()
	r.w = w
	r.mu.Unlock()
}

func (r *rateWindow) load() ports.RateWindow {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w
}

// parseRateWindow reads the rate-limit headers of one answer received at
// now. Each header is read defensively: absent, repeated, negative or
// non-numeric values are ignored, one by one. Without a readable
// X-RateLimit-Remaining the result is not Known.
//
// The reset is bounded: never later than the policy's window after now (the
// service cannot hold a request longer than its window), or maxRetryAfter
// without a policy. When the service said none remain but gave no readable
// reset, the policy's window from now is the reset; without either, no reset
// is known and nothing is held.
func parseRateWindow(h http.Header, now time.Time) ports.RateWindow {
	remaining, ok := headerInt(h, hdrRateRemaining)
	if !ok {
		return ports.RateWindow{}
	}
	w := ports.RateWindow{Known: true, Remaining: int(remaining), Seen: now}
	if n, ok := headerInt(h, hdrRateLimit); ok {
		w.Limit = int(n)
	}
	w.Window = policyWindow(h)
	bound := maxRetryAfter
	if w.Window > 0 {
		bound = w.Window
	}
	if n, ok := headerInt(h, hdrRateReset); ok {
		var reset time.Time
		switch {
		case n >= epochMillis:
			reset = time.UnixMilli(n)
		case n >= epochSeconds:
			reset = time.Unix(n, 0)
		default:
			reset = now.Add(time.Duration(n) * time.Second)
		}
		w.Reset = reset
		if reset.After(now.Add(bound)) {
			w.Reset = now.Add(bound)
		}
	}
	if w.Reset.IsZero() && w.Remaining == 0 && w.Window > 0 {
		w.Reset = now.Add(w.Window)
	}
	return w
}

// headerInt reads a header that must appear once as a non-negative decimal
// integer of at most 15 digits.
func headerInt(h http.Header, name string) (int64, bool) {
	v := h.Values(name)
	if len(v) != 1 {
		return 0, false
	}
	s := strings.TrimSpace(v[0])
	if len(s) > 15 || !isDigits(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// policyWindow reads the w parameter of RateLimit-Policy's first policy
// ("30;w=60", or the later drafts' `"name";q=30;w=60`): the window's length,
// at most maxRetryAfter; 0 when absent or unreadable.
func policyWindow(h http.Header) time.Duration {
	v := h.Values(hdrRatePolicy)
	if len(v) != 1 {
		return 0
	}
	first, _, _ := strings.Cut(v[0], ",")
	for _, p := range strings.Split(first, ";")[1:] {
		k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || strings.TrimSpace(k) != "w" {
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) > 15 || !isDigits(val) {
			return 0
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n <= 0 {
			return 0
		}
		return min(time.Duration(n)*time.Second, maxRetryAfter)
	}
	return 0
}

// RateWindow returns the window the service's last answer announced (not
// Known before any answer carried one). A Client built again (a reload)
// starts without one.
func (c *Client) RateWindow() ports.RateWindow { return c.window.load() }

// windowRefusal refuses a fresh turn (USER_QUERY) before anything is sent
// while the service's window is spent: a dispatch it will refuse still costs
// the owner. Tool results (TOOL_RESPONSE) are never held: the turn they
// finish was admitted, and holding them would leave its group waiting.
func (c *Client) windowRefusal(req ports.UpstreamRequest) error {
	if req.Continuation != nil {
		return nil
	}
	d := c.window.load().HeldFor(c.now())
	if d <= 0 {
		return nil
	}
	cause := errs.Newf(errs.UpstreamRateLimited, "the service's window has no request left for %d s; nothing was sent", safeInt(int(d/time.Second)))
	return notSent(&retryAfterError{
		cause: refusal(cause, "", "Nothing was sent: the upstream's last answer said no request remains in its window until it resets."),
		after: max(d, minRetryAfter),
	})
}
