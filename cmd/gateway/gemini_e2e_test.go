package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// gemCall is one functionCall part as a client reads it.
type gemCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// gemResult is one Gemini answer: a JSON GenerateContentResponse or a
// checked alt=sse stream (text, calls, finishReason), or an error.
type gemResult struct {
	status int
	text   string
	calls  []gemCall
	finish string
	failed bool // an error: a status, or an error event and raw tail after the headers
	raw    string
}

// gemTurn posts a Gemini request (x-goog-api-key, as gemini-cli sends it)
// and reads its answer strictly: in a stream, a finishReason only in the
// last chunk, function calls only with it, an error event only last and
// then followed by the same object raw.
func gemTurn(t *testing.T, s *served, body string, stream bool) gemResult {
	t.Helper()
	path := "/v1beta/models/" + testModel + ":generateContent"
	if stream {
		path = "/v1beta/models/" + testModel + ":streamGenerateContent?alt=sse"
	}
	resp := s.do(t, "POST", path, strings.NewReader(body), "Authorization", "", "x-goog-api-key", testKey, "Content-Type", "application/json")
	b, _ := io.ReadAll(resp.Body)
	res := gemResult{status: resp.StatusCode, raw: string(b)}
	type chunk struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         *string  `json:"text"`
					FunctionCall *gemCall `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		Error *struct {
			Code   int    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	read := func(c chunk) {
		if len(c.Candidates) != 1 {
			t.Fatalf("not one candidate: %s", b)
		}
		if res.finish != "" {
			t.Fatalf("a chunk after the finishReason: %s", b)
		}
		for _, p := range c.Candidates[0].Content.Parts {
			if p.Text != nil {
				res.text += *p.Text
			}
			if p.FunctionCall != nil {
				if c.Candidates[0].FinishReason == "" {
					t.Fatalf("a function call before the proven end: %s", b)
				}
				res.calls = append(res.calls, *p.FunctionCall)
			}
		}
		res.finish = c.Candidates[0].FinishReason
	}
	if resp.StatusCode != 200 {
		var e chunk
		if json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Code != resp.StatusCode || e.Error.Status == "" {
			t.Fatalf("not a Gemini error body: %d %s", resp.StatusCode, b)
		}
		res.failed = true
		return res
	}
	if !stream {
		var c chunk
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("not a response: %v: %s", err, b)
		}
		read(c)
		return res
	}
	events, tail := string(b), ""
	if i := strings.LastIndex(events, "\n\n"); i+2 < len(events) {
		events, tail = events[:i+2], events[i+2:]
	}
	sc := bufio.NewScanner(strings.NewReader(events))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an alt=sse line: %q", line)
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("an event is not JSON: %s", data)
		}
		if c.Error != nil {
			if res.failed || res.finish != "" {
				t.Fatalf("a second error, or an error after the finishReason: %s", b)
			}
			res.failed = true
			continue
		}
		if res.failed {
			t.Fatalf("an event after the error: %s", b)
		}
		read(c)
	}
	if res.failed != (tail != "") {
		t.Fatalf("an error event without its raw tail, or a tail without the event: %q", b)
	}
	if tail != "" {
		var e chunk
		if json.Unmarshal([]byte(tail), &e) != nil || e.Error == nil || e.Error.Code < 400 || e.Error.Code > 599 {
			t.Fatalf("the tail is not an error object @google/genai throws: %q", tail)
		}
	}
	if !res.failed && res.finish == "" {
		t.Fatalf("a stream that ended without a finishReason and without an error: %s", b)
	}
	return res
}

const weatherToolGem = `[{"functionDeclarations":[{"name":"get_weather","description":"weather of a city",` +
	`"parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}]`

func gemText(role, text string) map[string]any {
	return map[string]any{"role": role, "parts": []any{map[string]any{"text": text}}}
}

// gemBody is a request of contents with the weather tool.
func gemBody(contents []any) string {
	b, _ := json.Marshal(contents)
	return `{"contents":` + string(b) + `,"tools":` + weatherToolGem + `}`
}

// gemPlain is a request of contents without tools.
func gemPlain(contents []any) string {
	b, _ := json.Marshal(contents)
	return `{"contents":` + string(b) + `}`
}

// gemModelOf is the model content of an answer, as gemini-cli replays it
// (with its thoughtSignature on each call).
func gemModelOf(r gemResult) map[string]any {
	var parts []any
	if r.text != "" {
		parts = append(parts, map[string]any{"text": r.text})
	}
	for _, c := range r.calls {
		parts = append(parts, map[string]any{"functionCall": c, "thoughtSignature": "skip_thought_signature_validator"})
	}
	return map[string]any{"role": "model", "parts": parts}
}

// gemResultsOf answers every call of r, as gemini-cli does.
func gemResultsOf(r gemResult) map[string]any {
	var parts []any
	for _, c := range r.calls {
		parts = append(parts, map[string]any{"functionResponse": map[string]any{"id": c.ID, "name": c.Name,
			"response": map[string]any{"output": "sunny"}}})
	}
	return map[string]any{"role": "user", "parts": parts}
}

func TestTheGeminiAPIAnswersTextThroughEachStrategy(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			for _, stream := range []bool{false, true} {
				r := gemTurn(t, s, gemPlain([]any{gemText("user", "Hello there")}), stream)
				is.Equal(r.status, 200)
				is.True(!r.failed)
				is.True(r.text != "")
				is.Equal(r.finish, "STOP")
			}
			is.Equal(s.emu.Count(emulator.KindUserQuery), 2) // one dispatch per request
		})
	}
}

func TestTheGeminiAPIRunsAToolLoopWithOneDispatchPerRound(t *testing.T) {
	for _, st := range strategies {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", st, stream), func(t *testing.T) {
				is := is.New(t)
				s := serve(t, st, nil)
				contents := []any{gemText("user", "weather please #loop=2")}
				for round := 0; ; round++ {
					is.True(round <= 2)
					r := gemTurn(t, s, gemBody(contents), stream)
					is.Equal(r.status, 200)
					is.True(!r.failed)
					is.Equal(r.finish, "STOP")
					if len(r.calls) == 0 {
						is.Equal(round, 2)
						is.True(strings.Contains(r.text, "sunny")) // quoting the results
						break
					}
					for _, c := range r.calls {
						is.True(c.ID != "") // every call carries the public id
					}
					contents = append(contents, gemModelOf(r), gemResultsOf(r))
				}
				is.Equal(s.emu.Count(emulator.KindUserQuery), 1)
				is.Equal(s.emu.Count(emulator.KindToolResponse), 2) // exactly one TOOL_RESPONSE per round
			})
		}
	}
}

// gemini-cli re-sends the identical request after a failure it retries: the
// results of a round go upstream once.
func TestAReSentGeminiContinuationIsNeverASecondDispatch(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			contents := []any{gemText("user", "weather please")}
			r := gemTurn(t, s, gemBody(contents), true)
			is.True(len(r.calls) > 0)
			body := gemBody(append(contents, gemModelOf(r), gemResultsOf(r)))
			first := gemTurn(t, s, body, true)
			is.True(!first.failed)
			again := gemTurn(t, s, body, true)
			is.True(!again.failed)
			is.Equal(again.text, first.text)                    // the group's recorded answer
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // never a second dispatch
		})
	}
}

func TestAGroupIssuedThroughGeminiIsContinuedOnlyThroughGemini(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	r := gemTurn(t, s, gemBody([]any{gemText("user", "weather please")}), false)
	is.True(len(r.calls) > 0)
	c := r.calls[0]
	chatTools := `[{"type":"function","function":{"name":"get_weather","description":"weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"weather please"},{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"get_weather","arguments":%q}}]},{"role":"tool","tool_call_id":%q,"content":"sunny"}],"tools":%s}`,
		testModel, c.ID, string(c.Args), c.ID, chatTools)
	resp := s.post(t, body)
	is.True(resp.StatusCode >= 400 && resp.StatusCode < 500) // refused through chat completions
	is.Equal(s.emu.Count(emulator.KindToolResponse), 0)      // and nothing sent
}

func TestAGeminiSecondUserTurnContinuesTheUpstreamConversation(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			first := []any{gemText("user", "hello there")}
			r := gemTurn(t, s, gemPlain(first), true)
			is.True(!r.failed)
			next := append(first, gemModelOf(r), gemText("user", "and more"))
			r2 := gemTurn(t, s, gemPlain(next), true)
			if r2.failed {
				t.Fatal(r2.raw)
			}
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 2)
			is.True(qs[0].conversationID == nil)                   // first turn: a new conversation
			is.True(qs[1].conversationID != nil)                   // the second continues it
			is.True(!strings.Contains(qs[1].query, "hello there")) // with only the new message
		})
	}
}

// Every emulator fault, both strategies, JSON and stream: never a
// finishReason, always an error a client raises.
func TestABrokenUpstreamNeverYieldsAGeminiFinish(t *testing.T) {
	scenarios := []string{"ambiguous_eof", "truncated_frame", "failure_after_text", "unknown_event", "model_mismatch",
		"empty_stream", "drop_after_request", "server_error", "json_200", "quota_usage_state", "data_after_done", "loop_approval"}
	for _, st := range strategies {
		s := serve(t, st, nil)
		for _, sc := range scenarios {
			for _, stream := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", st, sc, stream), func(t *testing.T) {
					is := is.New(t)
					r := gemTurn(t, s, gemBody([]any{gemText("user", "hi #scenario="+sc)}), stream)
					is.True(r.failed)      // an error, never a success
					is.Equal(r.finish, "") // never a finishReason
					is.Equal(len(r.calls), 0)
					if r.status == 200 {
						is.True(stream) // a JSON answer to a broken upstream is always an error status
					}
				})
			}
		}
	}
}

// gemini-cli 0.61 replays each functionResponse twice when it resumes a
// session (--resume): the resumed history is the same conversation, so its
// next user turn continues it, and the round's results are not sent again.
func TestAResumedGeminiSessionWithRepeatedResponsesContinuesItsConversation(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			contents := []any{gemText("user", "weather please")}
			r := gemTurn(t, s, gemBody(contents), true)
			is.True(len(r.calls) > 0)
			results := gemResultsOf(r)
			contents = append(contents, gemModelOf(r), results)
			final := gemTurn(t, s, gemBody(contents), true)
			is.True(!final.failed)
			is.Equal(len(final.calls), 0)
			// The resumed history: calls without thoughtSignature, every
			// response twice.
			calls := map[string]any{"role": "model", "parts": []any{}}
			for _, c := range r.calls {
				calls["parts"] = append(calls["parts"].([]any), map[string]any{"functionCall": c})
			}
			parts := results["parts"].([]any)
			twice := map[string]any{"role": "user", "parts": append(append([]any{}, parts...), parts...)}
			resumed := []any{contents[0], calls, twice, gemText("model", final.text), gemText("user", "and tomorrow?")}
			next := gemTurn(t, s, gemBody(resumed), true)
			if next.failed {
				t.Fatal(next.raw)
			}
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // the results went up once
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 2)
			is.True(qs[1].conversationID != nil) // the resumed session continues its conversation
			is.True(!strings.Contains(qs[1].query, "weather please"))
		})
	}
}
