package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"pmgate/adapters/emulator"
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
	is.Equal(u["usage"], float64(10*(prompt+completion)))            // credits, not tokens
	is.Equal(u["limit"], float64(800000))                            // fixed limit
	is.Equal(u["usageState"], "AVAILABLE")                           // quota fine
	is.Equal(u["userType"], "TEAM")                                  // fixed user type
	is.Equal(s.Count(emulator.KindUserQuery), 1)                     // counted
	is.Equal(s.Requests()[0].Strategy, emulator.StrategyAccessToken) // recognised by host
}

func TestTextTurnWebSessionEndsWithUsageThenEOF(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	st := webPeer(t, s).turn(userQuery("hi from the browser"))

	is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "textChunk", "usage"}) // no [DONE] on web_session
	is.Equal(st.tail, "")                                                                 // complete last frame
	is.Equal(st.text(), greeting+"hi from the browser")                                   // deterministic reply
	is.Equal(s.Requests()[0].Strategy, emulator.StrategyWebSession)                       // recognised by host
	is.Equal(s.Requests()[0].ConversationID, st.conversationID())                         // created id recorded
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
	is.Equal(calls[0].args, weatherArgs)      // required string/integer/boolean only, sorted
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

	is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "toolCallChunk", "usage"}) // web_session tool turn
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
		{"web_session packed", emulator.StrategyWebSession, "web", emulator.ShapeBoth, true},
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
			end := []string{"usage", "[DONE]"}
			if tc.strategy == emulator.StrategyWebSession {
				p, end = webPeer(t, s), []string{"usage"}
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
			is.Equal(st.shape(), append([]string{"conversation", "thinkingChunk", "textChunk"}, end...)) // final text turn
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
	is.Equal(st.conversationID(), conv)    // same conversation
	is.Equal(st.text(), greeting+"second") // new reply
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
		st = p.turn(answer("web", conv, group, calls, parallel, 1))
		if !parallel {
			// only get_weather was called: the emulator asks for the missing tool
			calls, group = st.calls(t)
			is.Equal(len(calls), 1)
			is.Equal(calls[0].name, "get_time")
			st = p.turn(answer("web", conv, group, calls, parallel, 1))
		}
		is.Equal(st.text(), "W=r1-get_weather;T=r1-get_time") // the template, filled
	}
}
