package postman_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// strategyCase runs a test once per strategy against one emulator.
type strategyCase struct {
	name   string
	client func(t *testing.T, emu *emulator.Server, pairs []string, opts ...postman.Option) *postman.Client
}

var strategies = []strategyCase{
	{"web_session", webClient},
	{"access_token", tokenClient},
}

func TestTextTurnCompletesOnBothStrategies(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			s, d, err := open(t, sc.client(t, emu, nil), userText("hello there"))
			is.NoErr(err)                                                                                       // the request is accepted
			is.Equal(d.err, io.EOF)                                                                             // the stream is proven complete
			is.Equal(d.text, "Hello from the pmgate emulator. You said: hello there")                           // the text arrives in order
			is.True(s.Outcome().Complete)                                                                       // the outcome is a completion
			is.True(strings.HasPrefix(s.ConversationID(), "conv-"))                                             // the conversation id is kept
			is.Equal(d.events[0], chat.Event{Kind: chat.EventConversation, ConversationID: s.ConversationID()}) // and emitted first
			label, observed := s.ModelObserved()
			is.True(observed)              // the emulator labels its events
			is.Equal(label, upstreamModel) // with the mapped upstream model
			var usage []chat.Event
			for _, e := range d.events {
				if e.Kind == chat.EventUsage {
					usage = append(usage, e)
				}
			}
			is.Equal(len(usage), 1) // one usage event (first on web_session, last on access_token)
			u := usage[0].Usage
			is.True(u.TotalTokens != nil && *u.TotalTokens > 0)           // with explicit token counts
			is.Equal(*u.TotalTokens, *u.PromptTokens+*u.CompletionTokens) // that add up
			is.True(*u.CompletionTokens > 0)                              // the output counted wherever the event sits
		})
	}
	is := is.New(t)
	is.Equal(emu.Count(emulator.KindUserQuery), 2) // one upstream request per turn
	is.Equal(emu.Count(emulator.KindRejected), 0)  // the emulator accepted both bodies
}

func TestCompletionRuleOfEachStrategy(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	// usage after the output, then EOF: the web order before the traces
	old := startEmu(t, func(c *emulator.Config) { c.Profile = emulator.ProfileUsageLastEOF })
	explicitOnly := []string{"POSTMAN_WEB_SESSION_TERMINAL_RULE", "explicit_only"}
	cases := []struct {
		name   string
		client *postman.Client
		state  completion.State
		code   errs.Code
	}{
		{"access_token legacy [DONE]", tokenClient(t, emu, nil), completion.CompleteExplicit, ""},
		{"web_session usage_after_output_v1 (default), traced [DONE]", webClient(t, emu, nil), completion.CompleteExplicit, ""},
		{"web_session explicit_only, traced [DONE]", webClient(t, emu, explicitOnly), completion.CompleteExplicit, ""},
		{"web_session usage_after_output_v1 (default), usage last then EOF", webClient(t, old, nil), completion.CompleteUsageAfterOutput, ""},
		{"web_session explicit_only, usage last then EOF", webClient(t, old, explicitOnly), completion.AmbiguousEOF, errs.UpstreamCompletionAmbiguous},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			s, d, err := open(t, c.client, userText("hi"))
			is.NoErr(err)                        // the request is accepted
			is.Equal(s.Outcome().State, c.state) // the rule decides the outcome
			is.True(d.text != "")                // the text arrived either way
			if c.code == "" {
				is.Equal(d.err, io.EOF) // a completion ends with io.EOF
			} else {
				is.Equal(errs.CodeOf(d.err), c.code) // a web EOF without [DONE] is ambiguous under explicit_only
			}
		})
	}
}

// toolLoop runs the emulator's "#loop=2" tool loop: a USER_QUERY answered by a
// tool group, a TOOL_RESPONSE answered by another group, a TOOL_RESPONSE
// answered by text. It checks that each round sends exactly one TOOL_RESPONSE.
func toolLoop(t *testing.T, emu *emulator.Server, c *postman.Client, parallel, ungrouped bool) string {
	is := is.New(t)
	req := toolRequest("what is the weather? #loop=2", parallel)
	s, d, err := open(t, c, req)
	is.NoErr(err)           // the tool turn is accepted
	is.Equal(d.err, io.EOF) // and complete
	want := 1
	if parallel {
		want = 2
	}
	for round := 1; round <= 3; round++ {
		calls := postman.ToolCalls(s, d.events)
		if round == 3 {
			is.Equal(len(calls), 0) // the last answer is text
			return d.text
		}
		is.Equal(len(calls), want) // one call, or two with parallel calling
		checkDeltas(t, d.events, calls)
		cont := &ports.Continuation{ConversationID: s.ConversationID()}
		if !ungrouped {
			cont.UpstreamGroupID = calls[0].UpstreamGroupID
		}
		for i, call := range calls {
			is.Equal(call.Index, i)                                                                 // gateway indexes are 0, 1, …
			is.True(!call.Synthetic)                                                                // the emulator sends ids
			is.Equal(call.Name, weatherTools[i].Name)                                               // the name maps back to the client's
			is.True(call.UpstreamGroupID == calls[0].UpstreamGroupID && call.UpstreamGroupID != "") // one group
			cont.Results = append(cont.Results, ports.ContinuationResult{
				UpstreamCallID: call.UpstreamID, OriginalName: call.Name, Content: "result " + call.Name,
			})
		}
		is.Equal(calls[0].Arguments, `{"city":"value-city"}`) // the exact argument string
		before := emu.Count(emulator.KindToolResponse)
		req.Continuation = cont
		s, d, err = open(t, c, req)
		is.NoErr(err)                                            // the continuation is accepted
		is.Equal(d.err, io.EOF)                                  // and its stream complete
		is.Equal(emu.Count(emulator.KindToolResponse), before+1) // exactly one TOOL_RESPONSE per round
		is.Equal(emu.Count(emulator.KindRejected), 0)            // no body was refused
	}
	return ""
}

// checkDeltas checks the tool-call deltas of a stream against its calls: the
// name only on the first delta of a call, fragments concatenating to the exact
// arguments.
func checkDeltas(t *testing.T, events []chat.Event, calls []postman.ToolCall) {
	is := is.New(t)
	args := map[int]string{}
	names := map[int]int{}
	for _, ev := range events {
		if ev.Kind != chat.EventToolCall {
			continue
		}
		if _, seen := args[ev.ToolCall.Index]; !seen {
			is.True(ev.ToolCall.Name != "") // the first delta of a call names it
		}
		if ev.ToolCall.Name != "" {
			names[ev.ToolCall.Index]++
		}
		args[ev.ToolCall.Index] += ev.ToolCall.ArgumentsFragment
		is.Equal(ev.ToolCall.UpstreamID, calls[ev.ToolCall.Index].UpstreamID) // every delta carries the upstream id
		is.Equal(ev.ToolCall.Synthetic, calls[ev.ToolCall.Index].Synthetic)   // and says whether it is an internal one
	}
	for _, c := range calls {
		is.Equal(names[c.Index], 1)          // the repeated upstream name is emitted once
		is.Equal(args[c.Index], c.Arguments) // fragments concatenate to the arguments
	}
}

// With POSTMAN_PARALLEL_TOOL_CALLS=true a web_session group of two calls is
// answered with the array form, which the emulator (pairing enforced) accepts;
// a flat answer would have been repeated.
func TestToolLoopWebSessionParallelGroupedContinuation(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	emu := startEmu(t)
	text := toolLoop(t, emu, webClient(t, emu, []string{"POSTMAN_PARALLEL_TOOL_CALLS", "true"}), true, false)
	is.True(strings.HasPrefix(text, "Tool results received: get_weather=result get_weather; get_time=result get_time")) // every result reached the upstream
	for _, r := range emu.Requests() {
		if r.ChatType == emulator.KindToolResponse {
			is.True(strings.Contains(string(r.Body), `"toolResponses":[`)) // the array form
		}
	}
	is.Equal(emu.Count(emulator.KindRepeatedGroup), 0) // no group was left unanswered
}

// By default web_session sends the parallel flag off: one call per round,
// answered flat.
func TestWebSessionParallelCallingIsOffByDefault(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	emu := startEmu(t)
	text := toolLoop(t, emu, webClient(t, emu, nil), false, false)
	is.True(strings.HasPrefix(text, "Tool results received: get_weather=result get_weather; get_weather=result get_weather"))
	for _, r := range emu.Requests() {
		is.True(strings.Contains(string(r.Body), `"isParallelToolCallingSupported":false`)) // the flag is off on every request
	}
}

func TestToolLoopWebSessionSingleContinuation(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	emu := startEmu(t)
	text := toolLoop(t, emu, webClient(t, emu, nil), false, false)
	is.True(strings.HasPrefix(text, "Tool results received: get_weather=result get_weather")) // the single results reached the upstream
}

func TestToolLoopAccessTokenGrouped(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	emu := startEmu(t, func(c *emulator.Config) { c.ContinuationShape = emulator.ShapeGrouped })
	text := toolLoop(t, emu, tokenClient(t, emu, nil), true, false)
	is.True(strings.HasPrefix(text, "Tool results received: get_weather=result get_weather; get_time=result get_time")) // the grouped form is accepted
}

func TestToolLoopAccessTokenSingularFlat(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	emu := startEmu(t, func(c *emulator.Config) { c.ContinuationShape = emulator.ShapeFlat })
	text := toolLoop(t, emu, tokenClient(t, emu, nil), false, true)
	is.True(strings.HasPrefix(text, "Tool results received: get_weather=result get_weather")) // the flat form is accepted
}

func TestToolCallWithoutUpstreamIDGetsAStableInternalID(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			s, d, err := open(t, sc.client(t, emu, nil), toolRequest("#scenario=tool_call_no_id", false))
			is.NoErr(err)           // accepted
			is.Equal(d.err, io.EOF) // complete
			calls := postman.ToolCalls(s, d.events)
			is.Equal(len(calls), 1)                                     // one call
			is.Equal(calls[0].UpstreamID, postman.InternalIDPrefix+"0") // a stable internal id
			is.True(calls[0].Synthetic)                                 // marked as internal
			checkDeltas(t, d.events, calls)

			cont := ports.UpstreamRequest{Chat: toolRequest("x", false).Chat, Continuation: &ports.Continuation{
				ConversationID: s.ConversationID(), UpstreamGroupID: calls[0].UpstreamGroupID,
				Results: []ports.ContinuationResult{{UpstreamCallID: calls[0].UpstreamID, OriginalName: calls[0].Name, Content: "r"}},
			}}
			before := emu.Count(emulator.KindToolResponse) + emu.Count(emulator.KindRejected)
			_, _, err = open(t, sc.client(t, emu, nil), cont)
			is.True(errs.Has(err, errs.UnsupportedToolResultContinuation))                          // an internal id cannot be answered upstream
			is.True(errors.Is(err, ports.ErrNotSent))                                               // and nothing is sent
			is.Equal(emu.Count(emulator.KindToolResponse)+emu.Count(emulator.KindRejected), before) // the emulator saw nothing
		})
	}
}

// scenarioCase is one emulator scenario and the code each strategy must report.
type scenarioCase struct {
	scenario   string
	web, token errs.Code // "" means io.EOF
	beforeOpen bool      // the error is returned by Open (no stream)
	text       bool      // text reached the caller before the end
}

var scenarioCases = []scenarioCase{
	{scenario: "auth_failure", web: errs.UpstreamWebSessionAuthFailed, token: errs.UpstreamAuthFailed, beforeOpen: true},
	{scenario: "forbidden", web: errs.UpstreamWebSessionAuthFailed, token: errs.UpstreamAuthFailed, beforeOpen: true},
	{scenario: "rate_limited", web: errs.UpstreamRateLimited, token: errs.UpstreamRateLimited, beforeOpen: true},
	{scenario: "redirect", web: errs.UpstreamRedirectRejected, token: errs.UpstreamRedirectRejected, beforeOpen: true},
	{scenario: "server_error", web: errs.UpstreamOverloaded, token: errs.UpstreamOverloaded, beforeOpen: true}, // the emulator answers 503
	{scenario: "json_200", web: errs.UpstreamContentTypeError, token: errs.UpstreamContentTypeError, beforeOpen: true},
	{scenario: "drop_after_request", web: errs.UpstreamConnectionLost, token: errs.UpstreamConnectionLost, beforeOpen: true},
	{scenario: "quota_exhausted", web: errs.UpstreamQuotaExhausted, token: errs.UpstreamQuotaExhausted},
	{scenario: "quota_usage_state", web: errs.UpstreamQuotaExhausted, token: errs.UpstreamQuotaExhausted},
	{scenario: "truncated_frame", web: errs.UpstreamIncompleteStream, token: errs.UpstreamIncompleteStream, text: true},
	{scenario: "ambiguous_eof", web: errs.UpstreamCompletionAmbiguous, token: errs.UpstreamIncompleteStream, text: true},
	// [DONE] without output is no answer on either rule (domain/completion K05/K16).
	{scenario: "empty_stream", web: errs.UpstreamEmptyStream, token: errs.UpstreamEmptyStream},
	// The round-3 evidence (docs/UPSTREAM.md): Cloudflare's 403 block page
	// (ps2Api errors.go:109-113) is not an expired credential; usageState
	// BLOCKED (ps2Api sse.go:133-136) is not a quota; EXCEEDED with its
	// usageCycle (ossfunc_test.go:37) stays a quota; a metadata-only stream
	// ending in [DONE] (ps2Api 529 doc §3.1) is empty on both strategies.
	{scenario: "firewall_block", web: errs.UpstreamFirewallBlocked, token: errs.UpstreamFirewallBlocked, beforeOpen: true},
	{scenario: "usage_blocked", web: errs.UpstreamAccountBlocked, token: errs.UpstreamAccountBlocked},
	{scenario: "quota_usage_cycle", web: errs.UpstreamQuotaExhausted, token: errs.UpstreamQuotaExhausted},
	{scenario: "empty_done", web: errs.UpstreamEmptyStream, token: errs.UpstreamEmptyStream},
	{scenario: "usage_full_fields", web: "", token: "", text: true}, // every field of the fixture, AVAILABLE: a normal answer
	{scenario: "failure_after_text", web: errs.UpstreamFailure, token: errs.UpstreamFailure, text: true},
	{scenario: "unknown_event", web: errs.UpstreamUnverifiedEventShape, token: errs.UpstreamUnverifiedEventShape, text: true},
	{scenario: "model_mismatch", web: errs.UpstreamModelMismatch, token: errs.UpstreamModelMismatch},
	{scenario: "data_after_done", web: errs.UpstreamDataAfterDone, token: errs.UpstreamDataAfterDone, text: true},
	{scenario: "loop_approval", web: errs.UpstreamLoopApproval, token: errs.UpstreamLoopApproval},
}

func TestEmulatorScenariosFailClosed(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		c := sc.client(t, emu, nil)
		for _, tc := range scenarioCases {
			t.Run(sc.name+"/"+tc.scenario, func(t *testing.T) {
				is := is.New(t)
				want := tc.token
				if sc.name == "web_session" {
					want = tc.web
				}
				s, d, err := open(t, c, userText("hello #scenario="+tc.scenario))
				if tc.beforeOpen {
					is.True(s == nil)                                 // no stream exists
					is.Equal(errs.CodeOf(err), want)                  // the status class decides the code
					is.Equal(errors.Is(err, ports.ErrNotSent), false) // the request did reach the upstream
					return
				}
				is.NoErr(err) // the stream opened
				if want == "" {
					is.Equal(d.err, io.EOF) // a proven completion
				} else {
					is.Equal(errs.CodeOf(d.err), want)            // the outcome's stable code
					is.True(!s.Outcome().Complete)                // never a completion
					is.Equal(postman.ToolCalls(s, d.events), nil) // nothing is handed out from a failed stream
				}
				is.Equal(d.text != "", tc.text) // text reaches the caller only where the scenario sent it before failing
			})
		}
	}
}

func TestRateLimitedCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	emu := startEmu(t)
	_, _, err := open(t, tokenClient(t, emu, nil), userText("#scenario=rate_limited"))
	is.True(errs.Has(err, errs.UpstreamRateLimited)) // 429
	d, ok := postman.RetryAfter(err)
	is.True(ok)                // the error carries a delay
	is.Equal(d, 7*time.Second) // the emulator's Retry-After: 7
}

func TestDropAfterRequestIsConnectionLostNotNotSent(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			_, _, err := open(t, sc.client(t, emu, nil), userText("#scenario=drop_after_request"))
			is.True(errs.Has(err, errs.UpstreamConnectionLost)) // the request was written, then the connection died
			is.True(!errors.Is(err, ports.ErrNotSent))          // so it may have reached the upstream
		})
	}
}

func TestClosedPortIsUnavailableAndNotSent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err) // a free port
	origin := "https://" + ln.Addr().String()
	is.NoErr(ln.Close()) // now closed
	c := mustNew(t, mustParse(t, env(tokenEnv(origin))))
	_, _, err = open(t, c, userText("hi"))
	is.True(errs.Has(err, errs.UpstreamUnavailable)) // connection refused
	is.True(errors.Is(err, ports.ErrNotSent))        // proven not sent
}

func TestUntrustedCertificateIsUnavailableAndNotSent(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range []struct {
		name string
		c    *postman.Client
	}{
		{"web_session", mustNew(t, mustParse(t, env(webEnv())), postman.WithDialContext(dialTo(emu.Addr())))},
		{"access_token", mustNew(t, mustParse(t, env(tokenEnv(emu.Origin()))))},
	} {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			_, _, err := open(t, sc.c, userText("hi"))
			is.True(errs.Has(err, errs.UpstreamUnavailable)) // the system roots do not trust the emulator: TLS fails
			is.True(errors.Is(err, ports.ErrNotSent))        // before anything was written
		})
	}
	is := is.New(t)
	is.Equal(emu.Count(emulator.KindUserQuery)+emu.Count(emulator.KindRejected), 0) // the emulator saw no request
}

// closeRecorder wraps dialed connections and records when one is closed.
type closeRecorder struct {
	mu     sync.Mutex
	closed chan struct{}
	once   sync.Once
}

type recConn struct {
	net.Conn
	r *closeRecorder
}

func (c *recConn) Close() error {
	c.r.once.Do(func() { close(c.r.closed) })
	return c.Conn.Close()
}

func (r *closeRecorder) dial(addr string) func(ctx context.Context, network, a string) (net.Conn, error) {
	inner := dialTo(addr)
	return func(ctx context.Context, network, a string) (net.Conn, error) {
		c, err := inner(ctx, network, a)
		if err != nil {
			return nil, err
		}
		return &recConn{Conn: c, r: r}, nil
	}
}

func TestClientCancellationClosesTheUpstreamWithinOneSecond(t *testing.T) {
	t.Parallel()
	emu := startEmu(t, func(c *emulator.Config) { c.SlowDelay = 300 * time.Millisecond })
	for _, how := range []string{"Next context", "Open context", "Close"} {
		t.Run(how, func(t *testing.T) {
			is := is.New(t)
			rec := &closeRecorder{closed: make(chan struct{})}
			c := webClient(t, emu, nil, postman.WithDialContext(rec.dial(emu.Addr())))
			openCtx, cancelOpen := context.WithCancel(context.Background())
			defer cancelOpen()
			s, err := c.Open(openCtx, userText("hello #scenario=slow_stream"))
			is.NoErr(err) // the slow stream opened
			nextCtx, cancelNext := context.WithCancel(context.Background())
			defer cancelNext()
			ev, err := s.Next(nextCtx)
			is.NoErr(err)                             // the first event arrives at once
			is.Equal(ev.Kind, chat.EventConversation) // it is the conversation
			done := make(chan error, 1)
			go func() {
				_, err := s.Next(nextCtx) // blocks: the next event is 300 ms away
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			start := time.Now()
			switch how {
			case "Next context":
				cancelNext()
			case "Open context":
				cancelOpen()
			case "Close":
				is.NoErr(s.Close()) // Close from another goroutine
			}
			select {
			case <-rec.closed:
			case <-time.After(time.Second):
				t.Fatal("the upstream connection was not closed within 1 s")
			}
			var nerr error
			select {
			case nerr = <-done:
			case <-time.After(time.Second):
				t.Fatal("Next did not return within 1 s")
			}
			is.True(time.Since(start) < time.Second)          // promptly
			is.Equal(errs.CodeOf(nerr), errs.ClientCancelled) // the outcome is client_cancelled
			is.Equal(s.Outcome().State, completion.Aborted)   // never a completion
			_, again := s.Next(context.Background())
			is.Equal(errs.CodeOf(again), errs.ClientCancelled) // the end is sticky
		})
	}
}

func TestRequestTimeoutBoundsTheWholeExchange(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	emu := startEmu(t, func(c *emulator.Config) { c.SlowDelay = 400 * time.Millisecond })
	c := tokenClient(t, emu, []string{"REQUEST_TIMEOUT_MS", "1000"})
	start := time.Now()
	s, d, err := open(t, c, userText("hello #scenario=slow_stream"))
	is.NoErr(err)                                      // headers arrive at once
	is.Equal(errs.CodeOf(d.err), errs.UpstreamTimeout) // the stream outlives REQUEST_TIMEOUT_MS
	is.Equal(s.Outcome().State, completion.TimedOut)   // never a completion
	is.True(time.Since(start) < 1900*time.Millisecond) // it ends at the deadline, not at the end of the stream
}
