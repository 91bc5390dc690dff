package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/domain/errs"
)

// round3Answer is what one API answered one request, reduced to what every
// API must agree on: the status, the stable code, whether anything reads as a
// success, and the message the client sees.
type round3Answer struct {
	status  int
	code    string
	success bool
	message string
	retry   string // x-should-retry
	raw     string
}

// round3Post sends text through api ("chat", "responses", "messages") as JSON
// or as a stream.
func round3Post(t *testing.T, s *served, api, text string, stream bool) round3Answer {
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
	a := round3Answer{status: resp.StatusCode, raw: string(b), retry: resp.Header.Get("x-should-retry")}
	// The success markers of each API, JSON or stream.
	for _, m := range []string{`"finish_reason":"stop"`, `"finish_reason":"tool_calls"`, `"response.completed"`, `"status":"completed"`,
		"message_stop", `"stop_reason":"end_turn"`} {
		a.success = a.success || strings.Contains(a.raw, m)
	}
	// The error: the whole JSON body, or the first error-bearing stream event.
	var bodies []string
	if resp.StatusCode != http.StatusOK {
		bodies = []string{a.raw}
	} else {
		for _, line := range strings.Split(a.raw, "\n") {
			if p, ok := strings.CutPrefix(line, "data: "); ok {
				bodies = append(bodies, p)
			}
		}
	}
	for _, b := range bodies {
		var e struct {
			Error    *struct{ Code, Message string } `json:"error"`
			Response *struct {
				Error *struct{ Code, Message string } `json:"error"`
			} `json:"response"`
		}
		if json.Unmarshal([]byte(b), &e) != nil {
			continue
		}
		switch {
		case e.Error != nil && e.Error.Code != "":
			a.code, a.message = e.Error.Code, e.Error.Message
		case e.Response != nil && e.Response.Error != nil && e.Response.Error.Code != "":
			a.code, a.message = e.Response.Error.Code, e.Response.Error.Message
		default:
			continue
		}
		break
	}
	return a
}

// The round-3 evidence as the three APIs answer it (docs/UPSTREAM.md, "The
// service, round 3"): each emulator scenario reproduces one fact, and every
// API, as JSON and as a stream, through both strategies, answers it with the
// same stable code and never with a success.
func TestRound3UpstreamFactsAreTheSameStableCodeOnEveryAPI(t *testing.T) {
	cases := []struct {
		scenario string
		code     errs.Code
		says     string // a part of the message the client must see
		source   string
	}{
		{emulator.ScenarioFirewallBlock, errs.UpstreamFirewallBlocked, "the credential is not the cause", "ps2Api errors.go:109-113, 403-gateway-block-failover.md:26"},
		{emulator.ScenarioUsageBlocked, errs.UpstreamAccountBlocked, "account is blocked", "ps2Api sse.go:133-136, quota_probe.go applyUsageState"},
		{emulator.ScenarioQuotaUsageCycle, errs.UpstreamQuotaExhausted, "usage cycle ends at " + emulator.UsageCycleEnd, "ps2Api ossfunc_test.go:37"},
		{emulator.ScenarioEmptyDone, errs.UpstreamEmptyStream, "without any output", "ps2Api 529 doc §3.1, stream.go streamInternal"},
		{emulator.ScenarioEmptyStream, errs.UpstreamEmptyStream, "without any output", "ps2Api 529 doc §3.1"},
	}
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			s := serve(t, st, nil)
			for _, c := range cases {
				e := errs.MustEntry(c.code)
				for _, api := range []string{"chat", "responses", "messages"} {
					for _, stream := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s/%s/stream=%v", c.scenario, api, stream), func(t *testing.T) {
							is := is.New(t)
							a := round3Post(t, s, api, "hello #scenario="+c.scenario, stream)
							if a.success {
								t.Fatalf("%s (%s) answered as a success:\n%s", c.scenario, c.source, a.raw)
							}
							is.Equal(a.code, string(c.code))             // the stable code
							is.True(strings.Contains(a.message, c.says)) // with its message
							if a.status != http.StatusOK {
								want := e.Status
								if api == "messages" {
									want = map[int]int{422: 400, 403: 403, 429: 429, 502: 500}[e.Status] // the Anthropic statuses
								}
								is.Equal(a.status, want)   // the catalog's status
								is.Equal(a.retry, "false") // never retried
							}
							is.True(!strings.Contains(a.message, "web session")) // never the cookie's message
						})
					}
				}
			}
		})
	}
}

// The probe's first failing line names the cause and CONNECT.md's hint: a
// firewall block must not send the owner to replace a cookie that is fine
// (ps2Api 403-gateway-block-failover.md:26: the content triggers it, not the
// account), and a blocked account has a hint of its own.
func TestTheProbeHintsAFirewallBlockAndABlockedAccountNotACookie(t *testing.T) {
	for code, says := range map[errs.Code]string{
		errs.UpstreamFirewallBlocked: "firewall blocked the request's content",
		errs.UpstreamAccountBlocked:  "account itself as blocked",
	} {
		t.Run(string(code), func(t *testing.T) {
			is := is.New(t)
			note := causeNote(probeReport{Text: reportPhase{Cause: string(code)}})
			is.True(strings.Contains(note, "cause: "+string(code)))    // the code
			is.True(strings.Contains(note, says))                      // and its own hint
			is.True(!strings.Contains(note, "POSTMAN_SESSION_COOKIE")) // never "copy a fresh cookie"
		})
	}
}

// sentThinking is the devModeOptions of the emulator's last recorded request:
// whether the thinking mode was asked for, and at which level ("" absent).
func sentThinking(t *testing.T, emu *emulator.Server) (bool, string) {
	t.Helper()
	reqs := emu.Requests()
	if len(reqs) == 0 {
		t.Fatal("the emulator saw no request")
	}
	var b struct {
		DevModeOptions map[string]json.RawMessage `json:"devModeOptions"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &b); err != nil {
		t.Fatal(err)
	}
	var on bool
	var level string
	_ = json.Unmarshal(b.DevModeOptions["useThinkingModeIfAvailable"], &on)
	_ = json.Unmarshal(b.DevModeOptions["thinkingLevel"], &level)
	return on, level
}

// The service's thinkingLevel takes low, medium or high only (the 12.29.2
// client's zod contract, via ps2Api types.go normalizeThinkingLevel; U-BR:
// low is the floor). Each API's effort or thinking field lands on one of them
// (the emulator refuses any other), turns thinking off, or is refused with
// its path before anything is sent.
func TestEffortAndThinkingFieldsMapOntoTheServicesThreeLevels(t *testing.T) {
	s := serve(t, "web_session", nil)
	type tc struct {
		api, extra string
		on         bool
		level      string
		refused    string // the param of a refusal
	}
	cases := []tc{
		{api: "chat", extra: ``},
		{api: "chat", extra: `,"reasoning_effort":"high"`, on: true, level: "high"},
		{api: "chat", extra: `,"reasoning_effort":"minimal"`, on: true, level: "low"},
		{api: "chat", extra: `,"reasoning_effort":"xhigh"`, on: true, level: "high"},
		{api: "chat", extra: `,"reasoning_effort":"none"`},
		{api: "chat", extra: `,"reasoning_effort":"turbo"`, refused: "reasoning_effort"},
		{api: "responses", extra: `,"reasoning":{"effort":"medium","summary":"auto"}`, on: true, level: "medium"},
		{api: "responses", extra: `,"reasoning":{"summary":"auto"}`},
		{api: "responses", extra: `,"reasoning":{"effort":"ludicrous"}`, refused: "reasoning.effort"},
		{api: "messages", extra: `,"thinking":{"type":"adaptive"},"output_config":{"effort":"max"}`, on: true, level: "high"},
		{api: "messages", extra: `,"thinking":{"type":"adaptive"}`},
		{api: "messages", extra: `,"thinking":{"type":"enabled","budget_tokens":10000}`, on: true, level: "medium"},
		{api: "messages", extra: `,"thinking":{"type":"enabled","budget_tokens":31999}`, on: true, level: "high"},
		{api: "messages", extra: `,"thinking":{"type":"disabled"},"output_config":{"effort":"high"}`},
		{api: "messages", extra: `,"output_config":{"effort":"low"}`, on: true, level: "low"},
		{api: "messages", extra: `,"output_config":{"effort":"extreme"}`, refused: "output_config.effort"},
		{api: "messages", extra: `,"thinking":{"type":"enabled"}`, refused: "thinking.budget_tokens"},
		{api: "messages", extra: `,"thinking":{"type":"sometimes"}`, refused: "thinking.type"},
	}
	for _, c := range cases {
		t.Run(c.api+c.extra, func(t *testing.T) {
			is := is.New(t)
			before := len(s.emu.Requests())
			var status int
			var raw string
			switch c.api {
			case "chat":
				resp := s.post(t, userBody("Think please.", false, c.extra))
				b, _ := io.ReadAll(resp.Body)
				status, raw = resp.StatusCode, string(b)
			case "responses":
				status, raw = rawResponses(t, s, `{"model":"`+testModel+`","input":"Think please."`+c.extra+`}`)
			case "messages":
				status, _, raw = rawMessages(t, s, messagesBody("Think please.", false, c.extra))
			}
			if c.refused != "" {
				is.Equal(status, 400)                     // refused
				is.True(strings.Contains(raw, c.refused)) // naming the field's path
				is.Equal(len(s.emu.Requests()), before)   // before anything was sent
				return
			}
			is.Equal(status, 200) // answered
			on, level := sentThinking(t, s.emu)
			is.Equal(on, c.on)       // the thinking mode
			is.Equal(level, c.level) // at one of the service's levels
		})
	}
}

// A continuation the firewall blocks (ps2Api 403-gateway-block-failover.md:26:
// tool results with HTML-like text trip it) gets the firewall's code, not
// "outcome uncertain" nor the cookie's: the 403 came before the origin, so
// the group is back to pending; nothing is retried by the gateway, and the
// same results sent again meet the same block (one more request the firewall
// refuses, never a second answer).
func TestAContinuationTheFirewallBlocksIsTheFirewallsCodeAndStaysPending(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			_, res, _ := anthTurn(t, s, anthBody([]any{user("weather please")}, false, `,"tools":`+weatherToolAnth))
			is.Equal(res.StopReason, "tool_use")
			u := res.ToolUses()[0]
			results := map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": u.ID,
				"content": "<html><script>x</script></html> #scenario=" + emulator.ScenarioFirewallBlock}}}
			body := anthBody([]any{user("weather please"), assistantOf(res), results}, false, `,"tools":`+weatherToolAnth)
			for i := 1; i <= 2; i++ {
				resp := s.do(t, "POST", "/v1/messages?beta=true", strings.NewReader(body), "Content-Type", "application/json")
				b, _ := io.ReadAll(resp.Body)
				is.Equal(resp.StatusCode, 400)                                                         // 422 in the Anthropic shape
				is.Equal(resp.Header.Get("x-pmgate-error-code"), string(errs.UpstreamFirewallBlocked)) // the firewall's code, every time
				is.Equal(resp.Header.Get("x-should-retry"), "false")                                   // not retried
				is.True(!strings.Contains(string(b), "Attention Required"))                            // nothing of the page
				is.Equal(s.emu.Count(emulator.KindToolResponse), i)                                    // one request per client request, none by the gateway
			}
		})
	}
}
