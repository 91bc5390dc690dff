package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/domain/errs"
)

// ratePost sends a fresh text turn through api ("chat", "responses",
// "messages") and returns the answer's status, headers and the stable code
// of its error body.
func ratePost(t *testing.T, s *served, api, text string, stream bool) (*http.Response, string) {
	t.Helper()
	q, _ := json.Marshal(text)
	var resp *http.Response
	switch api {
	case "chat":
		resp = s.post(t, userBody(text, stream, ""))
	case "responses":
		resp = s.do(t, "POST", "/v1/responses", strings.NewReader(fmt.Sprintf(`{"model":%q,"stream":%v,"input":%s}`, testModel, stream, q)),
			"Content-Type", "application/json")
	case "messages":
		resp = s.do(t, "POST", "/v1/messages", strings.NewReader(messagesBody(text, stream, "")),
			"Content-Type", "application/json", "Authorization", "", "x-api-key", testKey, "anthropic-version", "2023-06-01")
	}
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct{ Code, Type string } `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return resp, e.Error.Code
}

// The service's answers carry X-RateLimit-Remaining and an epoch-ms
// X-RateLimit-Reset (ps2Api internal/provider/ossfunc_test.go:43; the
// emulator's rate_window_spent scenario): once an answer said none remain,
// every API answers new fresh turns 429 upstream_rate_limited with a
// Retry-After up to the reset, in its own error shape, before sending
// anything; the tool results of the turn that spent the window are still
// sent; /admin/api/live and /metrics show the window.
func TestASpentUpstreamWindowRefusesFreshTurnsBeforeDispatchOnEveryAPI(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) { // not parallel: anthBody's ids are not
			is := is.New(t)
			s := serve(t, st, nil)
			_, res, _ := anthTurn(t, s, anthBody([]any{user("weather please #scenario=" + emulator.ScenarioRateWindowSpent)}, false, `,"tools":`+weatherToolAnth))
			is.Equal(res.StopReason, "tool_use") // the turn that spends the window is answered

			// Its tool results are never held back by the window.
			u := res.ToolUses()[0]
			results := map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": u.ID, "content": "sunny"}}}
			status, done, _ := anthTurn(t, s, anthBody([]any{user("weather please #scenario=" + emulator.ScenarioRateWindowSpent), assistantOf(res), results},
				false, `,"tools":`+weatherToolAnth))
			is.Equal(status, http.StatusOK)                     // the continuation was sent
			is.Equal(done.StopReason, "end_turn")               // and answered
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // once

			sent := s.emu.Count(emulator.KindUserQuery)
			for _, api := range []string{"chat", "responses", "messages"} {
				for _, stream := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/stream=%v", api, stream), func(t *testing.T) {
						is := is.New(t)
						resp, code := ratePost(t, s, api, "hello again", stream)
						is.Equal(resp.StatusCode, http.StatusTooManyRequests)     // refused before any stream
						is.Equal(code, string(errs.UpstreamRateLimited))          // the stable code, in the API's error body
						wait, err := strconv.Atoi(resp.Header.Get("retry-after")) // a wait …
						is.NoErr(err)
						is.True(wait >= 1 && wait <= 59)                    // … up to the reset, 59 s after the answer
						is.Equal(s.emu.Count(emulator.KindUserQuery), sent) // nothing was sent
						is.Equal(s.emu.Count(emulator.KindRejected), 0)     // not even a refused request
					})
				}
			}

			var live struct {
				Window *ops.UpstreamRateWindow `json:"upstream_rate_limit"`
			}
			is.NoErr(json.Unmarshal([]byte(s.get(t, "/admin/api/live")), &live))
			is.True(live.Window != nil && live.Window.Known)                // the control page shows the window
			is.Equal(live.Window.Limit, 30)                                 // X-RateLimit-Limit
			is.Equal(live.Window.Remaining, 0)                              // none remain
			is.Equal(live.Window.WindowS, 60.0)                             // RateLimit-Policy: 30;w=60
			is.True(live.Window.HeldForS > 0 && live.Window.HeldForS <= 59) // fresh turns held until the reset
			is.True(live.Window.Reset != nil && live.Window.ResetInS > 0)   // the reset ahead
			metrics := s.get(t, "/metrics")
			is.True(strings.Contains(metrics, "\npmgate_upstream_ratelimit_remaining 0\n")) // the remaining gauge
			is.True(strings.Contains(metrics, "\npmgate_upstream_ratelimit_limit 30\n"))    // the limit gauge
			m := regexp.MustCompile(`\npmgate_upstream_ratelimit_reset_seconds ([0-9.e+]+)\n`).FindStringSubmatch(metrics)
			is.True(m != nil) // the seconds-to-reset gauge
			secs, _ := strconv.ParseFloat(m[1], 64)
			is.True(secs > 0 && secs <= 59) // the reset ahead
		})
	}
}
