package emulator_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// resetIn reads X-RateLimit-Reset as the service sends it, epoch
// milliseconds, as a delay from now.
func resetIn(t *testing.T, h http.Header) time.Duration {
	t.Helper()
	ms, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil {
		t.Fatalf("X-RateLimit-Reset %q: %v", h.Get("X-RateLimit-Reset"), err)
	}
	return time.Until(time.UnixMilli(ms))
}

// ps2Api internal/provider/ossfunc_test.go:43 (parsed by errors.go:36-61):
// the service's chat answers carry X-RateLimit-Limit: 30,
// X-RateLimit-Remaining, X-RateLimit-Reset in epoch milliseconds (59 s after
// the fixture's "now") and RateLimit-Policy: 30;w=60. The rate_window_spent
// scenario sends that shape with none remaining, on both strategies.
func TestRateWindowSpentSendsTheServicesHeaders(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, p := range []*peer{webPeer(t, s), tokenPeer(t, s)} {
		t.Run(p.strategy, func(t *testing.T) {
			is := is.New(t)
			resp, _ := p.post(userQuery("hi #scenario=" + emulator.ScenarioRateWindowSpent))
			is.Equal(resp.StatusCode, http.StatusOK)                 // the turn itself is answered
			is.Equal(resp.Header.Get("X-RateLimit-Limit"), "30")     // the measured limit
			is.Equal(resp.Header.Get("X-RateLimit-Remaining"), "0")  // none remain
			is.Equal(resp.Header.Get("RateLimit-Policy"), "30;w=60") // 30 per 60 s
			d := resetIn(t, resp.Header)
			is.True(d > 55*time.Second && d <= 59*time.Second) // the reset, in epoch ms, 59 s away
		})
	}
}

// With Config.RateLimit the emulator counts the account's requests in its
// window: every answer carries the headers, and a request beyond the limit is
// answered 429 with none remaining and no Retry-After (no source shows the
// service's own 429 body).
func TestRateLimitCountsTheAccountsRequestsInItsWindow(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.RateLimit = 2 })
	p := tokenPeer(t, s)
	for i, want := range []string{"1", "0"} {
		resp, _ := p.post(userQuery("hi"))
		is.Equal(resp.StatusCode, http.StatusOK)                 // within the limit
		is.Equal(resp.Header.Get("X-RateLimit-Remaining"), want) // counted down
		is.Equal(resp.Header.Get("X-RateLimit-Limit"), "2")      // the configured limit
		is.Equal(resp.Header.Get("RateLimit-Policy"), "2;w=60")  // the default 60 s window
		is.True(resetIn(t, resp.Header) <= time.Minute)          // within the window
		is.Equal(s.Count(emulator.KindUserQuery), i+1)           // answered
	}
	resp, _ := p.post(userQuery("hi"))
	is.Equal(resp.StatusCode, http.StatusTooManyRequests)   // beyond the limit
	is.Equal(resp.Header.Get("X-RateLimit-Remaining"), "0") // none remain
	is.Equal(resp.Header.Get("Retry-After"), "")            // and no Retry-After
	is.Equal(s.Count(emulator.KindRejected), 1)             // counted as refused
	is.Equal(s.Count(emulator.KindUserQuery), 2)            // not answered
}
