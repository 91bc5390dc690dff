package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/internal/anthropicsse"
)

// The Anthropic Messages API as its clients see it: every emulator scenario
// through /v1/messages checked by the strict grammar checker against the
// verdict the chat API gives for the same upstream answer, and the official Go
// SDK (anthropic-sdk-go) driving text, tools and errors with every raw body
// it parsed checked too.

// messagesToolBody is a Messages request with one user text and, when tool is
// set, one custom tool.
func messagesToolBody(text string, stream bool, tool string) string {
	b, _ := json.Marshal(text)
	tools := ""
	if tool != "" {
		tools = fmt.Sprintf(`,"tools":[{"name":%q,"description":"Weather for a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`, tool)
	}
	return fmt.Sprintf(`{"model":%q,"max_tokens":1024,"stream":%v,"messages":[{"role":"user","content":%s}]%s}`, testModel, stream, b, tools)
}

// postMessages sends a Messages request with the x-api-key header, as
// Claude Code does, and reads the whole answer.
func (s *served) postMessages(t *testing.T, body string) anthropicsse.Exchange {
	t.Helper()
	resp := s.do(t, "POST", "/v1/messages?beta=true", strings.NewReader(body), "Content-Type", "application/json",
		"Authorization", "", "x-api-key", testKey, "anthropic-version", "2023-06-01")
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return anthropicsse.Exchange{Method: "POST", Path: "/v1/messages", Status: resp.StatusCode, Header: resp.Header,
		Stream: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"), Body: raw}
}

// chatVerdict is what the chat API answers for the same upstream answer: ""
// for a success, else its stable error code (from the JSON error or the
// stream's error event).
func (s *served) chatVerdict(t *testing.T, text string, stream bool, tool string) string {
	t.Helper()
	extra := ""
	if tool != "" {
		extra = fmt.Sprintf(`,"tools":[{"type":"function","function":{"name":%q,"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`, tool)
	}
	resp := s.post(t, userBody(text, stream, extra))
	raw, _ := io.ReadAll(resp.Body)
	var e errorBody
	if resp.StatusCode != http.StatusOK {
		_ = json.Unmarshal(raw, &e)
		return e.Error.Code
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if p, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(p), &e) == nil && e.Error.Code != "" {
			return e.Error.Code
		}
	}
	return ""
}

// carriesCode reports whether an Anthropic answer keeps the pmgate code
// visible, in a header or anywhere in the error body.
func carriesCode(ex anthropicsse.Exchange, res anthropicsse.Result, code string) bool {
	for _, vs := range ex.Header {
		for _, v := range vs {
			if v == code {
				return true
			}
		}
	}
	return bytes.Contains(res.Raw, []byte(`"`+code+`"`))
}

func TestMessagesStreamsAreGrammaticalInEveryEmulatorScenario(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			s := serve(t, st, nil)
			for _, sc := range append([]string{""}, emulator.Scenarios()...) {
				if sc == emulator.ScenarioRateWindowSpent {
					continue // it holds this gateway's later fresh turns for 59 s (ratelimit_e2e_test.go covers it)
				}
				for _, tool := range []string{"", "get_weather"} {
					for _, stream := range []bool{true, false} {
						name := fmt.Sprintf("%s/tool=%v/stream=%v", map[bool]string{true: sc, false: "normal"}[sc != ""], tool != "", stream)
						t.Run(name, func(t *testing.T) {
							text := "Grammar please. #scenario=" + sc
							if sc == "" {
								text = "Grammar please."
							}
							want := s.chatVerdict(t, text, stream, tool)
							ex := s.postMessages(t, messagesToolBody(text, stream, tool))
							res, err := anthropicsse.CheckExchange(ex)
							if err != nil {
								t.Fatalf("the Messages answer breaks the grammar: %v\nstatus %d\n%s", err, ex.Status, ex.Body)
							}
							if want == "" {
								if res.Outcome != anthropicsse.Success {
									t.Fatalf("chat succeeds but Messages failed: %d %s", ex.Status, ex.Body)
								}
								if tool != "" && sc != emulator.ScenarioModelMismatch && len(res.ToolUses()) > 0 && res.StopReason != "tool_use" {
									t.Fatalf("stop_reason %q with tool_use", res.StopReason)
								}
								return
							}
							if res.Outcome != anthropicsse.Failed {
								t.Fatalf("chat fails closed with %s but Messages succeeded (stop_reason %q):\n%s", want, res.StopReason, ex.Body)
							}
							if !carriesCode(ex, res, want) {
								t.Errorf("the pmgate code %s is not visible in the Messages error (header or body):\n%v\n%s", want, ex.Header, ex.Body)
							}
							if ex.Status >= 400 && ex.Status < 500 && ex.Status != http.StatusTooManyRequests && ex.Header.Get("x-should-retry") != "false" {
								t.Errorf("a deterministic %d refusal without x-should-retry: false", ex.Status)
							}
						})
					}
				}
			}
		})
	}
}

// ---- the official Go SDK ----

// anthropicClient is an SDK client on the gateway whose transport keeps
// every Messages body the SDK parsed.
func anthropicClient(s *served, key string, retries int) (anthropic.Client, *anthropicsse.Recorder) {
	rec := &anthropicsse.Recorder{}
	c := anthropic.NewClient(option.WithBaseURL(s.base), option.WithAPIKey(key), option.WithMaxRetries(retries),
		option.WithHTTPClient(&http.Client{Transport: rec}))
	return c, rec
}

// checkRecorded runs the grammar checker over every captured body.
func checkRecorded(t *testing.T, rec *anthropicsse.Recorder) {
	t.Helper()
	exs := rec.Exchanges()
	if len(exs) == 0 {
		t.Error("anthropic-sdk-go: no Messages exchange was captured")
	}
	for i, ex := range exs {
		if _, err := anthropicsse.CheckExchange(ex); err != nil {
			t.Errorf("anthropic-sdk-go exchange %d (status %d, stream %v) breaks the grammar: %v\n%s", i, ex.Status, ex.Stream, err, ex.Body)
		}
	}
}

// sdkStream runs one streamed request through Message.Accumulate (which
// checks block indexes) and returns the message and the stream's error.
func sdkStream(t *testing.T, c anthropic.Client, params anthropic.MessageNewParams) (anthropic.Message, error) {
	t.Helper()
	stream := c.Messages.NewStreaming(t.Context(), params)
	defer stream.Close()
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("anthropic-sdk-go: Accumulate refused an event: %v", err)
		}
	}
	return msg, stream.Err()
}

var weatherToolParam = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "get_weather",
	Description: anthropic.String("Weather for a city"),
	InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}}

func userParams(text string, tools ...anthropic.ToolUnionParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: anthropic.Model(testModel), MaxTokens: 1024, Tools: tools,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}}
}

func TestTheAnthropicGoSDK(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			s := serve(t, st, nil)
			client, rec := anthropicClient(s, testKey, 0)
			t.Cleanup(func() { checkRecorded(t, rec) })

			t.Run("streamed text", func(t *testing.T) {
				msg, err := sdkStream(t, client, userParams("Stream please"))
				if err != nil {
					t.Fatalf("anthropic-sdk-go: %v", err)
				}
				if msg.StopReason != anthropic.StopReasonEndTurn || len(msg.Content) == 0 || !strings.Contains(msg.Content[0].Text, "You said: Stream please") {
					t.Fatalf("anthropic-sdk-go: accumulated %s", msg.RawJSON())
				}
				if !strings.HasPrefix(msg.ID, "msg_") || msg.Usage.InputTokens <= 0 || msg.Usage.OutputTokens <= 0 {
					t.Errorf("anthropic-sdk-go: id %q usage %+v", msg.ID, msg.Usage)
				}
			})

			t.Run("text, not streamed", func(t *testing.T) {
				msg, err := client.Messages.New(t.Context(), userParams("JSON please"))
				if err != nil {
					t.Fatalf("anthropic-sdk-go: %v", err)
				}
				if msg.StopReason != anthropic.StopReasonEndTurn || !strings.Contains(msg.Content[0].Text, "You said: JSON please") {
					t.Fatalf("anthropic-sdk-go: %s", msg.RawJSON())
				}
			})

			t.Run("tool round trip, streamed", func(t *testing.T) {
				before := s.emu.Count(emulator.KindToolResponse)
				params := userParams("weather in Oslo", weatherToolParam)
				msg, err := sdkStream(t, client, params)
				if err != nil {
					t.Fatalf("anthropic-sdk-go: tool turn: %v", err)
				}
				var uses []anthropic.ToolUseBlock
				for _, b := range msg.Content {
					if b.Type == "tool_use" {
						uses = append(uses, b.AsToolUse())
					}
				}
				if msg.StopReason != anthropic.StopReasonToolUse || len(uses) != 1 || uses[0].Name != "get_weather" || !json.Valid(uses[0].Input) {
					t.Fatalf("anthropic-sdk-go: tool turn accumulated %s", msg.RawJSON())
				}
				params.Messages = append(params.Messages, msg.ToParam(),
					anthropic.NewUserMessage(anthropic.NewToolResultBlock(uses[0].ID, "rain", false)))
				final, err := sdkStream(t, client, params)
				if err != nil {
					t.Fatalf("anthropic-sdk-go: continuation: %v", err)
				}
				if final.StopReason != anthropic.StopReasonEndTurn || !strings.Contains(final.Content[0].Text, "get_weather=rain") {
					t.Fatalf("anthropic-sdk-go: continuation answered %s", final.RawJSON())
				}
				if n := s.emu.Count(emulator.KindToolResponse) - before; n != 1 {
					t.Errorf("anthropic-sdk-go: %d TOOL_RESPONSE dispatches, want 1", n)
				}
			})

			t.Run("tool round trip, not streamed", func(t *testing.T) {
				params := userParams("weather in Bergen", weatherToolParam)
				msg, err := client.Messages.New(t.Context(), params)
				if err != nil {
					t.Fatalf("anthropic-sdk-go: %v", err)
				}
				if msg.StopReason != anthropic.StopReasonToolUse || msg.Content[len(msg.Content)-1].Type != "tool_use" {
					t.Fatalf("anthropic-sdk-go: %s", msg.RawJSON())
				}
				use := msg.Content[len(msg.Content)-1].AsToolUse()
				params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "fog", false)))
				final, err := client.Messages.New(t.Context(), params)
				if err != nil || !strings.Contains(final.Content[0].Text, "get_weather=fog") {
					t.Fatalf("anthropic-sdk-go: continuation: %v %v", err, final)
				}
			})

			t.Run("upstream failure mid-stream is an error, not a message", func(t *testing.T) {
				msg, err := sdkStream(t, client, userParams("#scenario=failure_after_text"))
				var apiErr *anthropic.Error
				if !errors.As(err, &apiErr) {
					t.Fatalf("anthropic-sdk-go: want an *anthropic.Error, got %v (message %s)", err, msg.RawJSON())
				}
				if msg.StopReason != "" {
					t.Errorf("anthropic-sdk-go: a failed stream carries stop_reason %q", msg.StopReason)
				}
			})

			t.Run("fail-closed error, not streamed, is not retried", func(t *testing.T) {
				retrying, rec2 := anthropicClient(s, testKey, 2)
				before := s.emu.Count(emulator.KindUserQuery)
				_, err := retrying.Messages.New(t.Context(), userParams("#scenario=failure_after_text"))
				var apiErr *anthropic.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode < 500 {
					t.Fatalf("anthropic-sdk-go: want a 5xx *anthropic.Error, got %v", err)
				}
				if n := s.emu.Count(emulator.KindUserQuery) - before; n != 1 {
					t.Errorf("anthropic-sdk-go: %d upstream queries with retries on, want 1 (x-should-retry: false)", n)
				}
				checkRecorded(t, rec2)
			})

			t.Run("a wrong key is an authentication_error", func(t *testing.T) {
				wrong, rec3 := anthropicClient(s, "sk-wrong-0123456789abcdef", 2)
				before := len(s.emu.Requests())
				_, err := wrong.Messages.New(t.Context(), userParams("hi"))
				var apiErr *anthropic.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || !strings.Contains(apiErr.RawJSON(), `"authentication_error"`) {
					t.Fatalf("anthropic-sdk-go: want a 401 authentication_error, got %v", err)
				}
				if n := len(s.emu.Requests()) - before; n != 0 {
					t.Errorf("anthropic-sdk-go: %d upstream requests for a refused key", n)
				}
				checkRecorded(t, rec3)
			})
		})
	}
}
