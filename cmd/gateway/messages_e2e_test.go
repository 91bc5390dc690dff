package main

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

// rawMessages posts a Messages request body (x-api-key, ?beta=true, as
// Claude Code does) and returns status, headers' usage mark and body.
func rawMessages(t *testing.T, s *served, body string, header ...string) (int, string, string) {
	t.Helper()
	h := append([]string{"Content-Type", "application/json", "Authorization", "", "x-api-key", testKey,
		"anthropic-version", "2023-06-01"}, header...)
	resp := s.do(t, "POST", "/v1/messages?beta=true", strings.NewReader(body), h...)
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("x-pmgate-usage"), string(b)
}

func messagesBody(text string, stream bool, extra string) string {
	b, _ := json.Marshal(text)
	s, _ := json.Marshal(stream)
	return `{"model":"` + testModel + `","max_tokens":32000,"stream":` + string(s) + `,"messages":[{"role":"user","content":` + string(b) + `}]` + extra + `}`
}

func TestTheMessagesAPIAnswersTextThroughEachStrategy(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			status, usage, body := rawMessages(t, s, messagesBody("Hello there", false, ""))
			is.Equal(status, 200)
			var m struct {
				ID         string
				Content    []struct{ Type, Text string }
				StopReason string `json:"stop_reason"`
			}
			is.NoErr(json.Unmarshal([]byte(body), &m))
			is.True(strings.HasPrefix(m.ID, "msg_"))
			is.Equal(len(m.Content), 1)
			is.True(m.Content[0].Text != "")
			is.Equal(m.StopReason, "end_turn")
			is.True(usage == "reported" || usage == "estimated")

			status, _, body = rawMessages(t, s, messagesBody("Hello again", true, ""))
			is.Equal(status, 200)
			is.True(strings.HasPrefix(body, "event: message_start\n"))
			is.True(strings.HasSuffix(body, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
			is.True(!strings.Contains(body, "[DONE]"))
			is.Equal(s.emu.Count(emulator.KindUserQuery), 2) // one dispatch per request
		})
	}
}

// weatherToolAnth is a custom tool in the Messages form.
const weatherToolAnth = `[{"name":"get_weather","description":"weather of a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"cache_control":{"type":"ephemeral"}}]`

// anthTurn posts a Messages request and checks its answer strictly (the
// stream grammar, or the Message shape); it returns the status and result.
func anthTurn(t *testing.T, s *served, body string, header ...string) (int, anthropicsse.Result, string) {
	t.Helper()
	status, _, raw := rawMessages(t, s, body, header...)
	if status != 200 {
		if _, err := anthropicsse.CheckError(status, []byte(raw)); err != nil {
			t.Fatalf("error body: %v", err)
		}
		return status, anthropicsse.Result{}, raw
	}
	var res anthropicsse.Result
	var err error
	if strings.HasPrefix(raw, "event: ") {
		res, err = anthropicsse.Check([]byte(raw))
	} else {
		res, err = anthropicsse.CheckMessage([]byte(raw))
	}
	if err != nil {
		t.Fatalf("answer breaks the Messages grammar: %v\n%s", err, raw)
	}
	return status, res, raw
}

// anthBody is a Messages request with the messages (JSON) and the tools.
func anthBody(msgs []any, stream bool, extra string) string {
	b, _ := json.Marshal(msgs)
	s, _ := json.Marshal(stream)
	return `{"model":"` + testModel + `","max_tokens":32000,"stream":` + string(s) + `,"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.9.` +
		randHex() + `; cc_entrypoint=cli;"},{"type":"text","text":"You are Claude Code."}],"messages":` + string(b) + extra + `}`
}

var hexN int

// randHex changes the attribution block on every request, as Claude Code did
// before 2.1.181.
func randHex() string { hexN++; return fmt.Sprintf("%04x", hexN) }

// assistantOf is the assistant message Claude Code echoes for a result.
func assistantOf(res anthropicsse.Result) map[string]any {
	var content []any
	if t := res.Text(); t != "" {
		content = append(content, map[string]any{"type": "text", "text": t})
	}
	for _, u := range res.ToolUses() {
		var in any
		_ = json.Unmarshal(u.Input, &in)
		content = append(content, map[string]any{"type": "tool_use", "id": u.ID, "name": u.Name, "input": in})
	}
	return map[string]any{"role": "assistant", "content": content}
}

// resultsOf answers every tool_use of res, in reverse order (Claude Code may
// reorder), with a system reminder after them.
func resultsOf(res anthropicsse.Result) map[string]any {
	var content []any
	uses := res.ToolUses()
	for i := len(uses) - 1; i >= 0; i-- {
		content = append(content, map[string]any{"type": "tool_result", "tool_use_id": uses[i].ID,
			"content": []any{map[string]any{"type": "text", "text": "sunny for " + uses[i].Name}}})
	}
	content = append(content, map[string]any{"type": "text", "text": "<system-reminder>keep going</system-reminder>"})
	return map[string]any{"role": "user", "content": content}
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

func TestTheMessagesAPIRunsAToolLoopWithOneDispatchPerTurn(t *testing.T) {
	for _, st := range strategies {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", st, stream), func(t *testing.T) {
				is := is.New(t)
				s := serve(t, st, nil)
				msgs := []any{user("weather please #loop=2")}
				for round := 0; ; round++ {
					is.True(round <= 2)
					status, res, raw := anthTurn(t, s, anthBody(msgs, stream, `,"tools":`+weatherToolAnth))
					is.Equal(status, 200)
					is.Equal(res.Outcome, anthropicsse.Success)
					if res.StopReason != "tool_use" {
						is.Equal(round, 2)
						is.True(strings.Contains(res.Text(), "sunny for get_weather")) // quoting the results
						break
					}
					for _, u := range res.ToolUses() {
						is.True(strings.HasPrefix(u.ID, "toolu_")) // Anthropic-style public ids
					}
					is.True(!strings.Contains(raw, "call_pmn_"))
					msgs = append(msgs, assistantOf(res), resultsOf(res))
				}
				is.Equal(s.emu.Count(emulator.KindUserQuery), 1)
				is.Equal(s.emu.Count(emulator.KindToolResponse), 2) // exactly one TOOL_RESPONSE per round
			})
		}
	}
}

func TestAReSentMessagesContinuationGetsTheRecordedAnswerNotASecondDispatch(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			msgs := []any{user("weather please")}
			_, res, _ := anthTurn(t, s, anthBody(msgs, true, `,"tools":`+weatherToolAnth))
			is.Equal(res.StopReason, "tool_use")
			msgs = append(msgs, assistantOf(res), resultsOf(res))
			body := anthBody(msgs, true, `,"tools":`+weatherToolAnth)
			_, first, _ := anthTurn(t, s, body)
			is.Equal(first.Outcome, anthropicsse.Success)
			// Claude Code's fallback: the same request again, stream:false.
			_, again, _ := anthTurn(t, s, strings.Replace(body, `"stream":true`, `"stream":false`, 1))
			is.Equal(again.Outcome, anthropicsse.Success)
			is.Equal(again.Text(), first.Text())                // the group's recorded answer
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // never a second dispatch
		})
	}
}

func TestAGroupIssuedThroughMessagesIsContinuedOnlyThroughMessages(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	_, res, _ := anthTurn(t, s, anthBody([]any{user("weather please")}, false, `,"tools":`+weatherToolAnth))
	is.Equal(res.StopReason, "tool_use")
	u := res.ToolUses()[0]
	chatTools := `[{"type":"function","function":{"name":"get_weather","description":"weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"weather please"},{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"get_weather","arguments":%q}}]},{"role":"tool","tool_call_id":%q,"content":"sunny"}],"tools":%s}`,
		testModel, u.ID, string(u.Input), u.ID, chatTools)
	resp := s.post(t, body)
	is.True(resp.StatusCode >= 400 && resp.StatusCode < 500) // refused through chat completions
	is.Equal(s.emu.Count(emulator.KindToolResponse), 0)      // and nothing sent
}

func TestMessagesConversationsContinueAcrossByteChangesAndNeverAcrossSubagents(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			first := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hello there",
				"cache_control": map[string]any{"type": "ephemeral"}}}}}
			_, res, _ := anthTurn(t, s, anthBody(first, true, ""))
			is.Equal(res.Outcome, anthropicsse.Success)
			// The next turn: cache_control moved to the newest block, a new
			// attribution block, the same meaning.
			next := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hello there"}}},
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": res.Text()}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "and more",
					"cache_control": map[string]any{"type": "ephemeral"}}}}}
			// A subagent with the same history must not continue it.
			_, sub, _ := anthTurn(t, s, anthBody(next, true, ""), "x-claude-code-agent-id", "agent-1")
			is.Equal(sub.Outcome, anthropicsse.Success)
			_, main, _ := anthTurn(t, s, anthBody(next, false, ""))
			is.Equal(main.Outcome, anthropicsse.Success)
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 3)
			is.True(qs[0].conversationID == nil)                   // first turn: a new conversation
			is.True(qs[1].conversationID == nil)                   // the subagent: a new one too
			is.True(qs[2].conversationID != nil)                   // the main agent continues its own
			is.True(!strings.Contains(qs[2].query, "hello there")) // with only the new message
			is.True(!strings.Contains(qs[0].query, "x-anthropic-billing-header"))
		})
	}
}

func TestABrokenUpstreamNeverYieldsMessageStop(t *testing.T) {
	scenarios := []string{"ambiguous_eof", "truncated_frame", "failure_after_text", "unknown_event", "model_mismatch",
		"empty_stream", "drop_after_request", "server_error", "json_200", "quota_usage_state", "data_after_done", "loop_approval"}
	for _, st := range strategies {
		s := serve(t, st, nil)
		for _, sc := range scenarios {
			for _, stream := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", st, sc, stream), func(t *testing.T) {
					is := is.New(t)
					status, _, raw := rawMessages(t, s, messagesBody("hi #scenario="+sc, stream, ""))
					is.True(!strings.Contains(raw, "message_stop")) // never a success
					if status != 200 {
						e, err := anthropicsse.CheckError(status, []byte(raw))
						is.NoErr(err)
						is.True(e.Type != "")
						return
					}
					is.True(stream) // a JSON answer to a broken upstream is always an error status
					res, err := anthropicsse.CheckFailed([]byte(raw))
					is.NoErr(err) // exactly one event: error, and the end
					is.Equal(strings.Count(raw, "event: error\n"), 1)
					is.True(strings.HasSuffix(raw, "\n\n"))
					_ = res
				})
			}
		}
	}
}

func TestAChatGroupIsNotContinuedThroughMessagesNorOneAgentsGroupByAnother(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	chatTools := `[{"type":"function","function":{"name":"get_weather","description":"weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	resp := s.post(t, fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"weather please"}],"tools":%s}`, testModel, chatTools))
	is.Equal(resp.StatusCode, 200)
	var c struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&c))
	call := c.Choices[0].Message.ToolCalls[0]
	var in any
	is.NoErr(json.Unmarshal([]byte(call.Function.Arguments), &in))
	msgs := []any{user("weather please"),
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": call.ID, "name": "get_weather", "input": in}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": call.ID, "content": "sunny"}}}}
	status, _, raw := rawMessages(t, s, anthBody(msgs, false, `,"tools":`+weatherToolAnth))
	is.Equal(status, 400) // a chat group: refused through Messages, deterministically
	_, err := anthropicsse.CheckError(status, []byte(raw))
	is.NoErr(err)
	is.Equal(s.emu.Count(emulator.KindToolResponse), 0)

	// A subagent cannot answer the main agent's tool calls (nor another
	// subagent's): its requests are another principal's.
	_, res, _ := anthTurn(t, s, anthBody([]any{user("weather please")}, false, `,"tools":`+weatherToolAnth))
	is.Equal(res.StopReason, "tool_use")
	cont := anthBody([]any{user("weather please"), assistantOf(res), resultsOf(res)}, false, `,"tools":`+weatherToolAnth)
	status, _, raw = rawMessages(t, s, cont, "x-claude-code-agent-id", "agent-7")
	is.Equal(status, 404) // unknown_tool_call for that subagent
	is.True(strings.Contains(raw, `"code":"unknown_tool_call"`))
	is.Equal(s.emu.Count(emulator.KindToolResponse), 0)
	_, ok, _ := anthTurn(t, s, cont) // the main agent's own continuation still works
	is.Equal(ok.Outcome, anthropicsse.Success)
	is.Equal(s.emu.Count(emulator.KindToolResponse), 1)
}

// Claude Code's fallback after a broken stream: the same continuation again,
// stream:false. The group was dispatched and its outcome is unknown, so the
// re-send is a definite refusal that no retry turns into a second dispatch.
func TestAReSentContinuationAfterABrokenStreamIsRefusedNeverDispatchedAgain(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			_, res, _ := anthTurn(t, s, anthBody([]any{user("weather please")}, false, `,"tools":`+weatherToolAnth))
			is.Equal(res.StopReason, "tool_use")
			u := res.ToolUses()[0]
			results := map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": u.ID,
				"content": "sunny #scenario=failure_after_text"}}}
			body := anthBody([]any{user("weather please"), assistantOf(res), results}, true, `,"tools":`+weatherToolAnth)
			status, _, raw := rawMessages(t, s, body)
			if status == 200 {
				_, err := anthropicsse.CheckFailed([]byte(raw))
				is.NoErr(err) // one error frame, no message_stop
			}
			for _, again := range []string{strings.Replace(body, `"stream":true`, `"stream":false`, 1), body} {
				resp := s.do(t, "POST", "/v1/messages?beta=true", strings.NewReader(again), "Content-Type", "application/json")
				b, _ := io.ReadAll(resp.Body)
				_, err := anthropicsse.CheckError(resp.StatusCode, b)
				is.NoErr(err)
				is.Equal(resp.Header.Get("x-should-retry"), "false") // a definite refusal
				is.True(resp.Header.Get("x-pmgate-error-code") != "")
			}
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // one dispatch, whatever the client does
		})
	}
}
