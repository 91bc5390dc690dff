package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

const greeting = "Hello from the pmgate emulator. You said: "

func TestTextTurnAccessTokenEndsWithUsageThenDone(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	q := userQuery("hello there, emulator")
	raw, _ := json.Marshal(q)
	st := tokenPeer(t, s).turn(raw)

	is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "textChunk", "usage", "[DONE]"}) // exact sequence
	is.Equal(st.tail, "")                                                                           // nothing after [DONE]
	is.True(strings.HasPrefix(st.conversationID(), "conv-"))                                        // new conversation id
	is.Equal(st.text(), greeting+"hello there, emulator")                                           // deterministic reply
	for _, d := range st.all("textChunk") {
		is.True(len(d["textContent"].(string)) <= 24) // ChunkBytes default 24
		is.Equal(label(d), model)                     // observed label on every chunk
	}
	is.Equal(label(st.first("thinkingChunk")), model) // thinking carries the label too

	u := st.first("usage")
	thinking := st.first("thinkingChunk")["thinkingContent"].(string)
	prompt, completion := (len(raw)+3)/4, (len(thinking)+len(st.text())+3)/4
	is.Equal(u["promptTokens"], float64(prompt))                     // ceil(body bytes / 4)
	is.Equal(u["completionTokens"], float64(completion))             // ceil(output bytes / 4)
	is.Equal(u["totalTokens"], float64(prompt+completion))           // sum
	is.Equal(u["usage"], float64(28713+100))                         // the plan's usage after this query, not tokens
	is.Equal(u["limit"], float64(50000))                             // the free plan's limit
	is.Equal(u["overage"], float64(0))                               // no overage
	is.Equal(u["usageState"], "AVAILABLE")                           // quota fine
	is.Equal(u["userType"], "FREE_USER")                             // the fixture's user type
	is.Equal(s.Count(emulator.KindUserQuery), 1)                     // counted
	is.Equal(s.Requests()[0].Strategy, emulator.StrategyAccessToken) // recognised by host
}

// A web_session text turn as ps2Api's traces show one: the usage event before
// the output (its fixtures, internal/router/router_test.go:299-304; the 529
// doc's empty streams start with usage), then an explicit [DONE] (529 doc §2,
// §3.1: all 89 successful web streams of 2026-08-27 carried [DONE], measured).
// The usage event still counts the whole exchange.
func TestTextTurnWebSessionFollowsTheTraces(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	raw, _ := json.Marshal(userQuery("hi from the browser"))
	st := webPeer(t, s).turn(raw)

	is.Equal(st.shape(), []string{"conversation", "usage", "thinkingChunk", "textChunk", "[DONE]"}) // usage first, [DONE] last
	is.Equal(st.tail, "")                                                                           // complete last frame
	is.Equal(st.text(), greeting+"hi from the browser")                                             // deterministic reply
	is.Equal(s.Requests()[0].Strategy, emulator.StrategyWebSession)                                 // recognised by host
	is.Equal(s.Requests()[0].ConversationID, st.conversationID())                                   // created id recorded
	u := st.first("usage")
	thinking := st.first("thinkingChunk")["thinkingContent"].(string)
	prompt, completion := (len(raw)+3)/4, (len(thinking)+len(st.text())+3)/4
	is.Equal(u["promptTokens"], float64(prompt))         // ceil(body bytes / 4)
	is.Equal(u["completionTokens"], float64(completion)) // the output that follows it, counted up front
}

// The usage_last_eof profile keeps the web_session order the emulator had
// before the traces: usage after the last output, then EOF.
func TestUsageLastEOFProfileKeepsTheOldWebOrder(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.Profile = emulator.ProfileUsageLastEOF })
	st := webPeer(t, s).turn(userQuery("hi from the browser"))
	is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "textChunk", "usage"}) // no terminal on web_session
	st = tokenPeer(t, s).turn(userQuery("hi from the app"))
	is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "textChunk", "usage", "[DONE]"}) // access_token unchanged
}

func TestTextChunksSplitOnUTF8BoundariesAndQueryIsCutAt200Bytes(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.ChunkBytes = 5 })
	query := strings.Repeat("é", 150) // 300 bytes
	st := tokenPeer(t, s).turn(userQuery(query))

	is.Equal(st.text(), greeting+strings.Repeat("é", 100)) // 200 bytes of the query
	for _, d := range st.all("textChunk") {
		piece := d["textContent"].(string)
		is.True(utf8.ValidString(piece)) // never split inside a character
		is.True(len(piece) <= 5)         // ChunkBytes respected
	}
}

func TestToolTurnParallelGroupOfTwo(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	st := tokenPeer(t, s).turn(userQuery("use tools").withTools(true, true, weatherTool, timeTool))

	is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "toolCallChunk", "usage", "[DONE]"}) // tool turn sequence
	calls, group := st.calls(t)
	is.True(strings.HasPrefix(group, "grp-")) // group id
	is.Equal(len(calls), 2)                   // one call to each of the first two tools
	is.Equal(calls[0].name, "get_weather")    // first tool
	is.Equal(calls[1].name, "get_time")       // second tool
	is.Equal(calls[0].args, weatherArgs)      // the required properties only, sorted
	is.Equal(calls[1].args, timeArgs)         // type list uses the first non-null
	is.True(calls[0].id != calls[1].id)       // distinct call ids
	for _, c := range calls {
		is.True(strings.HasPrefix(c.id, "tc-")) // upstream call id
		is.True(c.chunks >= 2)                  // arguments split across chunks
		for _, n := range c.names {
			is.Equal(n, c.name) // full name repeated on every chunk
		}
		is.Equal(c.groupID, group) // group id on every entry
	}
	for _, d := range st.all("toolCallChunk") {
		is.Equal(label(d), model) // label on tool chunks
	}
}

func TestToolTurnSingleCallWithoutParallelCalling(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	st := webPeer(t, s).turn(userQuery("use a tool").withTools(false, true, weatherTool, timeTool))

	is.Equal(st.shape(), []string{"conversation", "usage", "thinkingChunk", "toolCallChunk", "[DONE]"}) // web_session tool turn
	calls, _ := st.calls(t)
	is.Equal(len(calls), 1)                // only the first tool
	is.Equal(calls[0].name, "get_weather") // first tool
	is.Equal(calls[0].args, weatherArgs)   // reassembled arguments
	is.Equal(calls[0].chunks, 2)           // split in the middle
	is.Equal(len(calls[0].names), 2)       // name on both chunks
}

func TestToolsWithoutAutoRunGiveATextTurn(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	st := tokenPeer(t, s).turn(userQuery("tool_choice none").withTools(true, false, weatherTool, timeTool))

	is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "textChunk", "usage", "[DONE]"}) // text turn
	is.Equal(st.text(), greeting+"tool_choice none")                                                // hello reply
}

// answer builds the continuation of a group in the given form.
func answer(form, convID string, group string, calls []*call, parallel bool, round int) body {
	b := toolResponse(convID, parallel, weatherTool, timeTool)
	var results []result
	for _, c := range calls {
		results = append(results, result{c.id, "r" + string(rune('0'+round)) + "-" + c.name})
	}
	switch form {
	case "grouped":
		return b.grouped(group, results...)
	case "flat":
		return b.flat("", results[0])
	default: // web
		if len(results) == 1 {
			return b.flat(group, results[0])
		}
		return b.packed(group, results...)
	}
}

func TestLoopOfTwoRoundsEndsWithAnswerQuotingEveryResult(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		strategy string
		form     string
		shape    string
		parallel bool
	}{
		{"web_session grouped (parallel)", emulator.StrategyWebSession, "grouped", emulator.ShapeBoth, true},
		{"web_session single", emulator.StrategyWebSession, "web", emulator.ShapeBoth, false},
		{"access_token grouped", emulator.StrategyAccessToken, "grouped", emulator.ShapeBoth, true},
		{"access_token grouped only", emulator.StrategyAccessToken, "grouped", emulator.ShapeGrouped, true},
		{"access_token flat", emulator.StrategyAccessToken, "flat", emulator.ShapeBoth, false},
		{"access_token flat only", emulator.StrategyAccessToken, "flat", emulator.ShapeFlat, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			s := start(t, func(c *emulator.Config) { c.ContinuationShape = tc.shape })
			p := tokenPeer(t, s)
			text := []string{"conversation", "thinkingChunk", "textChunk", "usage", "[DONE]"}
			end := []string{"usage", "[DONE]"}
			if tc.strategy == emulator.StrategyWebSession { // usage first on web_session
				p, end = webPeer(t, s), []string{"[DONE]"}
				text = []string{"conversation", "usage", "thinkingChunk", "textChunk", "[DONE]"}
			}

			st := p.turn(userQuery("loop please #loop=2").withTools(tc.parallel, true, weatherTool, timeTool))
			conv := st.conversationID()
			calls1, group1 := st.calls(t)
			want := 1
			if tc.parallel {
				want = 2
			}
			is.Equal(len(calls1), want) // round 1 group

			st = p.turn(answer(tc.form, conv, group1, calls1, tc.parallel, 1))
			is.Equal(st.conversationID(), conv) // same conversation
			calls2, group2 := st.calls(t)
			is.Equal(len(calls2), want)                          // round 2 group
			is.True(group2 != group1)                            // new group id
			is.True(calls2[0].id != calls1[0].id)                // new call ids
			is.Equal(st.shape()[len(st.shape())-len(end):], end) // strategy end

			st = p.turn(answer(tc.form, conv, group2, calls2, tc.parallel, 2))
			is.Equal(st.shape(), text) // final text turn
			quote := "Tool results received: get_weather=r1-get_weather; get_weather=r2-get_weather"
			if tc.parallel {
				quote = "Tool results received: get_weather=r1-get_weather; get_time=r1-get_time; " +
					"get_weather=r2-get_weather; get_time=r2-get_time"
			}
			is.Equal(st.text(), quote)                      // every result of both rounds, in call order
			is.Equal(s.Count(emulator.KindUserQuery), 1)    // one user query
			is.Equal(s.Count(emulator.KindToolResponse), 2) // two continuations
			is.Equal(s.Count(emulator.KindRejected), 0)     // nothing refused
		})
	}
}

func TestEachPendingGroupCanBeAnsweredOnlyOnce(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	st := p.turn(userQuery("once").withTools(false, true, weatherTool))
	calls, group := st.calls(t)
	b := answer("grouped", st.conversationID(), group, calls, false, 1)

	first := p.turn(b)
	is.Equal(first.text(), "Tool results received: get_weather=r1-get_weather") // accepted once
	second := p.turn(b)
	is.Equal(second.shape(), []string{"conversation", "failure"})                                        // refused in-stream
	is.Equal(second.first("failure")["errorType"], "TOOL_CALL_NOT_FOUND")                                // already answered
	is.Equal(second.first("failure")["message"], "Looks like I lost my way. Try sending a new message.") // fixed message
}

func TestConcurrentAnswersToOneGroupSucceedOnce(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	st := p.turn(userQuery("race").withTools(false, true, weatherTool))
	calls, group := st.calls(t)
	b := answer("grouped", st.conversationID(), group, calls, false, 1)

	const n = 8
	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i] = p.request(context.Background(), b)
	}
	var wg sync.WaitGroup
	results := make([]exchange, n)
	for i := range n {
		wg.Go(func() { results[i] = p.send(reqs[i]) })
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		is.NoErr(r.err)                   // every request answered
		is.Equal(r.status, http.StatusOK) // as a stream
		if parseStream(t, r.body).first("failure") == nil {
			ok++
		}
	}
	is.Equal(ok, 1) // exactly one continuation claims the group
}

func TestUserQueryOnAKnownConversationStartsANewTurn(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := webPeer(t, s)
	conv := p.turn(userQuery("first")).conversationID()
	q := userQuery("second")
	q.input()["conversationId"] = conv
	st := p.turn(q)
	is.Equal(st.conversationID(), conv)                                                                         // same conversation
	is.Equal(st.text(), "Hello again from the pmgate emulator (turn 2 of this conversation). You said: second") // answered from what it holds
	q.input()["query"] = "third"
	is.Equal(p.turn(q).text(), "Hello again from the pmgate emulator (turn 3 of this conversation). You said: third")
	is.Equal(s.Count(emulator.KindContinuedQuery), 2) // observable through the counters
	var turns []int
	for _, r := range s.Requests() {
		turns = append(turns, r.Turn)
	}
	is.Equal(turns, []int{1, 2, 3}) // and the recorded requests
}

func TestUserQueryNamingAnUnknownConversationFailsLikeTheService(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	for _, p := range []*peer{webPeer(t, s), tokenPeer(t, s)} {
		q := userQuery("hello")
		q.input()["conversationId"] = "conv-never-created"
		st := p.turn(q)
		is.Equal(st.shape(), []string{"failure"})                            // no conversation is created
		is.Equal(st.first("failure")["errorType"], "CONVERSATION_NOT_FOUND") // the service's error
	}
}

// With parallel calling on, a flat answer leaves the group unanswered: the
// calls are issued again (new ids) and only the array form answers them.
func TestAParallelGroupAnsweredFlatIsIssuedAgain(t *testing.T) {
	t.Parallel()
	for _, web := range []bool{true, false} {
		is := is.New(t)
		s := start(t)
		p := tokenPeer(t, s)
		if web {
			p = webPeer(t, s)
		}
		st := p.turn(userQuery("go").withTools(true, true, weatherTool, timeTool))
		conv := st.conversationID()
		calls, group := st.calls(t)
		is.Equal(len(calls), 2)
		flat := toolResponse(conv, true, weatherTool, timeTool)
		if web {
			flat = flat.packed(group, result{calls[0].id, "a"}, result{calls[1].id, "b"})
		} else {
			flat = flat.flat(group, result{calls[0].id, "a"})
		}
		st = p.turn(flat)
		again, group2 := st.calls(t)
		is.Equal(len(again), 2)                                // the same calls again
		is.Equal(again[0].name, calls[0].name)                 // same tools
		is.True(again[0].id != calls[0].id && group2 != group) // under fresh ids
		is.Equal(s.Count(emulator.KindRepeatedGroup), 1)       // counted
		st = p.turn(toolResponse(conv, true, weatherTool, timeTool).grouped(group2, result{again[0].id, "a"}, result{again[1].id, "b"}))
		is.Equal(st.text(), "Tool results received: get_weather=a; get_time=b") // the array form answers the group
	}
}

func TestRequestSideConstraintsAreEnforced(t *testing.T) {
	t.Parallel()
	many := make([]map[string]any, 21)
	for i := range many {
		many[i] = map[string]any{"name": "t" + strconv.Itoa(i), "description": "d", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}
	}
	anyOf := map[string]any{"name": "pick", "description": "d", "parameters": map[string]any{"type": "object", "properties": map[string]any{
		"v": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}}}}
	cases := []struct {
		name    string
		cfg     func(*emulator.Config)
		body    func() body
		refusal string
		failure map[string]any // expected failure data; nil: accepted
		status  int            // expected HTTP status when refused before a stream
	}{
		{"query at the limit", nil, func() body { return userQuery(strings.Repeat("x", 10000)) }, "", nil, 0},
		{"query over the limit (UTF-16)", nil, func() body { return userQuery(strings.Repeat("x", 9999) + "😀") }, "query_too_long",
			map[string]any{"errorType": "INPUT_VALIDATION_ERROR", "userMessage": "Agent Mode accepts upto 10000 characters as input."}, 0},
		{"configured query limit", func(c *emulator.Config) { c.MaxQueryChars = 5 }, func() body { return userQuery("123456") }, "query_too_long",
			map[string]any{"errorType": "INPUT_VALIDATION_ERROR", "userMessage": "Agent Mode accepts upto 5 characters as input."}, 0},
		{"20 tools", nil, func() body { return userQuery("x").withTools(false, true, many[:20]...) }, "", nil, 0},
		{"21 tools", nil, func() body { return userQuery("x").withTools(false, true, many...) }, "too_many_tools",
			map[string]any{"errorType": "INPUT_VALIDATION_ERROR", "message": "Forbidden"}, 0},
		{"anyOf accepted by default", nil, func() body { return userQuery("x").withTools(false, true, anyOf) }, "", nil, 0},
		{"anyOf with the switch", func(c *emulator.Config) { c.ForbidSchemaKeywords = true }, func() body { return userQuery("x").withTools(false, true, anyOf) }, "forbidden_schema",
			map[string]any{"errorType": "INPUT_VALIDATION_ERROR", "message": "Forbidden"}, 0},
		{"anyOf with the forbid_schemas profile", func(c *emulator.Config) { c.Profile = emulator.ProfileForbidSchemas }, func() body { return userQuery("x").withTools(false, true, anyOf) }, "forbidden_schema",
			map[string]any{"errorType": "INPUT_VALIDATION_ERROR", "message": "Forbidden"}, 0},
		{"agent missing", nil, func() body { b := userQuery("x"); delete(b.input(), "agent"); return b }, "", nil, http.StatusBadRequest},
		{"agent not null", nil, func() body { b := userQuery("x"); b.input()["agent"] = "a"; return b }, "", nil, http.StatusBadRequest},
		{"startedFrom missing", nil, func() body { b := userQuery("x"); delete(b.input(), "startedFrom"); return b }, "", nil, http.StatusBadRequest},
		{"continuation without agent", nil, func() body {
			b := toolResponse("conv-x", false, weatherTool).flat("g", result{"tc-1", "x"})
			delete(b.input(), "agent")
			return b
		}, "", nil, http.StatusBadRequest},
		{"continuation without startedFrom", nil, func() body {
			b := toolResponse("conv-x", false, weatherTool).flat("g", result{"tc-1", "x"})
			delete(b.input(), "startedFrom")
			return b
		}, "", nil, http.StatusBadRequest},
		{"continuation with a null conversation", nil, func() body {
			b := toolResponse("", false, weatherTool).flat("g", result{"tc-1", "x"})
			b.input()["conversationId"] = nil
			return b
		}, "", nil, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			var muts []func(*emulator.Config)
			if tc.cfg != nil {
				muts = append(muts, tc.cfg)
			}
			s := start(t, muts...)
			for _, p := range []*peer{webPeer(t, s), tokenPeer(t, s)} {
				if tc.status != 0 {
					resp, _ := p.post(tc.body())
					is.Equal(resp.StatusCode, tc.status) // refused before any stream
					continue
				}
				st := p.turn(tc.body())
				f := st.first("failure")
				if tc.failure == nil {
					is.True(f == nil) // accepted
					continue
				}
				is.Equal(st.shape(), []string{"failure"}) // only the failure event, then EOF
				for k, v := range tc.failure {
					is.Equal(f[k], v) // the service's wording
				}
			}
			if tc.refusal != "" {
				is.Equal(s.Count(emulator.KindRefusedInStream), 2) // counted, per strategy
				is.Equal(s.Requests()[0].Refusal, tc.refusal)      // and named in the record
			}
		})
	}
}

// TestToolDirectiveNamesTheToolOfEveryRound: "#tool=<name>" makes every tool
// group of the turn call that tool alone (even with parallel calling on and
// other tools offered first); an unknown name falls back to the default
// choice; "#tool=A,B" is a group of both, in that order.
func TestToolDirectiveNamesTheToolOfEveryRound(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	st := p.turn(userQuery("use the clock #tool=get_time #loop=2").withTools(true, true, weatherTool, timeTool))
	conv := st.conversationID()
	calls, group := st.calls(t)
	is.Equal(len(calls), 1)             // the named tool alone
	is.Equal(calls[0].name, "get_time") // not the first offered
	is.Equal(calls[0].args, timeArgs)   // its own arguments
	st = p.turn(answer("grouped", conv, group, calls, false, 1))
	calls, _ = st.calls(t)
	is.Equal(len(calls), 1)             // round 2 too
	is.Equal(calls[0].name, "get_time") // the conversation keeps the directive

	st = p.turn(userQuery("no such tool #tool=nope").withTools(true, true, weatherTool, timeTool))
	calls, _ = st.calls(t)
	is.Equal(len(calls), 2) // the default choice: the first two

	st = p.turn(userQuery("both, clock first #tool=get_time,nope,get_weather").withTools(true, true, weatherTool, timeTool))
	calls, _ = st.calls(t)
	is.Equal(len(calls), 2) // a group of the named tools that are offered
	is.Equal(calls[0].name, "get_time")
	is.Equal(calls[1].name, "get_weather") // in the directive's order

	st = p.turn(userQuery("both, no parallel #tool=get_time,get_weather").withTools(false, true, weatherTool, timeTool))
	calls, _ = st.calls(t)
	is.Equal(len(calls), 1) // parallel calling off: the first named only
	is.Equal(calls[0].name, "get_time")
}

func TestAnswerTemplateIsFilledWithTheLastResultOfEachTool(t *testing.T) {
	t.Parallel()
	for _, parallel := range []bool{true, false} {
		is := is.New(t)
		s := start(t)
		p := webPeer(t, s)
		q := "Call both tools, then reply with exactly this line and nothing else: W=<result of get_weather>;T=<result of get_time>"
		st := p.turn(userQuery(q).withTools(parallel, true, weatherTool, timeTool))
		conv := st.conversationID()
		calls, group := st.calls(t)
		form := "web"
		if parallel {
			form = "grouped" // a parallel group is answered through toolResponses[]
		}
		st = p.turn(answer(form, conv, group, calls, parallel, 1))
		if !parallel {
			// only get_weather was called: the emulator asks for the missing tool
			calls, group = st.calls(t)
			is.Equal(len(calls), 1)
			is.Equal(calls[0].name, "get_time")
			st = p.turn(answer(form, conv, group, calls, parallel, 1))
		}
		is.Equal(st.text(), "W=r1-get_weather;T=r1-get_time") // the template, filled
	}
}

// "#text_chunks=N" sends the text reply as exactly N textChunk events: the
// reply's own chunks, cut or repeated in order, so a stream can be longer than
// the 200-byte quote allows (the load rig's 50-event stream).
func TestTextChunksDirective(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	query := "hi #text_chunks=46"
	reply := greeting + query // 60 bytes: chunks of 24, 24 and 12
	pieces := []string{reply[:24], reply[24:48], reply[48:]}

	st := p.turn(userQuery(query))
	is.Equal(len(st.kinds), 50)            // conversation, thinking, 46 texts, usage, [DONE]
	is.Equal(len(st.all("textChunk")), 46) // exactly N text events
	is.Equal(st.kinds[0], "conversation")  // the usual frame order around them
	is.Equal(st.kinds[len(st.kinds)-2:], []string{"usage", "[DONE]"})
	var want strings.Builder
	for i := range 46 {
		want.WriteString(pieces[i%3])
	}
	is.Equal(st.text(), want.String()) // the reply's chunks repeated in order

	st = p.turn(userQuery("cut short #text_chunks=1"))
	is.Equal(len(st.all("textChunk")), 1) // fewer than the reply has: the first N
	is.Equal(st.text(), (greeting + "cut short #text_chunks=1")[:24])

	st = p.turn(userQuery("hi"))
	is.Equal(len(st.all("textChunk")), 2) // without the directive: as split (44 bytes)

	// A continued USER_QUERY takes the directive too; a TOOL_RESPONSE ignores it.
	conv := p.turn(userQuery("go").withTools(false, true, weatherTool))
	calls, group := conv.calls(t)
	b := toolResponse(conv.conversationID(), false, weatherTool).flat(group, result{calls[0].id, "sunny #text_chunks=9"})
	st = p.turn(b)
	is.Equal(st.text(), "Tool results received: get_weather=sunny #text_chunks=9") // quoted, not reshaped
	again := userQuery("more #text_chunks=5")
	again.input()["conversationId"] = conv.conversationID()
	st = p.turn(again)
	is.Equal(len(st.all("textChunk")), 5)
	is.True(strings.HasPrefix(st.text(), "Hello again")) // the same conversation

	for _, bad := range []string{"#text_chunks=0", "#text_chunks=1001", "#text_chunks=x", "#text_chunks="} {
		resp, _ := p.post(userQuery("hi " + bad))
		is.Equal(resp.StatusCode, http.StatusBadRequest) // 1-1000 only
	}
}

// The array form on web_session (ps2Api's 529 doc §3.2, measured 2026-08-27:
// toolResponses[] with a toolCallGroupId accepted on _gw/chat, the results
// consumed): a parallel group answered with the array and its group id goes
// on; the same array without the group id is Forbidden (TT's report, whose
// body carried none), and the group stays pending.
func TestWebArrayFormNeedsItsGroupID(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := webPeer(t, s)
	st := p.turn(userQuery("loop please #loop=2").withTools(true, true, weatherTool, timeTool))
	conv := st.conversationID()
	calls, group := st.calls(t)
	is.Equal(len(calls), 2) // a parallel group
	results := []result{{calls[0].id, "r1"}, {calls[1].id, "r2"}}

	without := toolResponse(conv, true, weatherTool, timeTool).grouped(group, results...)
	without.input()["toolCallGroupId"] = nil
	refused := p.turn(without)
	is.Equal(refused.first("failure")["message"], "Forbidden") // the array without its group

	next := p.turn(toolResponse(conv, true, weatherTool, timeTool).grouped(group, results...))
	is.Equal(next.first("failure"), nil)        // the array with its group is accepted
	is.Equal(len(next.all("toolCallChunk")), 4) // and the loop goes on: round 2, two calls of two chunks
}
