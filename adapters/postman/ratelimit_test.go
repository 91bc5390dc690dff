package postman_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// The service's rate-limit headers (ps2Api internal/provider/ossfunc_test.go:43,
// parsed by errors.go:36-61): X-RateLimit-Limit: 30, X-RateLimit-Remaining,
// X-RateLimit-Reset in epoch milliseconds, RateLimit-Policy: 30;w=60. Each
// header is read on its own, and what cannot be read says nothing.
func TestRateLimitHeadersAreReadDefensively(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 20, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	for _, tc := range []struct {
		name   string
		header map[string][]string
		known  bool
		limit  int
		remain int
		reset  time.Duration // after now; -1: no reset
		window time.Duration
		held   time.Duration
	}{
		{name: "the fixture: epoch milliseconds", header: map[string][]string{"X-RateLimit-Limit": {"30"}, "X-RateLimit-Remaining": {"0"},
			"X-RateLimit-Reset": {ms(59 * time.Second)}, "RateLimit-Policy": {"30;w=60"}},
			known: true, limit: 30, reset: 59 * time.Second, window: time.Minute, held: 59 * time.Second},
		{name: "headroom is never held", header: map[string][]string{"X-RateLimit-Limit": {"30"}, "X-RateLimit-Remaining": {"12"},
			"X-RateLimit-Reset": {ms(30 * time.Second)}, "RateLimit-Policy": {"30;w=60"}},
			known: true, limit: 30, remain: 12, reset: 30 * time.Second, window: time.Minute},
		{name: "epoch seconds", header: map[string][]string{"X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {strconv.FormatInt(now.Add(40*time.Second).Unix(), 10)}},
			known: true, reset: 40 * time.Second, held: 40 * time.Second},
		{name: "delay seconds", header: map[string][]string{"X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {"25"}},
			known: true, reset: 25 * time.Second, held: 25 * time.Second},
		{name: "a reset already past holds nothing", header: map[string][]string{"X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {ms(-5 * time.Second)}},
			known: true, reset: -5 * time.Second},
		{name: "a reset beyond the policy's window is bounded by it", header: map[string][]string{"X-RateLimit-Remaining": {"0"},
			"X-RateLimit-Reset": {ms(10 * time.Hour)}, "RateLimit-Policy": {"30;w=60"}},
			known: true, reset: time.Minute, window: time.Minute, held: time.Minute},
		{name: "a reset far away without a policy is bounded by an hour", header: map[string][]string{"X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {ms(48 * time.Hour)}},
			known: true, reset: time.Hour, held: time.Hour},
		{name: "none remain, no reset, a policy: its window", header: map[string][]string{"X-RateLimit-Remaining": {"0"}, "RateLimit-Policy": {`"burst";q=30;w=60`}},
			known: true, reset: time.Minute, window: time.Minute, held: time.Minute},
		{name: "none remain, an unreadable reset, no policy: nothing held", header: map[string][]string{"X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {"soon"}},
			known: true, reset: -1},
		{name: "no headers", header: map[string][]string{}, reset: -1},
		{name: "an unreadable remaining", header: map[string][]string{"X-RateLimit-Remaining": {"none"}, "X-RateLimit-Reset": {ms(time.Minute)}}, reset: -1},
		{name: "a negative remaining", header: map[string][]string{"X-RateLimit-Remaining": {"-1"}, "X-RateLimit-Reset": {ms(time.Minute)}}, reset: -1},
		{name: "a repeated remaining", header: map[string][]string{"X-RateLimit-Remaining": {"0", "5"}, "X-RateLimit-Reset": {ms(time.Minute)}}, reset: -1},
		{name: "an absurd remaining", header: map[string][]string{"X-RateLimit-Remaining": {"99999999999999999999"}}, reset: -1},
		{name: "an unreadable limit and policy", header: map[string][]string{"X-RateLimit-Limit": {"thirty"}, "X-RateLimit-Remaining": {"3"},
			"RateLimit-Policy": {"30;w=sixty"}}, known: true, remain: 3, reset: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			h := http.Header{}
			for k, v := range tc.header {
				for _, x := range v {
					h.Add(k, x)
				}
			}
			w := postman.ParseRateWindow(h, now)
			is.Equal(w.Known, tc.known) // only a readable X-RateLimit-Remaining makes a window
			if !tc.known {
				is.Equal(w, ports.RateWindow{}) // nothing else is kept
				return
			}
			is.Equal(w.Limit, tc.limit)      // X-RateLimit-Limit
			is.Equal(w.Remaining, tc.remain) // X-RateLimit-Remaining
			is.Equal(w.Window, tc.window)    // RateLimit-Policy's w
			if tc.reset < 0 && tc.reset != -5*time.Second {
				is.True(w.Reset.IsZero()) // no reset known
			} else {
				is.Equal(w.Reset.Sub(now), tc.reset) // the reset, read and bounded
			}
			is.Equal(w.HeldFor(now), tc.held) // how long a fresh turn waits
		})
	}
}

// The emulator's rate_window_spent scenario answers the normal turn with the
// fixture's headers saying none remain (ps2Api ossfunc_test.go:43): the next
// fresh turn is refused before anything is sent, on both strategies, with a
// wait up to the reset; tool results are never held back by it, and an
// answer without the headers changes nothing.
func TestASpentWindowHoldsFreshTurnsBeforeSendingButNotToolResults(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			c := sc.client(t, emu, nil)
			is.True(!c.RateWindow().Known) // nothing known before any answer
			req := toolRequest("what is the weather? #loop=1 #scenario="+emulator.ScenarioRateWindowSpent, false)
			s, d, err := open(t, c, req)
			is.NoErr(err)           // the turn that spends the window is answered
			is.Equal(d.err, io.EOF) // completely
			w := c.RateWindow()
			is.True(w.Known)                                                                       // recorded from the answer's headers
			is.Equal(w.Limit, 30)                                                                  // X-RateLimit-Limit
			is.Equal(w.Remaining, 0)                                                               // none remain
			is.Equal(w.Window, time.Minute)                                                        // RateLimit-Policy: 30;w=60
			is.True(time.Until(w.Reset) > 50*time.Second && time.Until(w.Reset) <= 59*time.Second) // the epoch-ms reset

			calls := postman.ToolCalls(s, d.events)
			is.Equal(len(calls), 1) // the tool turn's call
			req.Continuation = &ports.Continuation{ConversationID: s.ConversationID(), UpstreamGroupID: calls[0].UpstreamGroupID,
				Results: []ports.ContinuationResult{{UpstreamCallID: calls[0].UpstreamID, OriginalName: calls[0].Name, Content: "sunny"}}}
			before := emu.Count(emulator.KindToolResponse)
			_, d, err = open(t, c, req)
			is.NoErr(err)                                                  // tool results are never held back
			is.Equal(d.err, io.EOF)                                        // their turn completes
			is.Equal(emu.Count(emulator.KindToolResponse), before+1)       // and was sent once
			is.True(c.RateWindow().Known && c.RateWindow().Remaining == 0) // its answer, without the headers, changed nothing

			sent := emu.Count(emulator.KindUserQuery) + emu.Count(emulator.KindToolResponse) + emu.Count(emulator.KindRejected)
			_, _, err = open(t, c, userText("hello again"))
			is.Equal(errs.CodeOf(err), errs.UpstreamRateLimited) // held
			is.True(errors.Is(err, ports.ErrNotSent))            // provably not sent
			after, ok := postman.RetryAfter(err)
			is.True(ok)                                                                                                             // with a wait
			is.True(after > 50*time.Second && after <= 59*time.Second)                                                              // up to the reset
			is.Equal(emu.Count(emulator.KindUserQuery)+emu.Count(emulator.KindToolResponse)+emu.Count(emulator.KindRejected), sent) // nothing reached the service
		})
	}
}

// Once the reset passes, fresh turns go again, and the next answer's window
// replaces the spent one.
func TestTheHoldEndsAtTheReset(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	clock := time.Now()
	var remaining atomic.Int64 // none, then five
	f := newFakeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-RateLimit-Remaining", strconv.FormatInt(remaining.Load(), 10))
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(clock.Add(30*time.Second).UnixMilli(), 10))
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"type\":\"textChunk\",\"data\":{\"content\":\"x\"}}\n\n")
	}))
	now := clock
	c := f.client(t, "access_token", postman.WithClock(func() time.Time { return now }))
	_, _, _ = open(t, c, userText("one"))
	_, _, err := open(t, c, userText("two"))
	is.Equal(errs.CodeOf(err), errs.UpstreamRateLimited) // held until the reset
	now = clock.Add(31 * time.Second)
	remaining.Store(5)
	_, _, err = open(t, c, userText("three"))
	is.True(!errs.Has(err, errs.UpstreamRateLimited)) // the reset passed: sent
	is.Equal(c.RateWindow().Remaining, 5)             // and its answer's headroom recorded
}

// No source shows the service's 429 with Retry-After; when it is missing the
// window's reset is the wait, not the fixed 30 s (docs/UPSTREAM.md).
func TestA429WithoutRetryAfterWaitsForTheWindowsReset(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	now := time.Now().Truncate(time.Millisecond)
	f := newFakeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-RateLimit-Limit", "30")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(12*time.Second).UnixMilli(), 10))
		w.Header().Set("RateLimit-Policy", "30;w=60")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	c := f.client(t, "web_session", postman.WithClock(func() time.Time { return now }))
	_, _, err := open(t, c, userText("hi"))
	is.Equal(errs.CodeOf(err), errs.UpstreamRateLimited) // the service's 429
	d, _ := postman.RetryAfter(err)
	is.Equal(d, 12*time.Second) // the window's reset, not the default 30 s
}
