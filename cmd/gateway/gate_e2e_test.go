package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// opencodeRetries are the patterns opencode 1.18.33 retries an error on when
// they appear anywhere in its message or response body, whatever the status
// (read from the pinned binary: its session retry's list). The gate's answer
// must match none of them, or opencode re-sends it.
var opencodeRetries = []*regexp.Regexp{
	regexp.MustCompile(`(?i)429|500|502|503|504|524`),
	regexp.MustCompile(`(?i)rate increased too quickly|rate limit|rate-limit|rate_limit|too many requests`),
	regexp.MustCompile(`(?i)overloaded|service unavailable|service_unavailable|service-unavailable|internal error|internal_error|internal server error|server error|server_error|server-error|provider returned error|provider_returned_error|provider-returned-error`),
	regexp.MustCompile(`(?i)terminated|fetch failed|failed to fetch|network[-_\s]error|upstream connect|connection error|connection refused|connection lost|socket connection was closed|socket hang up|reset before headers|getaddrinfo|enotfound|eai_again|econnrefused|econnreset|etimedout`),
	regexp.MustCompile(`(?i)^timeout$|\b(?:request|response|connection|network|stream|read) (?:timeout|timed out|time out)\b`),
	regexp.MustCompile(`(?i)try your request again|retry your request|resource exhausted|resource_exhausted`),
	regexp.MustCompile(`(?i)\btry again (?:later|in\b)|\b(?:currently|temporarily) at capacity\b`),
}

// requestIDField is the random request_id member of an Anthropic-shaped error.
var requestIDField = regexp.MustCompile(`"request_id":"[^"]*"`)

// gateAPI drives one API through a tool turn, its continuation and the next
// user message, as raw HTTP.
type gateAPI struct {
	name string
	// first returns the first request's body; cont the continuation of the
	// first answer (stream or not); next the next user message after it.
	first func() string
	cont  func(t *testing.T, answer []byte, stream bool) string
	next  func(t *testing.T, answer []byte) string
	path  string
}

const gateQuery = "weather please #loop=3 #approval_after=1"

var gateAPIs = []gateAPI{
	{
		name: "chat", path: "/v1/chat/completions",
		first: func() string {
			return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"tools":%s}`, testModel, gateQuery, toolsJSON)
		},
		cont: func(t *testing.T, answer []byte, stream bool) string {
			var c completion
			if err := json.Unmarshal(answer, &c); err != nil {
				t.Fatal(err)
			}
			msgs := append([]msg{{"role": "user", "content": gateQuery}}, assistantAndResults(c, sunny)...)
			return chatBody(t, testModel, msgs, toolsJSON, fmt.Sprintf(`,"stream":%v`, stream))
		},
		next: func(t *testing.T, answer []byte) string {
			var c completion
			if err := json.Unmarshal(answer, &c); err != nil {
				t.Fatal(err)
			}
			msgs := append([]msg{{"role": "user", "content": gateQuery}}, assistantAndResults(c, sunny)...)
			return chatBody(t, testModel, append(msgs, msg{"role": "user", "content": "continue"}), toolsJSON, "")
		},
	},
	{
		name: "responses", path: "/v1/responses",
		first: func() string { return responsesGateBody(nil, false) },
		cont: func(t *testing.T, answer []byte, stream bool) string {
			return responsesGateBody(responsesCalls(t, answer), stream)
		},
		next: func(t *testing.T, answer []byte) string {
			items := responsesCalls(t, answer)
			return responsesGateBody(append(items, map[string]any{"role": "user", "content": "continue"}), false)
		},
	},
	{
		name: "messages", path: "/v1/messages",
		first: func() string { return anthBody([]any{user(gateQuery)}, false, `,"tools":`+weatherToolAnth) },
		cont: func(t *testing.T, answer []byte, stream bool) string {
			return anthBody(messagesGateHistory(t, answer), stream, `,"tools":`+weatherToolAnth)
		},
		next: func(t *testing.T, answer []byte) string {
			return anthBody(append(messagesGateHistory(t, answer), user("continue")), false, `,"tools":`+weatherToolAnth)
		},
	},
}

func responsesGateBody(items []any, stream bool) string {
	input := append([]any{map[string]any{"role": "user", "content": gateQuery}}, items...)
	b, _ := json.Marshal(map[string]any{"model": testModel, "input": input, "store": false, "stream": stream,
		"tools": []any{map[string]any{"type": "function", "name": "get_weather", "description": "weather of a city",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}})
	return string(b)
}

// responsesCalls echoes the function calls of a Responses answer and answers each.
func responsesCalls(t *testing.T, answer []byte) []any {
	t.Helper()
	var r struct {
		Output []struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"output"`
	}
	if err := json.Unmarshal(answer, &r); err != nil {
		t.Fatal(err)
	}
	var items, outs []any
	for _, o := range r.Output {
		if o.Type == "function_call" {
			items = append(items, map[string]any{"type": "function_call", "call_id": o.CallID, "name": o.Name, "arguments": o.Arguments})
			outs = append(outs, map[string]any{"type": "function_call_output", "call_id": o.CallID, "output": "sunny for " + o.Name})
		}
	}
	if len(items) == 0 {
		t.Fatalf("no function call in %s", answer)
	}
	return append(items, outs...)
}

func messagesGateHistory(t *testing.T, answer []byte) []any {
	t.Helper()
	var m struct {
		Content []struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	}
	if err := json.Unmarshal(answer, &m); err != nil {
		t.Fatal(err)
	}
	var uses, results []any
	for _, c := range m.Content {
		if c.Type == "tool_use" {
			var in any
			_ = json.Unmarshal(c.Input, &in)
			uses = append(uses, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": in})
			results = append(results, map[string]any{"type": "tool_result", "tool_use_id": c.ID, "content": "sunny for " + c.Name})
		}
	}
	if len(uses) == 0 {
		t.Fatalf("no tool_use in %s", answer)
	}
	return []any{user(gateQuery), map[string]any{"role": "assistant", "content": uses}, map[string]any{"role": "user", "content": results}}
}

// The loop-approval gate on a continuation, on every API, answered as JSON and
// as a stream: its own code and a status no pinned agent retries, a message
// that says how to go on and what the service said, the results delivered
// (the same continuation again gets the gate's answer again, row C33, never
// a dispatch), and the next user message goes on.
func TestTheLoopApprovalGateIsItsOwnAnswerOnEveryAPI(t *testing.T) {
	for _, st := range strategies {
		s := serve(t, st, nil)
		for _, api := range gateAPIs {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", st, api.name, stream), func(t *testing.T) {
					is := is.New(t)
					post := func(body string) (int, string, []byte) {
						resp := s.do(t, "POST", api.path, strings.NewReader(body), "Content-Type", "application/json")
						b, _ := io.ReadAll(resp.Body)
						return resp.StatusCode, resp.Header.Get("x-should-retry"), b
					}
					before := s.emu.Count(emulator.KindToolResponse)
					status, _, first := post(api.first())
					is.Equal(status, 200) // the tool turn
					cont := api.cont(t, first, stream)
					status, retry, raw := post(cont)
					is.Equal(status, 400)    // a status none of the pinned agents retries
					is.Equal(retry, "false") // and the SDKs' own signal
					var e struct {
						Error struct {
							Code    string `json:"code"`
							Message string `json:"message"`
						} `json:"error"`
					}
					is.NoErr(json.Unmarshal(raw, &e))                                            // a plain JSON error: nothing was shown before it
					is.Equal(e.Error.Code, "upstream_loop_approval")                             // the gate's own code
					is.True(strings.Contains(e.Error.Message, "Send a new message to continue")) // how to go on
					is.True(strings.Contains(e.Error.Message, `thresholds: {"toolRounds":1}`))   // what the service said
					// The Anthropic shape's request_id is random: its digits are
					// not the gateway's words (opencode speaks chat completions).
					said := requestIDField.ReplaceAll(raw, nil)
					for _, re := range opencodeRetries {
						is.True(!re.Match(said)) // nothing in the answer reads as transient to opencode
					}
					is.Equal(s.emu.Count(emulator.KindToolResponse)-before, 1) // one dispatch
					status, retry, again := post(cont)
					is.Equal(status, 400)                                              // the same results again: the gate's answer again,
					is.Equal(retry, "false")                                           // not retried,
					is.True(strings.Contains(string(again), "upstream_loop_approval")) // never "already consumed" or a conflict
					is.True(strings.Contains(string(again), "Send a new message to continue"))
					is.Equal(s.emu.Count(emulator.KindToolResponse)-before, 1) // and never sent again
					status, _, next := post(api.next(t, first))
					is.Equal(status, 200) // the next user message goes on
					is.True(len(next) > 0)
				})
			}
		}
	}
}

// A client that re-sends a whole conversation as a fresh one (here to a
// gateway that holds no anchor for it) has its transcript rendered into one
// query; the failure its first turn asked the emulator for is not replayed.
func TestAReSentTranscriptDoesNotReplayItsFirstTurnsDirectives(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			msgs := []msg{{"role": "user", "content": "hello #scenario=failure_after_text"}, {"role": "assistant", "content": "Hello"},
				{"role": "user", "content": "and now?"}}
			m, err := json.Marshal(msgs)
			is.NoErr(err)
			status, c, e := turnResult(t, s, fmt.Sprintf(`{"model":%q,"messages":%s}`, testModel, m))
			is.Equal(e.Error.Code, "") // turn 1's failure is not replayed
			is.Equal(status, 200)      // the newest turn is answered
			is.Equal(c.Choices[0].FinishReason, "stop")
		})
	}
}
