package main

// Golden tests for the user content Claude Code injects into a session after
// a failure (its recovery nudges and its compaction summary), on the three
// APIs: /v1/messages as Claude Code sends it, and chat completions and the
// Responses API as a router that translates Claude Code's requests sends it
// (the text after tool_result blocks becomes a user message after the tool
// results). Each test drives the gateway against the emulator through the
// failure that makes Claude Code inject the block, then pins what the client
// is answered, the conversation disclosure, the exact upstream query and that
// no tool result is ever dispatched twice.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/internal/anthropicsse"
)

// Claude Code's injected user blocks, verbatim (2.1.263 as its public Rust
// port quotes them; the subagent form also seen in a subagent's log).
const (
	nudgeCutOff         = "Your response above was cut off mid-stream. Resume directly from where it stops — no apology, no recap. If none of it survived, answer the request from the start."
	nudgeCutOffSubagent = "Your response above was cut off mid-stream and only your next message is delivered. Write the complete response again from the start — no apology, no mention of the cut-off."
	nudgeCutOffShort    = "Your response above was cut off."
	nudgeOutputLimit    = "Output token limit hit. Resume directly — no apology, no recap of what you were doing. Pick up mid-thought if that is where the cut happened. Break remaining work into smaller pieces."
	nudgeThinkingOnly   = "[Your previous response had no visible output. Please continue and produce a user-visible response.]"
	nudgeMalformedTool  = "The previous response failed to produce a valid tool call. Please retry the tool call now."
	// compactionSummary begins as Claude Code's summary turn after a
	// compaction begins; the summary itself is the test's.
	compactionSummary = "This session is being continued from a previous conversation. Summary: the user asked for the weather; a get_weather call was issued."
)

// ccCall is one tool call as the client echoes it.
type ccCall struct{ id, name, input string }

// ccItem is one turn of a session in API-neutral form: a user turn (texts),
// an assistant turn (text and calls; thinking: Messages only, a thinking
// block before them), or the results of the previous assistant turn's calls
// with texts after them (Claude Code's same user message; a router's next
// user message).
type ccItem struct {
	role     string // "user", "assistant", "results"
	texts    []string
	calls    []ccCall
	results  []string // result contents, one per call of the previous assistant turn
	thinking bool
}

// ccAnswer is what one API answered, read into the same neutral form.
type ccAnswer struct {
	status     int
	disclosure string // x-pmgate-conversation
	code       string // the error code (JSON error or stream error event), "" on success
	text       string
	calls      []ccCall
}

// ccAPI renders a session for one API and reads its answer.
type ccAPI struct {
	name string
	send func(t *testing.T, s *served, system string, session []ccItem) ccAnswer
}

var ccAPIs = []ccAPI{{"messages", ccMessages}, {"chat", ccChat}, {"responses", ccResponses}}

// ccMessages sends the session as Claude Code does: ?beta=true, x-api-key,
// the attribution block first in system, tools, stream.
func ccMessages(t *testing.T, s *served, system string, session []ccItem) ccAnswer {
	t.Helper()
	var msgs []any
	var prev []ccCall
	for _, it := range session {
		var content []any
		switch it.role {
		case "user":
			for _, x := range it.texts {
				content = append(content, map[string]any{"type": "text", "text": x})
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": content})
		case "assistant":
			if it.thinking {
				content = append(content, map[string]any{"type": "thinking", "thinking": "Let me think.", "signature": "c2lnbmF0dXJl"})
			}
			for _, x := range it.texts {
				content = append(content, map[string]any{"type": "text", "text": x})
			}
			for _, c := range it.calls {
				content = append(content, map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": json.RawMessage(c.input)})
			}
			if content == nil {
				content = []any{}
			}
			msgs = append(msgs, map[string]any{"role": "assistant", "content": content})
			prev = it.calls
		case "results":
			for i, c := range prev {
				content = append(content, map[string]any{"type": "tool_result", "tool_use_id": c.id, "content": it.results[i]})
			}
			for _, x := range it.texts {
				content = append(content, map[string]any{"type": "text", "text": x})
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": content})
		}
	}
	b, _ := json.Marshal(map[string]any{"model": testModel, "max_tokens": 32000, "stream": true,
		"system": []any{map[string]any{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.263.e4f; cc_entrypoint=sdk-cli;"},
			map[string]any{"type": "text", "text": system, "cache_control": map[string]any{"type": "ephemeral"}}},
		"tools": json.RawMessage(weatherToolAnth), "messages": msgs})
	ex := s.postMessages(t, string(b))
	a := ccAnswer{status: ex.Status, disclosure: ex.Header.Get("x-pmgate-conversation")}
	res, err := anthropicsse.CheckExchange(ex)
	if err != nil {
		t.Fatalf("answer breaks the Messages grammar: %v\n%s", err, ex.Body)
	}
	if res.Outcome != anthropicsse.Success {
		a.code = codeIn(ex.Body)
		return a
	}
	a.text = res.Text()
	for _, u := range res.ToolUses() {
		a.calls = append(a.calls, ccCall{u.ID, u.Name, string(u.Input)})
	}
	return a
}

// ccChat sends the session as a router translating Claude Code's request to
// chat completions does: text after the results is the next user message.
func ccChat(t *testing.T, s *served, system string, session []ccItem) ccAnswer {
	t.Helper()
	msgs := []msg{{"role": "system", "content": system}}
	var prev []ccCall
	for _, it := range session {
		switch it.role {
		case "user":
			msgs = append(msgs, msg{"role": "user", "content": strings.Join(it.texts, "\n\n")})
		case "assistant":
			m := msg{"role": "assistant", "content": strings.Join(it.texts, "")}
			var calls []msg
			for _, c := range it.calls {
				calls = append(calls, msg{"id": c.id, "type": "function", "function": msg{"name": c.name, "arguments": c.input}})
			}
			if calls != nil {
				m["tool_calls"] = calls
			}
			msgs = append(msgs, m)
			prev = it.calls
		case "results":
			for i, c := range prev {
				msgs = append(msgs, msg{"role": "tool", "tool_call_id": c.id, "content": it.results[i]})
			}
			if len(it.texts) > 0 {
				msgs = append(msgs, msg{"role": "user", "content": strings.Join(it.texts, "\n\n")})
			}
		}
	}
	resp := s.post(t, chatBody(t, testModel, msgs, toolsJSON, `,"parallel_tool_calls":false`))
	raw, _ := io.ReadAll(resp.Body)
	a := ccAnswer{status: resp.StatusCode, disclosure: resp.Header.Get("x-pmgate-conversation")}
	if resp.StatusCode != 200 {
		a.code = codeIn(raw)
		return a
	}
	var c completion
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("chat answer: %v", err)
	}
	m := c.Choices[0].Message
	if m.Content != nil {
		a.text = *m.Content
	}
	for _, tc := range m.ToolCalls {
		a.calls = append(a.calls, ccCall{tc.ID, tc.Function.Name, tc.Function.Arguments})
	}
	return a
}

// ccResponses sends the session as a router translating Claude Code's
// request to the Responses API does (store false, the whole input).
func ccResponses(t *testing.T, s *served, system string, session []ccItem) ccAnswer {
	t.Helper()
	var input []any
	var prev []ccCall
	for _, it := range session {
		switch it.role {
		case "user":
			input = append(input, map[string]any{"role": "user", "content": strings.Join(it.texts, "\n\n")})
		case "assistant":
			if len(it.texts) > 0 {
				input = append(input, map[string]any{"role": "assistant", "content": strings.Join(it.texts, "")})
			}
			for _, c := range it.calls {
				input = append(input, map[string]any{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.input})
			}
			prev = it.calls
		case "results":
			for i, c := range prev {
				input = append(input, map[string]any{"type": "function_call_output", "call_id": c.id, "output": it.results[i]})
			}
			if len(it.texts) > 0 {
				input = append(input, map[string]any{"role": "user", "content": strings.Join(it.texts, "\n\n")})
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"model": testModel, "instructions": system, "input": input, "store": false,
		"parallel_tool_calls": false, "tools": []any{map[string]any{"type": "function", "name": "get_weather", "description": "Weather for a city",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}})
	resp := s.do(t, "POST", "/v1/responses", strings.NewReader(string(b)), "Content-Type", "application/json")
	raw, _ := io.ReadAll(resp.Body)
	a := ccAnswer{status: resp.StatusCode, disclosure: resp.Header.Get("x-pmgate-conversation")}
	if resp.StatusCode != 200 {
		a.code = codeIn(raw)
		return a
	}
	var r struct {
		Output []struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("responses answer: %v", err)
	}
	for _, o := range r.Output {
		switch o.Type {
		case "message":
			for _, c := range o.Content {
				a.text += c.Text
			}
		case "function_call":
			a.calls = append(a.calls, ccCall{o.CallID, o.Name, o.Arguments})
		}
	}
	return a
}

// codeIn is the error code in a JSON error body or a stream's error event.
func codeIn(raw []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Code != "" {
		return e.Error.Code
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if p, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(p), &e) == nil && e.Error.Code != "" {
			return e.Error.Code
		}
	}
	return ""
}

// resultDispatches counts, per upstream tool call id, the TOOL_RESPONSEs that
// carried a result for it (the flat form and the array form).
func resultDispatches(t *testing.T, emu *emulator.Server) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, r := range emu.Requests() {
		if r.ChatType != emulator.KindToolResponse {
			continue
		}
		var b struct {
			Input struct {
				ToolCallID    *string `json:"toolCallId"`
				ToolResponses []struct {
					ToolCallID string `json:"toolCallId"`
				} `json:"toolResponses"`
			} `json:"input"`
		}
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatalf("TOOL_RESPONSE body: %v", err)
		}
		if b.Input.ToolCallID != nil && *b.Input.ToolCallID != "" {
			n[*b.Input.ToolCallID]++
		}
		for _, x := range b.Input.ToolResponses {
			n[x.ToolCallID]++
		}
	}
	return n
}

// atMostOnce reports whether no tool call's result went up twice.
func atMostOnce(n map[string]int) bool {
	for _, c := range n {
		if c > 1 {
			return false
		}
	}
	return true
}

// firstConversation is the conversation the emulator created for the first
// USER_QUERY.
func firstConversation(emu *emulator.Server) string {
	for _, r := range emu.Requests() {
		if r.ChatType == emulator.KindUserQuery {
			return r.ConversationID
		}
	}
	return ""
}

func resultsThen(n int, content string, after ...string) ccItem {
	rs := make([]string, n)
	for i := range rs {
		rs[i] = content
	}
	return ccItem{role: "results", results: rs, texts: after}
}

func userSays(texts ...string) ccItem { return ccItem{role: "user", texts: texts} }

func echoed(a ccAnswer) ccItem {
	it := ccItem{role: "assistant", calls: a.calls}
	if a.text != "" {
		it.texts = []string{a.text}
	}
	return it
}

// A round whose stream broke after its results were dispatched makes Claude
// Code (non-interactive main, or a subagent) send the same results again
// with its cut-off nudge after them in the same user message; a router sends
// the nudge as the next user message. The results are history (their group
// is UNCERTAIN): never sent again; the session is too long to start fresh,
// so the nudge alone goes up, verbatim, as the next turn of the conversation
// that holds the results, disclosed continued-after-failure. In the next
// round the nudge is gone from that message again (the transcript is not
// append-only): the call its turn issued still gets its one result, in that
// conversation (continued-with-earlier-history), and the same request again
// gets the recorded answer, never a second dispatch.
func TestClaudeCodesCutOffNudgeAfterDispatchedResultsIsTheNextTurn(t *testing.T) {
	for _, api := range ccAPIs {
		for _, st := range strategies {
			for _, form := range []struct{ name, nudge string }{{"main", nudgeCutOff}, {"subagent", nudgeCutOffSubagent}, {"short", nudgeCutOffShort}} {
				if st == "web_session" && form.nudge != nudgeCutOff {
					continue // the strategy does not change the rule; one text is enough there
				}
				nudge := form.nudge
				t.Run(fmt.Sprintf("%s/%s/%s", api.name, st, form.name), func(t *testing.T) {
					is := is.New(t)
					s := serve(t, st, nil)
					session := []ccItem{userSays("Look around. #tool=get_weather")}
					a := api.send(t, s, resumeSystem, session)
					is.Equal(a.status, 200)
					is.Equal(len(a.calls), 1) // the tool round
					session = append(session, echoed(a))
					failing := bigOutput("#scenario=failure_after_text")("get_weather")

					a = api.send(t, s, resumeSystem, append(session, resultsThen(1, failing, "<system-reminder>keep going</system-reminder>")))
					is.Equal(a.code, "continuation_outcome_uncertain")  // the round broke after its results went up
					is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // once

					a = api.send(t, s, resumeSystem, append(session, resultsThen(1, failing, "<system-reminder>keep going</system-reminder>", nudge)))
					is.Equal(a.status, 200)
					is.Equal(a.code, "")
					is.Equal(a.disclosure, "continued-after-failure")
					is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // the results were not sent again
					qs := userQueries(t, s.emu)
					is.Equal(len(qs), 2)
					is.True(qs[1].conversationID != nil && *qs[1].conversationID == firstConversation(s.emu)) // the conversation that holds them
					is.Equal(qs[1].query, "<system-reminder>keep going</system-reminder>\n\n"+nudge)          // exactly the text after the results
					is.Equal(len(a.calls), 1)                                                                 // the resumed turn calls the tool again

					// The next round: the nudge is gone from the results' message.
					session = append(session, resultsThen(1, failing, "<system-reminder>keep going</system-reminder>"), echoed(a), resultsThen(1, "sunny for get_weather"))
					a = api.send(t, s, resumeSystem, session)
					is.Equal(a.status, 200)
					is.Equal(a.code, "")
					is.Equal(a.disclosure, "continued-with-earlier-history")
					is.True(strings.Contains(a.text, "sunny for get_weather")) // answered from the new result
					is.Equal(s.emu.Count(emulator.KindToolResponse), 2)        // which went up once

					again := api.send(t, s, resumeSystem, session)
					is.Equal(again.status, 200)                                  // the same request again (a retry, the non-stream fallback):
					is.Equal(again.text, a.text)                                 // the recorded answer,
					is.Equal(again.disclosure, "continued-with-earlier-history") // disclosed as it was
					is.Equal(s.emu.Count(emulator.KindToolResponse), 2)          // never a second dispatch
					is.Equal(len(userQueries(t, s.emu)), 2)
					is.True(atMostOnce(resultDispatches(t, s.emu))) // no result of any call went up twice
				})
			}
		}
	}
}

// The same nudge in a short session: the whole transcript fits one query, so
// it starts a fresh conversation that holds exactly the client's history —
// the results as transcript text, the nudge as the last user turn — and no
// TOOL_RESPONSE goes up again. The query is pinned byte for byte.
func TestAShortSessionsCutOffNudgeStartsFreshWithTheWholeTranscript(t *testing.T) {
	for _, api := range ccAPIs {
		t.Run(api.name, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, "access_token", nil)
			session := []ccItem{userSays("Look around. #tool=get_weather")}
			a := api.send(t, s, "You are Claude Code.", session)
			is.Equal(len(a.calls), 1)
			id := a.calls[0].id
			session = append(session, echoed(a))
			a = api.send(t, s, "You are Claude Code.", append(session, resultsThen(1, "sunny #scenario=failure_after_text")))
			is.Equal(a.code, "continuation_outcome_uncertain") // the round broke after its results went up

			a = api.send(t, s, "You are Claude Code.", append(session, resultsThen(1, "sunny #scenario=failure_after_text", nudgeCutOff)))
			is.Equal(a.status, 200)
			is.Equal(a.code, "")
			is.Equal(a.disclosure, "") // a fresh conversation holds exactly the client's history
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 2)
			is.True(qs[1].conversationID == nil) // fresh
			is.Equal(qs[1].query, "[System]\nYou are Claude Code.\n\n[User]\nLook around. #tool=get_weather\n\n[Assistant Tool Calls]\n"+
				`[{"id":"`+id+`","name":"get_weather","arguments":"{\"city\":\"value-city\"}"}]`+
				"\n\n[Tool Result id="+id+"]\nsunny #scenario=failure_after_text\n\n[User]\n"+nudgeCutOff) // the golden query
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // the results were dispatched once
		})
	}
}

// Claude Code's other recovery nudges follow an answer it judged unfinished:
// an output-limit stop (max_tokens), a malformed tool call (a tool_use stop
// without a tool_use block) or a thinking-only answer. The gateway never
// answers any of these (it reports no max_tokens, shows tool_use only with
// its block and emits no thinking; a thinking-only upstream turn is
// upstream_empty_stream), so the nudge reaches it only in a session that
// also ran elsewhere. It is then an ordinary user turn: when the history
// before it is one the gateway answered, the conversation is continued
// exactly (no disclosure) with the nudge alone, verbatim, as its query —
// up to three times in a row for the output limit — and the tool round the
// answer starts dispatches each result once. On /v1/messages the thinking-
// only answer Claude Code echoes (a thinking block alone) carries nothing for
// the upstream and is left out, so the prompt it answered and the nudge are
// the new turn; that echo exists only in the Messages API.
func TestClaudeCodesRecoveryNudgesContinueTheConversation(t *testing.T) {
	for _, tc := range []struct{ name, nudge string }{
		{"output limit", nudgeOutputLimit}, {"malformed tool call", nudgeMalformedTool}, {"thinking only", nudgeThinkingOnly},
	} {
		for _, api := range ccAPIs {
			if tc.nudge == nudgeThinkingOnly && api.name != "messages" {
				continue
			}
			t.Run(tc.name+"/"+api.name, func(t *testing.T) {
				is := is.New(t)
				s := serve(t, "access_token", nil)
				session := []ccItem{userSays("Write the report. #loop=0")}
				a := api.send(t, s, "You are Claude Code.", session)
				is.Equal(a.status, 200)
				session = append(session, echoed(a))
				want := tc.nudge
				if tc.nudge == nudgeThinkingOnly {
					session = append(session, userSays("And the summary?"), ccItem{role: "assistant", thinking: true})
					want = "[User]\nAnd the summary?\n\n[User]\n" + tc.nudge
				}
				for round := 1; round <= 3; round++ {
					session = append(session, userSays(tc.nudge))
					a = api.send(t, s, "You are Claude Code.", session)
					is.Equal(a.status, 200)
					is.Equal(a.disclosure, "") // an exact continuation
					qs := userQueries(t, s.emu)
					last := qs[len(qs)-1]
					is.True(last.conversationID != nil && *last.conversationID == firstConversation(s.emu)) // the same conversation
					is.Equal(last.query, want)                                                              // the nudge alone, verbatim
					want = tc.nudge
					is.Equal(len(a.calls), 1) // the model goes on with a tool round
					before := s.emu.Count(emulator.KindToolResponse)
					session = append(session, echoed(a), resultsThen(1, "sunny for get_weather"))
					a = api.send(t, s, "You are Claude Code.", session)
					is.Equal(a.status, 200)
					is.True(strings.Contains(a.text, "sunny for get_weather"))
					again := api.send(t, s, "You are Claude Code.", session)
					is.Equal(again.text, a.text)                               // a re-send gets the recorded answer
					is.Equal(s.emu.Count(emulator.KindToolResponse), before+1) // one dispatch
					session = append(session, echoed(a))
					if tc.nudge != nudgeOutputLimit {
						break // once per turn
					}
				}
				is.True(atMostOnce(resultDispatches(t, s.emu)))
			})
		}
	}
}

// Claude Code's automatic compaction in the middle of a tool loop: its next
// request is the summary turn, the pending call echoed as issued and its
// result. The transcript before the call is no longer the one it was issued
// in, so the result goes up once, as the group's TOOL_RESPONSE, in the
// conversation that holds that history, disclosed
// continued-with-earlier-history; the same request again gets the recorded
// answer, disclosed, never a second dispatch. After /compact the summary
// turn alone (no pending call) is a fresh turn whose query is the whole,
// short transcript.
func TestClaudeCodesCompactionSummaryTurn(t *testing.T) {
	for _, api := range ccAPIs {
		t.Run(api.name+"/mid-loop", func(t *testing.T) {
			// The compacted transcript fits: a fresh conversation with the
			// call and its result as text, exactly the client's transcript;
			// the same request again goes the same way, never a TOOL_RESPONSE.
			is := is.New(t)
			s := serve(t, "access_token", nil)
			a := api.send(t, s, resumeSystem, []ccItem{userSays("Look around. #tool=get_weather")})
			is.Equal(len(a.calls), 1) // the pending call
			session := []ccItem{userSays(compactionSummary), echoed(a), resultsThen(1, "sunny for get_weather")}
			for n := 2; n <= 3; n++ {
				a := api.send(t, s, resumeSystem, session)
				is.Equal(a.status, 200)
				is.Equal(a.disclosure, "")
				is.Equal(s.emu.Count(emulator.KindToolResponse), 0)
				qs := userQueries(t, s.emu)
				is.Equal(len(qs), n)
				is.True(qs[n-1].conversationID == nil)                            // fresh
				is.True(strings.Contains(qs[n-1].query, "sunny for get_weather")) // the result, as text
			}
		})
		t.Run(api.name+"/mid-loop, too long to start fresh", func(t *testing.T) {
			// Too long: the pending call is answered in its conversation, which
			// holds the history, disclosed; a re-send gets the recorded answer.
			is := is.New(t)
			s := serve(t, "access_token", nil)
			a := api.send(t, s, resumeSystem, []ccItem{userSays("Look around. #tool=get_weather")})
			is.Equal(len(a.calls), 1)                                                          // the pending call
			long := compactionSummary + " " + strings.Repeat("What was done in detail. ", 420) // over 10,000 characters
			session := []ccItem{userSays(long), echoed(a), resultsThen(1, "sunny for get_weather")}
			a = api.send(t, s, resumeSystem, session)
			is.Equal(a.status, 200)
			is.Equal(a.disclosure, "continued-with-earlier-history")
			is.True(strings.Contains(a.text, "sunny for get_weather")) // answered from the result
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)
			is.Equal(len(userQueries(t, s.emu)), 1) // the summary itself never went up: the conversation holds the history
			again := api.send(t, s, resumeSystem, session)
			is.Equal(again.status, 200)
			is.Equal(again.text, a.text) // the recorded answer
			is.Equal(again.disclosure, "continued-with-earlier-history")
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // never a second dispatch
			is.True(atMostOnce(resultDispatches(t, s.emu)))
		})
		t.Run(api.name+"/after compact", func(t *testing.T) {
			is := is.New(t)
			s := serve(t, "access_token", nil)
			a := api.send(t, s, "You are Claude Code.", []ccItem{userSays(compactionSummary, "Please go on. #loop=0")})
			is.Equal(a.status, 200)
			is.Equal(a.disclosure, "")
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 1)
			is.True(qs[0].conversationID == nil)
			is.Equal(qs[0].query, "[System]\nYou are Claude Code.\n\n[User]\n"+compactionSummary+"\n\nPlease go on. #loop=0") // the golden query
		})
	}
}

// The cut-off nudge after a text turn whose stream broke after some text, in
// the same turn: Claude Code writes it into the user message of the prompt
// that failed; a router sends it as the next user message. The failed turn
// left its conversation resumable and the session is too long to start
// fresh, so the conversation goes on, disclosed continued-after-failure:
// through a router only the nudge goes up (the conversation already holds
// the prompt the failed turn sent); on /v1/messages the prompt and the nudge
// are one message, so both go up. (The emulator fails that turn again: its
// directive is in the prompt, which comes again; the routing is what this
// pins.)
func TestClaudeCodesCutOffNudgeAfterABrokenTextTurnContinuesTheConversation(t *testing.T) {
	system := "You are a careful coding agent. " + strings.Repeat("Follow the house rules exactly. ", 218) // ~7,000 characters
	for _, api := range ccAPIs {
		t.Run(api.name, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, "access_token", nil)
			session := []ccItem{userSays("Start. #loop=0 " + strings.Repeat("context of the task. ", 120))} // ~2,500 characters
			a := api.send(t, s, system, session)
			is.Equal(a.status, 200)
			session = append(session, echoed(a))
			prompt := "Go on. #loop=0 #scenario=failure_after_text #once"
			a = api.send(t, s, system, append(session, userSays(prompt)))
			is.Equal(a.code, "upstream_failure") // broke after it was sent

			retry := append(session, userSays(prompt, nudgeCutOff))
			want := prompt + "\n\n" + nudgeCutOff
			if api.name != "messages" {
				retry = append(session, userSays(prompt), userSays(nudgeCutOff))
				want = nudgeCutOff
			}
			a = api.send(t, s, system, retry)
			is.Equal(a.disclosure, "continued-after-failure")
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 3)
			is.True(qs[2].conversationID != nil && *qs[2].conversationID == firstConversation(s.emu)) // the conversation that holds the failed turn
			is.Equal(qs[2].query, want)                                                               // only what it does not hold yet
			if api.name != "messages" {
				is.Equal(a.status, 200)
				is.Equal(a.code, "")
			}
			is.Equal(s.emu.Count(emulator.KindToolResponse), 0)
		})
	}
}
