package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// TestAMeasuredLimitIsWhatServeEnforces runs probe --measure-limits against
// emulators that accept 7,000 and 30,000 characters (and 16 and 40 tools),
// then serves with the verified report and no limit settings: the report's
// measured limits apply, /health says so, an 8,000-character query is refused
// locally with nothing sent where 7,000 is the service's limit and a
// 20,000-character query passes where it is 30,000. A setting still wins.
func TestAMeasuredLimitIsWhatServeEnforces(t *testing.T) {
	for _, c := range []struct {
		accept, tools int
		query         int
		passes        bool
	}{
		{accept: 7000, tools: 16, query: 8000, passes: false},
		{accept: 30000, tools: 40, query: 20000, passes: true},
	} {
		t.Run(fmt.Sprintf("the service accepts %d", c.accept), func(t *testing.T) {
			is := is.New(t)
			emu := newEmulator(t, func(e *emulator.Config) { e.MaxQueryChars, e.MaxTools = c.accept, c.tools })
			env, opts := emulatorEnv(emu, "web_session", nil)
			cfg, err := loadConfig(func(k string) string { return env[k] })
			is.NoErr(err)
			var logs syncBuffer
			res, err := runProbePhases(t.Context(), cfg, probeRun{mode: "live", measure: true, maxQuery: cfg.upstream.MaxQueryChars,
				maxTools: cfg.upstream.MaxToolsUpstream, log: newLogger(cfg, &logs), opts: opts})
			is.NoErr(err)
			is.Equal(res.report.Failures, []string{}) // verify accepts the measurement's evidence
			l := res.report.Limits
			is.True(l.MeasuredChars <= c.accept && l.MeasuredChars > c.accept*3/4) // the largest accepted, within the budget's precision
			is.True(l.ShortestRejectedChars > c.accept)                            // and a refusal above the limit
			is.Equal(l.UpperBoundTested, c.accept > 10000)                         // searched above the configured start when it was accepted
			is.True(l.MeasuredTools <= c.tools && l.MeasuredTools > c.tools/2)
			is.True(l.ShortestRejectedTools > c.tools || l.MeasuredTools == c.tools && l.ShortestRejectedTools == 0)
			is.True(len(l.Phase.Requests) <= limitLengthQueries+limitToolQueries+1) // within the stated budget
			report := filepath.Join(t.TempDir(), "probe.json")
			is.NoErr(os.WriteFile(report, res.raw, 0o600))
			// serve takes only a live report about a served model whose MAC
			// its credential makes (what probe --live writes beside it).
			is.NoErr(os.WriteFile(macPath(report), []byte(reportMAC(cfg.upstream, res.raw)), 0o600))

			s := serveWith(t, emu, "web_session", map[string]string{"PROBE_REPORT": report})
			health := getJSON(t, s.base+"/health")
			lim := health["upstream_limits"].(map[string]any)
			is.Equal(lim["max_query_chars"], map[string]any{"value": float64(l.MeasuredChars), "from": "measured"})
			is.Equal(lim["max_tools_upstream"], map[string]any{"value": float64(l.MeasuredTools), "from": "measured"})
			is.Equal(health["upstream_verified"], true)
			// The control page's configuration says the same.
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.base+"/admin/api/overview", nil)
			req.Header.Set("Authorization", "Bearer "+testKey)
			resp, err := http.DefaultClient.Do(req)
			is.NoErr(err)
			var overview struct {
				Config map[string]string `json:"config"`
			}
			is.NoErr(json.NewDecoder(resp.Body).Decode(&overview))
			resp.Body.Close()
			is.Equal(overview.Config["max_query_chars"], fmt.Sprint(l.MeasuredChars))
			is.Equal(overview.Config["max_query_chars_from"], "measured")
			is.Equal(overview.Config["max_tools_upstream_from"], "measured")

			sent := func() int {
				return emu.Count(emulator.KindUserQuery) + emu.Count(emulator.KindToolResponse) + emu.Count(emulator.KindRejected)
			}
			before := sent()
			status, body := postChat(t, s.base, map[string]any{"model": testModel,
				"messages": []any{map[string]any{"role": "user", "content": strings.Repeat("z", c.query)}}})
			if c.passes {
				is.Equal(status, http.StatusOK)     // within the measured limit
				is.Equal(sent()-before, 1)          // one dispatch
				is.True(l.MeasuredChars >= c.query) // the measured limit is above the default
				return
			}
			is.Equal(status, http.StatusBadRequest)
			is.True(strings.Contains(body, `"upstream_query_too_long"`))
			is.True(strings.Contains(body, "measured by the verified probe report")) // where the limit came from
			is.Equal(sent()-before, 0)                                               // nothing sent
			tools := limitTools(l.MeasuredTools + 1)
			status, body = postChat(t, s.base, map[string]any{"model": testModel, "tools": tools,
				"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
			is.Equal(status, http.StatusBadRequest)
			is.True(strings.Contains(body, fmt.Sprintf("offers %d tools", l.MeasuredTools+1)))
			is.True(strings.Contains(body, "measured by the verified probe report"))
			is.Equal(sent()-before, 0)

			// The setting wins over the measurement.
			set := serveWith(t, emu, "web_session", map[string]string{"PROBE_REPORT": report, "POSTMAN_MAX_QUERY_CHARS": "9000"})
			lim = getJSON(t, set.base+"/health")["upstream_limits"].(map[string]any)
			is.Equal(lim["max_query_chars"], map[string]any{"value": float64(9000), "from": "setting"})
			is.Equal(lim["max_tools_upstream"].(map[string]any)["from"], "measured")
		})
	}
}

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func postChat(t *testing.T, base string, body map[string]any) (int, string) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestALaterMessageOverTheLimitIsNamedAndNothingIsSent: with continuity a
// later turn sends only its new messages, so a long session fits; but a new
// message that alone exceeds the limit (a pasted file) is refused before
// sending, naming that message by its index in the request and its size. The
// conversation is left as it was: the next turn continues it.
func TestALaterMessageOverTheLimitIsNamedAndNothingIsSent(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			user := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
			history := []any{map[string]any{"role": "system", "content": "You are terse."}, user("Hello")}
			status, body := postChat(t, s.base, map[string]any{"model": testModel, "messages": history})
			is.Equal(status, http.StatusOK)
			var first struct {
				Choices []struct {
					Message map[string]any `json:"message"`
				} `json:"choices"`
			}
			is.NoErr(json.Unmarshal([]byte(body), &first))
			history = append(history, map[string]any{"role": "assistant", "content": first.Choices[0].Message["content"]})

			sent := s.emu.Count(emulator.KindUserQuery) + s.emu.Count(emulator.KindRejected)
			pasted := "Please review this file:\n" + strings.Repeat("func f() {}\n", 1000) // 12,025 characters
			status, body = postChat(t, s.base, map[string]any{"model": testModel, "messages": append(history, user(pasted))})
			is.Equal(status, http.StatusBadRequest)
			var refusal struct {
				Error struct{ Message, Param, Code string } `json:"error"`
			}
			is.NoErr(json.Unmarshal([]byte(body), &refusal))
			is.Equal(refusal.Error.Code, "upstream_query_too_long")
			is.Equal(refusal.Error.Param, "messages[3]")                                                    // the pasted message
			is.True(strings.Contains(refusal.Error.Message, "messages[3] (user, 12025 characters)"))        // which and how large
			is.True(strings.Contains(refusal.Error.Message, "new messages of this continued conversation")) // the history is not the problem
			is.Equal(s.emu.Count(emulator.KindUserQuery)+s.emu.Count(emulator.KindRejected), sent)          // zero dispatches

			status, body = postChat(t, s.base, map[string]any{"model": testModel, "messages": append(history, user("Just the summary, then."))})
			is.Equal(status, http.StatusOK) // the conversation goes on
			is.True(strings.Contains(body, "turn 2 of this conversation"))
		})
	}
}
