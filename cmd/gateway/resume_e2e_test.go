package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// resumeSystem is a system prompt that fits one fresh query with a short
// question but not with a tool round's results as well.
var resumeSystem = "You are a careful coding agent. " + strings.Repeat("Follow the house rules exactly. ", 250) // ~8,000 characters

// bigOutput is a tool result of about 2,500 characters, so that the whole
// transcript after one round is over the service's query limit.
func bigOutput(tail string) func(string) string {
	return func(name string) string {
		return name + " output: " + strings.Repeat("line of tool output\n", 125) + tail
	}
}

// A tool round whose answer failed after its results were dispatched (the
// group is UNCERTAIN), then the user's next message sent with the results in
// the history, as chat completions clients do: the results are never sent
// again, the whole transcript does not fit a fresh query, so the new message
// alone continues the conversation, and the answer says so in its header.
func TestAfterAFailedToolRoundTheNextMessageContinuesTheConversation(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "system", "content": resumeSystem}, {"role": "user", "content": "Look around. #tool=get_weather"}}
			status, c, e := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
			is.Equal(status, 200)
			is.Equal(c.Choices[0].FinishReason, "tool_calls")
			history = append(history, assistantAndResults(c, bigOutput("#scenario=failure_after_text"))...)

			status, _, e = turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
			is.True(status >= 500) // the round failed after its results were dispatched
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)

			// A retry of the same results alone stays refused: their outcome is unknown.
			status, _, e = turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
			is.Equal(e.Error.Code, "continuation_outcome_uncertain")
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)

			history = append(history, msg{"role": "user", "content": "That failed; please go on. #loop=0"})
			resp := s.post(t, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
			is.Equal(resp.StatusCode, 200)
			is.Equal(resp.Header.Get("x-pmgate-conversation"), "continued-after-failure")
			var done completion
			is.NoErr(json.NewDecoder(resp.Body).Decode(&done))
			is.Equal(done.Choices[0].FinishReason, "stop")

			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // the results went up once
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 2)
			is.True(qs[1].conversationID != nil)                                                 // the same conversation
			is.Equal(qs[1].query, "That failed; please go on. #loop=0")                          // only the new message
			is.True(strings.Contains(s.logs.String(), `"disclosure":"continued-after-failure"`)) // and the access line says so
			is.True(strings.Contains(*done.Choices[0].Message.Content, "turn 2 of this conversation"))

			// The next turn continues the answer's anchor as usual.
			history = append(history, msg{"role": "assistant", "content": *done.Choices[0].Message.Content}, msg{"role": "user", "content": "Thanks. #loop=0"})
			resp = s.post(t, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
			is.Equal(resp.StatusCode, 200)
			is.Equal(resp.Header.Get("x-pmgate-conversation"), "")
			qs = userQueries(t, s.emu)
			is.Equal(qs[2].query, "Thanks. #loop=0")
		})
	}
}

// With CONVERSATION_RESUME=false the same turn is refused as too long, as
// before, and nothing is sent.
func TestWithoutResumeTheTurnAfterAFailedRoundIsRefused(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", map[string]string{"CONVERSATION_RESUME": "false"})
	history := []msg{{"role": "system", "content": resumeSystem}, {"role": "user", "content": "Look around. #tool=get_weather"}}
	status, c, _ := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
	is.Equal(status, 200)
	history = append(history, assistantAndResults(c, bigOutput("#scenario=failure_after_text"))...)
	status, _, _ = turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
	is.True(status >= 500)
	history = append(history, msg{"role": "user", "content": "That failed; please go on. #loop=0"})
	status, _, e := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
	is.Equal(status, 400)
	is.Equal(e.Error.Code, "upstream_query_too_long")
	is.Equal(len(userQueries(t, s.emu)), 1)
}

// Claude Code merges the next prompt into the user message that holds the
// tool results (and compacts by appending its instruction there): on
// /v1/messages the text after the tool_result blocks is the new turn when the
// results were dispatched before — after a failed round, and after a round
// that completed (compaction) — never a conflict, never a second dispatch.
func TestMessagesTextAfterDispatchedResultsIsTheNextTurn(t *testing.T) {
	for _, tc := range []struct {
		name, tail, disclosure string
	}{
		{"after a failed round", "#scenario=failure_after_text", "continued-after-failure"},
		{"compaction after a completed round", "", "continued-from-earlier-point"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, "access_token", nil)
			sys, _ := json.Marshal(resumeSystem)
			tools := `[{"name":"get_weather","description":"Weather for a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
			first := `{"model":"` + testModel + `","max_tokens":1024,"system":` + string(sys) + `,"tools":` + tools +
				`,"messages":[{"role":"user","content":"Look around. #tool=get_weather"}]}`
			x := s.postMessages(t, first)
			is.Equal(x.Status, 200)
			var m1 struct {
				Content []struct {
					Type  string          `json:"type"`
					ID    string          `json:"id"`
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				} `json:"content"`
			}
			is.NoErr(json.Unmarshal(x.Body, &m1))
			var use string
			var assistant []any
			for _, b := range m1.Content {
				if b.Type == "tool_use" {
					use = b.ID
					assistant = append(assistant, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": b.Input})
				}
			}
			is.True(use != "")
			result := bigOutput(tc.tail)("get_weather")
			msgs := func(after ...string) string {
				blocks := []any{map[string]any{"type": "tool_result", "tool_use_id": use, "content": result}}
				for _, a := range after {
					blocks = append(blocks, map[string]any{"type": "text", "text": a})
				}
				b, _ := json.Marshal([]any{
					map[string]any{"role": "user", "content": "Look around. #tool=get_weather"},
					map[string]any{"role": "assistant", "content": assistant},
					map[string]any{"role": "user", "content": blocks},
				})
				return `{"model":"` + testModel + `","max_tokens":1024,"system":` + string(sys) + `,"tools":` + tools + `,"messages":` + string(b) + `}`
			}
			x = s.postMessages(t, msgs("<system-reminder>keep going</system-reminder>"))
			if tc.tail != "" {
				is.True(x.Status >= 500)
			} else {
				is.Equal(x.Status, 200)
			}
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)

			x = s.postMessages(t, msgs("<system-reminder>keep going</system-reminder>", "CRITICAL: Respond with TEXT ONLY. Summarize the conversation."))
			is.Equal(x.Status, 200)
			is.Equal(x.Header.Get("x-pmgate-conversation"), tc.disclosure)
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // the results were not sent again
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 2)
			is.True(qs[1].conversationID != nil)
			is.True(strings.HasSuffix(qs[1].query, "CRITICAL: Respond with TEXT ONLY. Summarize the conversation."))
			is.True(!strings.Contains(qs[1].query, "line of tool output")) // only the text after the results
		})
	}
}

// A continued text turn that failed after it was sent leaves its conversation
// resumable (row A10): the client's next request on the same history, whose
// whole transcript no longer fits one query, continues that conversation with
// only its new message (A24), disclosed, instead of being refused as too long
// for the rest of the session; the answer's anchor then continues as usual.
func TestAfterAFailedTextTurnTheNextRequestContinuesTheConversation(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			system := "You are a careful coding agent. " + strings.Repeat("Follow the house rules exactly. ", 218) // ~7,000 characters
			history := []msg{{"role": "system", "content": system},
				{"role": "user", "content": "Start. #loop=0 " + strings.Repeat("context of the task. ", 120)}} // ~2,500 characters
			history, _ = chatTurn(t, s, testModel, history, sunny)

			failing := append(append([]msg(nil), history...), msg{"role": "user", "content": "Go on. #loop=0 #scenario=failure_after_text"})
			status, _, _ := turnResult(t, s, chatBody(t, testModel, failing, toolsJSON, ""))
			is.True(status >= 500) // the continued turn failed after it was sent

			retry := append(append([]msg(nil), history...), msg{"role": "user", "content": "Please go on. #loop=0 " + strings.Repeat("more detail. ", 60)})
			resp := s.post(t, chatBody(t, testModel, retry, toolsJSON, ""))
			is.Equal(resp.StatusCode, 200)
			is.Equal(resp.Header.Get("x-pmgate-conversation"), "continued-after-failure")
			var c completion
			is.NoErr(json.NewDecoder(resp.Body).Decode(&c))
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 3)
			is.True(qs[2].conversationID != nil && qs[1].conversationID != nil && *qs[2].conversationID == *qs[1].conversationID)
			is.True(strings.HasPrefix(qs[2].query, "Please go on.")) // only the new message
			is.True(utf16Len(qs[2].query) < 1000)
			is.True(strings.Contains(s.logs.String(), `"row":"A24"`))

			next := append(append([]msg(nil), retry...), msg{"role": "assistant", "content": *c.Choices[0].Message.Content}, msg{"role": "user", "content": "Thanks. #loop=0"})
			resp = s.post(t, chatBody(t, testModel, next, toolsJSON, ""))
			is.Equal(resp.StatusCode, 200)
			is.Equal(resp.Header.Get("x-pmgate-conversation"), "") // an exact continuation again
			qs = userQueries(t, s.emu)
			is.Equal(qs[3].query, "Thanks. #loop=0")
		})
	}
}

// A conversation the service lost (CONVERSATION_NOT_FOUND) is answered with
// its own code, 410, which no pinned agent retries; the gateway retires it
// (A34), so the next request starts fresh — never a resume that would fail
// the same way again.
func TestALostConversationIsAnsweredAsGoneAndNeverResumed(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "user", "content": "Hello. #loop=0"}}
			history, _ = chatTurn(t, s, testModel, history, sunny)
			s.emu.ForgetConversations()

			next := append(append([]msg(nil), history...), msg{"role": "user", "content": "Again. #loop=0"})
			status, _, e := turnResult(t, s, chatBody(t, testModel, next, toolsJSON, ""))
			is.Equal(status, 410)
			is.Equal(e.Error.Code, "upstream_conversation_lost")
			is.True(strings.Contains(s.logs.String(), `"row":"A34"`))

			status, _, _ = turnResult(t, s, chatBody(t, testModel, next, toolsJSON, ""))
			is.Equal(status, 200) // the retry starts fresh, with the whole (short) transcript
			qs := userQueries(t, s.emu)
			is.True(qs[len(qs)-1].conversationID == nil)
		})
	}
}

// After the service lost the conversation, a transcript too long to start
// fresh is refused as too long, and the refusal says what happened and what
// the client can do — compact — instead of pointing at a recipe the request
// already follows (a short system prompt, few tools).
func TestATooLongTranscriptAfterALostConversationSaysWhatHappened(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, map[string]string{"POSTMAN_MAX_QUERY_CHARS": "600"})
			history := []msg{{"role": "system", "content": "Be brief."},
				{"role": "user", "content": "Hello. " + strings.Repeat("Some context. ", 15) + "#loop=0"}}
			history, _ = chatTurn(t, s, testModel, history, sunny) // no one message takes half of the limit:
			history = append(history, msg{"role": "user", "content": "More. " + strings.Repeat("Other context. ", 15) + "#loop=0"})
			history, _ = chatTurn(t, s, testModel, history, sunny) // the history is what is long
			s.emu.ForgetConversations()

			next := append(append([]msg(nil), history...), msg{"role": "user", "content": "Again. #loop=0"})
			status, _, e := turnResult(t, s, chatBody(t, testModel, next, toolsJSON, ""))
			is.Equal(status, 410)
			is.Equal(e.Error.Code, "upstream_conversation_lost")

			before := len(userQueries(t, s.emu))
			status, _, e = turnResult(t, s, chatBody(t, testModel, next, toolsJSON, ""))
			is.Equal(status, 400)
			is.Equal(e.Error.Code, "upstream_query_too_long")
			is.True(strings.Contains(e.Error.Message, "The service no longer has this conversation")) // what happened
			is.True(strings.Contains(e.Error.Message, "/compact"))                                    // what to do
			is.True(!strings.Contains(e.Error.Message, "docs/CLIENTS.md"))                            // not the recipe it follows
			is.Equal(len(userQueries(t, s.emu)), before)                                              // nothing sent
		})
	}
}
