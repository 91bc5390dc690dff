package postman_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// noParams is a tool without parameters: the emulator calls it with {} (or
// "" with empty_arguments).
var noParams = chat.Tool{Name: "list_files", Description: "List the files"}

// ruleCases are the three ways a stream is judged: web_session with each rule,
// and access_token.
var ruleCases = []struct {
	name   string
	client func(t *testing.T, emu *emulator.Server, opts ...postman.Option) *postman.Client
}{
	{"web_session/usage_after_output_v1", func(t *testing.T, emu *emulator.Server, opts ...postman.Option) *postman.Client {
		return webClient(t, emu, nil, opts...)
	}},
	{"web_session/explicit_only", func(t *testing.T, emu *emulator.Server, opts ...postman.Option) *postman.Client {
		return webClient(t, emu, []string{"POSTMAN_WEB_SESSION_TERMINAL_RULE", "explicit_only"}, opts...)
	}},
	{"access_token/legacy_done", func(t *testing.T, emu *emulator.Server, opts ...postman.Option) *postman.Client {
		return tokenClient(t, emu, nil, opts...)
	}},
}

const (
	complete = completion.CompleteUsageAfterOutput
	explicit = completion.CompleteExplicit
	ambig    = completion.AmbiguousEOF
	trunc    = completion.IncompleteTruncated
)

// Every response-side variant the emulator can produce, with its outcome under
// each rule, on the web_session order the rules were written for (usage after
// the output, then EOF: the usage_last_eof profile; TestTheTracedWebOrder has
// the same variants on the traced default). The first turn asks for a tool
// when tools is set.
func TestEveryResponseVariantHasItsOutcomeOnBothStrategies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scenario string
		tools    bool
		want     [3]completion.State // web usage rule, web explicit_only, access_token
	}{
		{emulator.ScenarioUsageLast, false, [3]completion.State{complete, ambig, explicit}},
		{emulator.ScenarioUsageLast, true, [3]completion.State{complete, ambig, explicit}},
		{emulator.ScenarioUsageAbsent, false, [3]completion.State{ambig, ambig, explicit}},
		{emulator.ScenarioUsageAbsent, true, [3]completion.State{ambig, ambig, explicit}},
		{emulator.ScenarioUsageFirst, false, [3]completion.State{ambig, ambig, explicit}},
		{emulator.ScenarioDoneEvent, false, [3]completion.State{explicit, explicit, explicit}},
		{emulator.ScenarioDoneEvent, true, [3]completion.State{explicit, explicit, explicit}},
		{emulator.ScenarioConvOnChunk, false, [3]completion.State{complete, ambig, explicit}},
		{emulator.ScenarioConvOnChunk, true, [3]completion.State{complete, ambig, explicit}},
		{emulator.ScenarioLateToolName, true, [3]completion.State{complete, ambig, explicit}},
		{emulator.ScenarioEmptyArguments, true, [3]completion.State{complete, ambig, explicit}},
		{emulator.ScenarioNoDoneMarker, false, [3]completion.State{complete, ambig, trunc}},
		{emulator.ScenarioObservedStream, true, [3]completion.State{ambig, ambig, trunc}},
	}
	emu := startEmu(t, func(c *emulator.Config) { c.Profile = emulator.ProfileUsageLastEOF })
	for _, c := range cases {
		for i, rc := range ruleCases {
			name := c.scenario + "/" + rc.name
			if c.tools {
				name += "/tools"
			}
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				req := userText("hello #scenario=" + c.scenario)
				if c.tools {
					req.Chat.Tools = []chat.Tool{noParams}
					req.Chat.ParallelToolCalls = false
				}
				s, d, err := open(t, rc.client(t, emu), req)
				is.NoErr(err)                          // accepted
				is.Equal(s.Outcome().State, c.want[i]) // the variant's outcome under this rule
				is.Equal(d.err == io.EOF, s.Outcome().Complete)
				is.True(strings.HasPrefix(s.ConversationID(), "conv-")) // the conversation id is found wherever it rides
				if !c.tools || !s.Outcome().Complete {
					return
				}
				calls := postman.ToolCalls(s, d.events)
				is.Equal(len(calls), 1)                // one call
				is.Equal(calls[0].Name, noParams.Name) // named, also when the name came late
				is.Equal(calls[0].Arguments, "{}")     // "" arguments become {}
				checkDeltas(t, d.events, calls)
			})
		}
	}
}

// The web_session streams as ps2Api's traces show them (the emulator's
// default): usage before the output (PS internal/router/router_test.go:299-304)
// and an explicit terminal after it, [DONE] (PS 529 doc §2, §3.1: all 89
// successful web streams of 2026-08-27, measured) or a done event (PS's
// 2026-09-17 mock, TT's fixture). Each rule proves success only where that
// evidence is: a terminal after output completes under both web rules; usage
// before the output is no proof, so without a terminal the stream stays
// ambiguous; a terminal after metadata only (PS stream.go streamInternal,
// measured) is an empty stream, and after the loop gate it is the gate.
func TestTheTracedWebOrder(t *testing.T) {
	t.Parallel()
	const empty, gated = completion.IncompleteEmpty, completion.LoopApprovalGated
	cases := []struct {
		scenario string
		tools    bool
		want     [2]completion.State // usage_after_output_v1, explicit_only
		profile  string              // "" for both profiles
	}{
		{"", false, [2]completion.State{explicit, explicit}, ""},
		{"", true, [2]completion.State{explicit, explicit}, ""},
		{emulator.ScenarioDoneEvent, false, [2]completion.State{explicit, explicit}, ""},
		{emulator.ScenarioDoneEvent, true, [2]completion.State{explicit, explicit}, ""},
		{emulator.ScenarioUsageLast, false, [2]completion.State{explicit, explicit}, ""},
		{emulator.ScenarioUsageAbsent, false, [2]completion.State{explicit, explicit}, ""},
		// strict without its [DONE]: usage first, output, EOF
		{emulator.ScenarioNoDoneMarker, false, [2]completion.State{ambig, ambig}, emulator.ProfileStrict},
		{emulator.ScenarioNoDoneMarker, true, [2]completion.State{ambig, ambig}, emulator.ProfileStrict},
		{emulator.ScenarioObservedStream, true, [2]completion.State{ambig, ambig}, ""},
		{emulator.ScenarioEmptyDone, false, [2]completion.State{empty, empty}, ""},
		{emulator.ScenarioLoopApproval, false, [2]completion.State{gated, gated}, ""},
	}
	for _, profile := range []string{emulator.ProfileStrict, emulator.ProfileDoneEvent} {
		emu := startEmu(t, func(c *emulator.Config) { c.Profile = profile })
		for _, c := range cases {
			if c.profile != "" && c.profile != profile {
				continue
			}
			for i, rc := range ruleCases[:2] {
				name := profile + "/" + c.scenario + "/" + rc.name
				if c.tools {
					name += "/tools"
				}
				t.Run(name, func(t *testing.T) {
					is := is.New(t)
					req := userText("hello")
					if c.scenario != "" {
						req = userText("hello #scenario=" + c.scenario)
					}
					if c.tools {
						req.Chat.Tools = []chat.Tool{noParams}
						req.Chat.ParallelToolCalls = false
					}
					s, d, err := open(t, rc.client(t, emu), req)
					is.NoErr(err)
					is.Equal(s.Outcome().State, c.want[i])                                                    // the evidence decides, not the order
					is.Equal(d.err == io.EOF, s.Outcome().Complete)                                           // success only when proven
					is.True(!s.Outcome().Complete || d.text != "" || len(postman.ToolCalls(s, d.events)) > 0) // never an empty success
				})
			}
		}
	}
}

// The profiles change every stream at once: observed streams are what the
// projects' fixtures show (the default rules cannot prove them), done_event
// streams complete explicitly.
func TestEmulatorProfilesThroughTheAdapter(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		profile string
		want    [3]completion.State
	}{
		{emulator.ProfileStrict, [3]completion.State{explicit, explicit, explicit}},
		{emulator.ProfileUsageLastEOF, [3]completion.State{complete, ambig, explicit}},
		{emulator.ProfileObserved, [3]completion.State{ambig, ambig, trunc}},
		{emulator.ProfileDoneEvent, [3]completion.State{explicit, explicit, explicit}},
	} {
		emu := startEmu(t, func(cfg *emulator.Config) { cfg.Profile = c.profile })
		for i, rc := range ruleCases {
			t.Run(c.profile+"/"+rc.name, func(t *testing.T) {
				is := is.New(t)
				s, _, err := open(t, rc.client(t, emu), userText("hello"))
				is.NoErr(err)
				is.Equal(s.Outcome().State, c.want[i]) // the profile's outcome under this rule
			})
		}
	}
}

// A continuation stream that names no conversation keeps the stored one; one
// that names another conversation fails.
func TestContinuationStreamsKeepTheStoredConversation(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			c := sc.client(t, emu, nil)
			req := toolRequest("go #loop=2", false)
			s, first, err := open(t, c, req)
			is.NoErr(err)
			conv := s.ConversationID()
			call := postman.ToolCalls(s, first.events)[0]
			req.Continuation = &ports.Continuation{ConversationID: conv, UpstreamGroupID: call.UpstreamGroupID,
				Results: []ports.ContinuationResult{{UpstreamCallID: call.UpstreamID, OriginalName: call.Name, Content: "x #scenario=continuation_without_conversation"}}}
			s, d, err := open(t, c, req)
			is.NoErr(err)
			is.Equal(d.err, io.EOF) // the continuation completes
			for _, ev := range d.events {
				is.True(ev.Kind != chat.EventConversation) // the stream named no conversation
			}
			is.Equal(s.ConversationID(), conv)               // the stored one is kept
			is.Equal(len(postman.ToolCalls(s, d.events)), 1) // and the next round's call is there
			var body struct {
				Input map[string]json.RawMessage `json:"input"`
			}
			reqs := emu.Requests()
			is.NoErr(json.Unmarshal(reqs[len(reqs)-1].Body, &body))
			is.Equal(string(body.Input["conversationId"]), `"`+conv+`"`) // sent to the stored conversation
		})
	}
}

func TestAStreamNamingAnotherConversationThanTheStoredOneFails(t *testing.T) {
	is := is.New(t)
	body := "data: {\"eventType\":\"conversation\",\"data\":{\"id\":\"conv-2\"}}\n\ndata: {\"eventType\":\"textChunk\",\"data\":{\"textContent\":\"x\"}}\n\ndata: [DONE]\n\n"
	s := postman.NewReaderStreamIn(strings.NewReader(body), postman.ReaderConfig{Rule: completion.RuleLegacyDone, MaxEventBytes: 1 << 20,
		MaxOutputBytes: 1 << 20, MaxToolArgumentBytes: 1 << 20, Observed: []string{upstreamModel}}, "conv-1")
	d := drain(t, s)
	is.Equal(errs.CodeOf(d.err), errs.UpstreamUnverifiedEventShape) // a second, different conversation
	is.Equal(s.ConversationID(), "conv-1")
}

// The emulator refuses an over-long query like the service; the adapter never
// sends one above POSTMAN_MAX_QUERY_CHARS.
func TestQueryLimitOnBothSides(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	long := userText(strings.Repeat("y", 10001))
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			before := emu.Requests()
			_, _, err := open(t, sc.client(t, emu, nil), long)
			is.Equal(errs.CodeOf(err), errs.UpstreamQueryTooLong) // refused by the adapter
			is.Equal(len(emu.Requests()), len(before))            // nothing was sent
			_, d, err := open(t, sc.client(t, emu, []string{"POSTMAN_MAX_QUERY_CHARS", "20000"}), long)
			is.NoErr(err)
			is.Equal(errs.CodeOf(d.err), errs.UpstreamRequestRejected) // a raised limit meets the emulator's: the service's rejection
		})
	}
	is := is.New(t)
	is.Equal(emu.Count(emulator.KindRefusedInStream), 2)
	wide := startEmu(t, func(c *emulator.Config) { c.MaxQueryChars = 20000 })
	_, d, err := open(t, webClient(t, wide, []string{"POSTMAN_MAX_QUERY_CHARS", "20000"}), long)
	is.NoErr(err)
	is.Equal(d.err, io.EOF) // both limits raised: answered
}

// A loop-approval gate after N tool rounds is its own outcome on both
// strategies (each with its terminal).
func TestLoopApprovalAfterToolRounds(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			c := sc.client(t, emu, nil)
			req := toolRequest("go #loop=3 #approval_after=1", false)
			s, first, err := open(t, c, req)
			is.NoErr(err)
			call := postman.ToolCalls(s, first.events)[0]
			req.Continuation = &ports.Continuation{ConversationID: s.ConversationID(), UpstreamGroupID: call.UpstreamGroupID,
				Results: []ports.ContinuationResult{{UpstreamCallID: call.UpstreamID, OriginalName: call.Name, Content: "x"}}}
			_, d, err := open(t, c, req)
			is.NoErr(err)
			is.Equal(errs.CodeOf(d.err), errs.UpstreamLoopApproval) // the gate after one round
		})
	}
}

func TestObserverSeesEveryExchangeOnceWithItsEvidence(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	x := &porttest.Observed{} // the adapter calls its observer synchronously
	opts := []postman.Option{postman.WithObserver(x), postman.WithStreamEvidence()}
	is := is.New(t)
	one := func() ports.Exchange {
		t.Helper()
		evs := x.Take()
		is.Equal(len(evs), 1) // exactly one event per exchange
		is.Equal(evs[0].Kind, ports.EventExchange)
		return evs[0].Exchange
	}

	web := webClient(t, emu, nil, opts...)
	s, d, err := open(t, web, userText("hello"))
	is.NoErr(err)
	is.Equal(d.err, io.EOF)
	ex := one()
	is.Equal(ex.Strategy, "web_session")
	is.Equal(ex.ChatType, "USER_QUERY")
	is.Equal(ex.Rule, "usage_after_output_v1")
	is.Equal(ex.Outcome, "completed")
	is.Equal(ex.Row, "K51") // the row that completed it: [DONE], then a clean EOF
	sum := ex.Evidence
	is.True(!sum.UsageAfterOutput && sum.WholeFrames && sum.SawDoneMarker && !sum.SawDoneEvent) // usage first, then [DONE]
	is.Equal(sum.WouldComplete, map[string]bool{"usage_after_output_v1": true, "explicit_only": true})
	is.Equal(sum.EventTypes["conversation"], 1)
	is.Equal(sum.EventTypes["usage"], 1)
	is.True(sum.EventTypes["textChunk"] >= 1)
	raw, _ := json.Marshal(ex)
	is.True(!strings.Contains(string(raw), s.ConversationID())) // never an id
	is.True(!strings.Contains(string(raw), "Hello from"))       // never content
	_ = s.Close()
	is.Equal(len(x.Take()), 0) // Close after the end reports nothing more

	_, d, err = open(t, web, userText("hi #scenario=done_event"))
	is.NoErr(err)
	is.Equal(d.err, io.EOF)
	ex = one()
	is.True(ex.Evidence.SawDoneEvent)
	is.Equal(ex.Row, "K51") // DONE_SEEN then a clean EOF
	is.Equal(ex.Evidence.WouldComplete, map[string]bool{"usage_after_output_v1": true, "explicit_only": true})

	_, _, err = open(t, web, userText("hi #scenario=unknown_event"))
	is.NoErr(err)
	ex = one()
	is.Equal(ex.Outcome, string(errs.UpstreamUnverifiedEventShape))
	is.Equal(ex.Evidence.EventTypes["unknown"], 1) // a type outside the closed set

	// Usage before the output and no terminal: no rule can prove it.
	_, _, err = open(t, web, userText("hi #scenario=no_done_marker"))
	is.NoErr(err)
	ex = one()
	is.Equal(ex.Outcome, string(errs.UpstreamCompletionAmbiguous))
	is.Equal(ex.Evidence.WouldComplete, map[string]bool{"usage_after_output_v1": false, "explicit_only": false})
	is.True(ex.Evidence.WholeFrames && !ex.Evidence.UsageAfterOutput)

	// The web order before the traces: usage after the output, then EOF.
	old := webClient(t, startEmu(t, func(c *emulator.Config) { c.Profile = emulator.ProfileUsageLastEOF }), nil, opts...)
	_, d, err = open(t, old, userText("hello"))
	is.NoErr(err)
	is.Equal(d.err, io.EOF)
	ex = one()
	is.Equal(ex.Row, "K41") // a usage after the output, then a clean EOF
	is.True(ex.Evidence.UsageAfterOutput && ex.Evidence.WholeFrames && !ex.Evidence.SawDoneMarker && !ex.Evidence.SawDoneEvent)
	is.Equal(ex.Evidence.WouldComplete, map[string]bool{"usage_after_output_v1": true, "explicit_only": false})

	tok := tokenClient(t, emu, nil, opts...)
	_, d, err = open(t, tok, userText("hello"))
	is.NoErr(err)
	is.Equal(d.err, io.EOF)
	ex = one()
	is.Equal(ex.Rule, "legacy_done")
	is.True(ex.Evidence.SawDoneMarker)
	is.Equal(ex.Evidence.EventTypes["[DONE]"], 1)
	is.Equal(ex.Evidence.WouldComplete, map[string]bool{"legacy_done": true})

	// A stream closed before its end is reported once, as cancelled.
	s, err = tok.Open(t.Context(), userText("slow #scenario=slow_stream"))
	is.NoErr(err)
	_ = s.Close()
	_ = s.Close()
	is.Equal(one().Outcome, string(errs.ClientCancelled))

	// A refusal before any stream is reported without a rule, row or evidence.
	_, err = tok.Open(t.Context(), userText("x #scenario=rate_limited"))
	is.True(err != nil)
	ex = one()
	is.Equal(ex, ports.Exchange{Strategy: "access_token", Outcome: string(errs.UpstreamRateLimited)})

	// Without WithStreamEvidence the event carries no evidence (none is collected).
	plain := webClient(t, emu, nil, postman.WithObserver(x))
	_, d, err = open(t, plain, userText("hello"))
	is.NoErr(err)
	is.Equal(d.err, io.EOF)
	ex = one()
	is.Equal(ex.Row, "K51")
	is.True(ex.Evidence == nil)
}
