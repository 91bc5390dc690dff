//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// TestClients is the client conformance suite: real OpenAI clients against
// `gateway serve` wired to the in-test emulator, for both strategies.
//
//   - openai-go runs in-process (the scenarios that TestTheDemoServesTheOfficialGoSDK
//     and TestTheGoSDKRunsAToolLoopToItsFinalAnswer do not already cover).
//   - openai-node runs clients/js/openai.test.mjs (the openai npm SDK).
//   - 9router runs clients/js/9router.test.mjs: the pinned 9router's packaged
//     server, configured through its control API, in front of the gateway.
//   - claude-code, opencode and ai-sdk run the real agents headless
//     (claude-code.test.mjs through 9router's /v1/messages), some against a
//     second gateway and emulator whose query limit is raised (serveWide).
//     The two agents with native binaries run only in a loopback-only network
//     namespace (make test-clients); every suite's outbound attempts are
//     refused and recorded by its suiteWitness.
//
// The Node suites ask a loopback observer (see clientObserver) what the
// emulator received and what the gateway sent; 9router reaches the gateway
// through the observer's recording proxy, so completion and single dispatch are
// judged on the gateway side. They need clients/js/node_modules (npm ci
// --ignore-scripts); without it they are skipped unless PMGATE_CLIENTS=1, which
// makes them mandatory (`make test-clients`, CI).
func TestClients(t *testing.T) {
	requireLoopbackOnly(t)
	t.Cleanup(func() { writeClientsReport(t) })
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			// The suites include a parallel two-tool group on both strategies;
			// web_session asks for parallel calls only with the setting on.
			var extra map[string]string
			if st == "web_session" {
				extra = map[string]string{"POSTMAN_PARALLEL_TOOL_CALLS": "true"}
			}
			s := serve(t, st, extra)
			obs := newClientObserver(t, s)
			// A second gateway and emulator with the service's query limit
			// raised, for agents whose first turn is larger than the default.
			wide := serveWide(t, st)
			wideObs := newClientObserver(t, wide)
			t.Run("openai-go", func(t *testing.T) { goClientScenarios(t, s) })
			for _, suite := range nodeSuites {
				t.Run(suite.client, func(t *testing.T) {
					runNodeSuite(t, suite, []string{
						"PMGATE_STRATEGY=" + st,
						"PMGATE_BASE_URL=" + s.base + "/v1",
						"PMGATE_API_KEY=" + testKey,
						"PMGATE_MODEL=" + testModel,
						"PMGATE_OBSERVER_URL=" + obs.url,
						"PMGATE_TAP_URL=" + obs.url + "/v1",
						"PMGATE_WIDE_OBSERVER_URL=" + wideObs.url,
						"PMGATE_WIDE_TAP_URL=" + wideObs.url + "/v1",
						fmt.Sprintf("PMGATE_WIDE_QUERY_CHARS=%d", wideQueryChars),
					})
				})
			}
			reportClaudeCatalog(st, obs, wideObs)
		})
	}
}

// nodeSuite is one Node test file of clients/js and how long it may run.
// An agent suite runs native binaries that a Node-level guard cannot see
// into: it runs only where nothing but loopback is reachable.
type nodeSuite struct {
	client, file string
	timeout      time.Duration
	agent        bool
}

var nodeSuites = []nodeSuite{
	{"openai-node", "openai.test.mjs", 4 * time.Minute, false},
	{"9router", "9router.test.mjs", 4 * time.Minute, false},
	{"openai-node-responses", "responses.test.mjs", 4 * time.Minute, false},
	{"claude-code", "claude-code.test.mjs", 16 * time.Minute, true},
	{"claude-code-direct", "claude-code-direct.test.mjs", 12 * time.Minute, true},
	{"claude-code-sessions", "claude-code-sessions.test.mjs", 8 * time.Minute, true},
	{"anthropic-node", "anthropic.test.mjs", 4 * time.Minute, false},
	{"opencode", "opencode.test.mjs", 12 * time.Minute, true},
	{"opencode-sessions", "opencode-sessions.test.mjs", 10 * time.Minute, true},
	{"ai-sdk", "ai-sdk.test.mjs", 4 * time.Minute, false},
	{"structured", "structured.test.mjs", 4 * time.Minute, false},
	{"gemini-cli", "gemini-cli.test.mjs", 16 * time.Minute, true},
	{"genai-node", "genai.test.mjs", 4 * time.Minute, false},
}

// wideQueryChars is the raised query limit of the second gateway and emulator.
const wideQueryChars = 40000

// serveWide is serve with the query limit raised to wideQueryChars on both
// sides: the gateway (POSTMAN_MAX_QUERY_CHARS) and the emulator.
func serveWide(t *testing.T, strategy string) *served {
	emu := newEmulator(t, func(c *emulator.Config) { c.MaxQueryChars = wideQueryChars })
	return serveWith(t, emu, strategy, map[string]string{"POSTMAN_MAX_QUERY_CHARS": fmt.Sprint(wideQueryChars)})
}

// ---- openai-go ----

func functionTool(name, description string) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: name, Description: openai.String(description),
		Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}})
}

// goStream runs one streamed turn, feeding every chunk to the SDK's
// ChatCompletionAccumulator, and checks the raw chunks against the streaming
// rules (the SDK stops at [DONE] and surfaces error events as errors).
func goStream(t *testing.T, ctx context.Context, client openai.Client, params openai.ChatCompletionNewParams) (openai.ChatCompletionAccumulator, wireReport, error) {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var raws []string
	for stream.Next() {
		chunk := stream.Current()
		raws = append(raws, chunk.RawJSON())
		if !acc.AddChunk(chunk) {
			t.Errorf("openai-go: ChatCompletionAccumulator refused chunk %d: %s", len(raws), chunk.RawJSON())
		}
	}
	includeUsage := params.StreamOptions.IncludeUsage.Valid() && params.StreamOptions.IncludeUsage.Value
	err := stream.Err()
	if err == nil {
		// The SDK consumes [DONE] (and would end the same way at a bare EOF;
		// the wire tests and the observer's proxy check that the gateway sends it).
		raws = append(raws, "[DONE]")
	}
	rep := analyzeStream(raws, includeUsage, err == nil)
	if err == nil {
		for _, v := range rep.Violations {
			t.Errorf("openai-go: streaming rule broken: %s", v)
		}
	}
	return acc, rep, err
}

// checkAccumulatedCalls compares the accumulator's tool calls with the raw
// deltas: same count, names not duplicated, argument strings byte-identical.
func checkAccumulatedCalls(t *testing.T, acc openai.ChatCompletionAccumulator, rep wireReport, want int) {
	t.Helper()
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != want || len(rep.ToolCalls) != want {
		t.Fatalf("openai-go: %d accumulated and %d streamed tool calls, want %d", len(calls), len(rep.ToolCalls), want)
	}
	for i, c := range calls {
		w := rep.ToolCalls[i]
		if c.ID != w.ID || c.Function.Name != w.Name {
			t.Errorf("openai-go: call %d accumulated as %s %q, streamed as %s %q (names must not be duplicated)", i, c.ID, c.Function.Name, w.ID, w.Name)
		}
		if c.Function.Arguments != w.Arguments {
			t.Errorf("openai-go: call %d arguments %q are not byte-identical to the streamed fragments %q", i, c.Function.Arguments, w.Arguments)
		}
		if !json.Valid([]byte(c.Function.Arguments)) || !strings.HasPrefix(c.ID, "call_pmn_") {
			t.Errorf("openai-go: call %d: id %q, arguments %q", i, c.ID, c.Function.Arguments)
		}
	}
}

func goClientScenarios(t *testing.T, s *served) {
	client := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	weather, clock := functionTool("get_weather", "Weather for a city"), functionTool("get_time", "Time in a city")
	user := func(text string) []openai.ChatCompletionMessageParamUnion {
		return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}
	}
	dispatched := func(kind string, before int) int { return s.emu.Count(kind) - before }

	t.Run("streamed text with include_usage", func(t *testing.T) {
		acc, rep, err := goStream(t, t.Context(), client, openai.ChatCompletionNewParams{Model: testModel, Messages: user("usage please"),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		if err != nil {
			t.Fatalf("openai-go: %v", err)
		}
		if rep.UsageChunks != 1 || acc.Usage.TotalTokens == 0 || acc.Usage.TotalTokens != acc.Usage.PromptTokens+acc.Usage.CompletionTokens {
			t.Errorf("openai-go: usage chunks %d, accumulated usage %+v", rep.UsageChunks, acc.Usage)
		}
		if got := acc.Choices[0].Message.Content; got != rep.Content || !strings.Contains(got, "You said: usage please") {
			t.Errorf("openai-go: accumulated %q, streamed %q", got, rep.Content)
		}
	})

	t.Run("tool turn and continuation, streamed", func(t *testing.T) {
		before := s.emu.Count(emulator.KindToolResponse)
		params := openai.ChatCompletionNewParams{Model: testModel, Messages: user("weather in Oslo"), Tools: []openai.ChatCompletionToolUnionParam{weather}}
		acc, rep, err := goStream(t, t.Context(), client, params)
		if err != nil {
			t.Fatalf("openai-go: tool turn: %v", err)
		}
		checkAccumulatedCalls(t, acc, rep, 1)
		if acc.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("openai-go: finish %q", acc.Choices[0].FinishReason)
		}
		call := acc.Choices[0].Message.ToolCalls[0]
		params.Messages = append(params.Messages, acc.Choices[0].Message.ToParam(), openai.ToolMessage("rain for "+call.Function.Name, call.ID))
		final, rep2, err := goStream(t, t.Context(), client, params)
		if err != nil {
			t.Fatalf("openai-go: continuation: %v", err)
		}
		if final.Choices[0].FinishReason != "stop" || !strings.Contains(final.Choices[0].Message.Content, "get_weather=rain for get_weather") || rep2.Content != final.Choices[0].Message.Content {
			t.Errorf("openai-go: continuation answered %q (%s)", final.Choices[0].Message.Content, final.Choices[0].FinishReason)
		}
		if n := dispatched(emulator.KindToolResponse, before); n != 1 {
			t.Errorf("openai-go: %d TOOL_RESPONSE dispatches, want 1", n)
		}
	})

	t.Run("tool turn and continuation, non-streamed", func(t *testing.T) {
		params := openai.ChatCompletionNewParams{Model: testModel, Messages: user("weather in Bergen"), Tools: []openai.ChatCompletionToolUnionParam{weather}}
		c, err := client.Chat.Completions.New(t.Context(), params)
		if err != nil {
			t.Fatalf("openai-go: tool turn: %v", err)
		}
		msg := c.Choices[0].Message
		if c.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" || !json.Valid([]byte(msg.ToolCalls[0].Function.Arguments)) {
			t.Fatalf("openai-go: tool turn answered %s", c.RawJSON())
		}
		params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("fog", msg.ToolCalls[0].ID))
		final, err := client.Chat.Completions.New(t.Context(), params)
		if err != nil || final.Choices[0].FinishReason != "stop" || !strings.Contains(final.Choices[0].Message.Content, "get_weather=fog") {
			t.Fatalf("openai-go: continuation: %v %+v", err, final)
		}
	})

	t.Run("parallel two-tool group", func(t *testing.T) {
		before := s.emu.Count(emulator.KindToolResponse)
		params := openai.ChatCompletionNewParams{Model: testModel, Messages: user("weather and time in Oslo"), Tools: []openai.ChatCompletionToolUnionParam{weather, clock}}
		acc, rep, err := goStream(t, t.Context(), client, params)
		if err != nil {
			t.Fatalf("openai-go: %v", err)
		}
		checkAccumulatedCalls(t, acc, rep, 2)
		calls := acc.Choices[0].Message.ToolCalls
		if calls[0].Function.Name != "get_weather" || calls[1].Function.Name != "get_time" || calls[0].ID == calls[1].ID || rep.ToolCalls[0].Index != 0 || rep.ToolCalls[1].Index != 1 {
			t.Fatalf("openai-go: parallel group %+v", rep.ToolCalls)
		}
		params.Messages = append(params.Messages, acc.Choices[0].Message.ToParam())
		for _, c := range calls {
			params.Messages = append(params.Messages, openai.ToolMessage("ok "+c.Function.Name, c.ID))
		}
		final, err := client.Chat.Completions.New(t.Context(), params)
		if err != nil || !strings.Contains(final.Choices[0].Message.Content, "get_weather=ok get_weather; get_time=ok get_time") {
			t.Fatalf("openai-go: continuation of the group: %v %+v", err, final)
		}
		if n := dispatched(emulator.KindToolResponse, before); n != 1 {
			t.Errorf("openai-go: %d TOOL_RESPONSE dispatches for one group, want 1", n)
		}
	})

	t.Run("replayed continuation is not dispatched again", func(t *testing.T) {
		params := openai.ChatCompletionNewParams{Model: testModel, Messages: user("replay me"), Tools: []openai.ChatCompletionToolUnionParam{weather}}
		c, err := client.Chat.Completions.New(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		params.Messages = append(params.Messages, c.Choices[0].Message.ToParam(), openai.ToolMessage("hail", c.Choices[0].Message.ToolCalls[0].ID))
		before := s.emu.Count(emulator.KindToolResponse)
		first, err := client.Chat.Completions.New(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		again, err := client.Chat.Completions.New(t.Context(), params)
		if err != nil || again.Choices[0].Message.Content != first.Choices[0].Message.Content {
			t.Fatalf("openai-go: replay answered %v %+v", err, again)
		}
		acc, _, err := goStream(t, t.Context(), client, params)
		if err != nil || acc.Choices[0].Message.Content != first.Choices[0].Message.Content {
			t.Fatalf("openai-go: streamed replay answered %v %q", err, acc.Choices[0].Message.Content)
		}
		if n := dispatched(emulator.KindToolResponse, before); n != 1 {
			t.Errorf("openai-go: a continuation sent 3 times reached the upstream %d times, want 1", n)
		}
	})

	t.Run("upstream failure mid-stream", func(t *testing.T) {
		acc, rep, err := goStream(t, t.Context(), client, openai.ChatCompletionNewParams{Model: testModel, Messages: user("#scenario=failure_after_text")})
		// openai-go reports an error event as *ssestream.StreamError carrying the event.
		var streamErr *ssestream.StreamError
		var event errorBody
		if !errors.As(err, &streamErr) || json.Unmarshal(streamErr.Event.Data, &event) != nil || event.Error.Code != "upstream_failure" {
			t.Fatalf("openai-go: want an *ssestream.StreamError with code upstream_failure, got %v", err)
		}
		if rep.Content == "" || len(rep.Finish) != 0 || (len(acc.Choices) > 0 && acc.Choices[0].FinishReason != "") {
			t.Errorf("openai-go: text %q then finish %v: a failure must never look finished", rep.Content, rep.Finish)
		}
	})

	t.Run("fail-closed error is not retried", func(t *testing.T) {
		retrying := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(2))
		before := s.emu.Count(emulator.KindUserQuery)
		_, err := retrying.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: testModel, Messages: user("#scenario=failure_after_text")})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Code != "upstream_failure" {
			t.Fatalf("openai-go: want a 502 upstream_failure, got %v", err)
		}
		if n := dispatched(emulator.KindUserQuery, before); n != 1 {
			t.Errorf("openai-go: %d upstream queries with retries on, want 1 (x-should-retry: false)", n)
		}
	})

	t.Run("401 is an authentication error", func(t *testing.T) {
		wrong := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey("sk-wrong-0123456789abcdef"), option.WithMaxRetries(2))
		before := len(s.emu.Requests())
		_, err := wrong.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: testModel, Messages: user("hi")})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" || apiErr.Type != "authentication_error" {
			t.Fatalf("openai-go: want a 401 invalid_api_key, got %v", err)
		}
		_, _, err = goStream(t, t.Context(), wrong, openai.ChatCompletionNewParams{Model: testModel, Messages: user("hi")})
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
			t.Fatalf("openai-go: streamed: want a 401, got %v", err)
		}
		if n := len(s.emu.Requests()) - before; n != 0 {
			t.Errorf("openai-go: %d upstream requests for a refused key", n)
		}
	})

	t.Run("client abort reaches the upstream", func(t *testing.T) {
		// openai-go marks the request as a first attempt the SDK may retry
		// (x-stainless-retry-count: 0): after its client leaves, the gateway
		// keeps the upstream exchange for a retry for a grace just under a
		// second (docs/USAGE.md), then releases it. Its handler ends only once
		// the upstream exchange has ended, released or run to its end, so the
		// request's access line is the event to wait for, not a wall-clock
		// second (on a loaded machine that measured the scheduler: the grace
		// alone is 900 ms of it).
		const id = "openai-go-client-abort"
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: testModel,
			Messages: user("#scenario=slow_stream " + strings.Repeat("and so on ", 20))}, option.WithHeader("X-Request-Id", id))
		for stream.Next() {
			if stream.Current().Choices[0].Delta.Content != "" {
				cancel()
			}
		}
		if err := stream.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("openai-go: want context.Canceled, got %v", err)
		}
		stream.Close()
		access := waitAccessLine(t, s, id)
		var upstream []logEntry
		for _, e := range logEntries(s.logs.String()) {
			if e.RequestID == id && strings.HasPrefix(e.Msg, "upstream stream ") {
				upstream = append(upstream, e)
			}
		}
		// Released, not run to its end (the slow stream would have gone on for seconds).
		if len(upstream) != 1 || upstream[0].Msg != "upstream stream failed" || upstream[0].Code != "client_cancelled" {
			t.Fatalf("openai-go: the upstream stream of the aborted request ended as %+v, want one \"upstream stream failed\" client_cancelled", upstream)
		}
		if access.Code != "client_cancelled" {
			t.Errorf("openai-go: the aborted request's access line says %q, want client_cancelled", access.Code)
		}
		c, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: testModel, Messages: user("still there?")})
		if err != nil || c.Choices[0].FinishReason != "stop" {
			t.Fatalf("openai-go: after an abort: %v", err)
		}
	})
}

// waitAccessLine waits for the access line of the request with id: the
// gateway writes it when the request's handler has ended. The bound only
// keeps a broken gateway from hanging the suite: the request timeout ends
// any handler before it.
func waitAccessLine(t *testing.T, s *served, id string) logEntry {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for _, e := range logEntries(s.logs.String()) {
			if e.Msg == "request" && e.RequestID == id {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access line for request %s:\n%s", id, s.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countLog counts the JSON log lines with the message and code.
func countLog(logs, msg, code string) int {
	n := 0
	for _, e := range logEntries(logs) {
		if e.Msg == msg && e.Code == code {
			n++
		}
	}
	return n
}

type logEntry struct {
	Msg        string `json:"msg"`
	RequestID  string `json:"request_id"`
	Status     int    `json:"status"`
	Code       string `json:"code"`
	Stream     bool   `json:"stream"`
	DurationMS int64  `json:"duration_ms"`
	// The fields of "conversation: continued" and "conversation: fresh".
	Reason          string `json:"reason,omitempty"`
	Row             string `json:"row,omitempty"`
	Via             string `json:"via,omitempty"`
	HistoryMessages int    `json:"history_messages,omitempty"`
	NewMessages     int    `json:"new_messages,omitempty"`
	Disclosure      string `json:"disclosure,omitempty"` // the x-pmgate-conversation value, if any
	// Conversation is the access line's group with the turn's conversation
	// decision (the same fields, and decision: fresh or continued).
	Conversation *conversationGroup `json:"conversation,omitempty"`
}

// conversationGroup is the "conversation" group of a request's access line.
type conversationGroup struct {
	Decision        string `json:"decision"`
	Reason          string `json:"reason,omitempty"`
	Row             string `json:"row,omitempty"`
	Via             string `json:"via,omitempty"`
	HistoryMessages int    `json:"history_messages,omitempty"`
	NewMessages     int    `json:"new_messages,omitempty"`
	Disclosure      string `json:"disclosure,omitempty"`
}

func logEntries(logs string) []logEntry {
	var out []logEntry
	for _, line := range strings.Split(logs, "\n") {
		var e logEntry
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg != "" {
			out = append(out, e)
		}
	}
	return out
}

// ---- the streaming rules, checked on raw data payloads ----

// wireReport is what one chat completion (the data payloads of its stream, or
// its JSON body) showed, with every broken streaming rule of docs/API.md.
type wireReport struct {
	Done        bool           `json:"done"`
	ErrorCode   string         `json:"error_code"`
	ErrorParam  string         `json:"error_param,omitempty"`
	ErrorMsg    string         `json:"error_message,omitempty"`
	Finish      []string       `json:"finish"`
	Content     string         `json:"content"`
	ToolCalls   []wireToolCall `json:"tool_calls"`
	UsageChunks int            `json:"usage_chunks"`
	Violations  []string       `json:"violations"`
}

type wireToolCall struct {
	Index     int    `json:"index"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// wireError is the part of an OpenAI-shaped error the suite reports.
type wireError struct {
	Code    string `json:"code"`
	Param   string `json:"param"`
	Message string `json:"message"`
}

type wireChunk struct {
	ID      string     `json:"id"`
	Created int64      `json:"created"`
	Error   *wireError `json:"error"`
	Choices *[]struct {
		Delta struct {
			Role      *string `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int    `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function *struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// analyzeStream checks the data payloads of one stream ("[DONE]" included)
// against the streaming rules; includeUsage is the request's
// stream_options.include_usage, and ended says whether the stream was read to
// its end (the rules about the end are not checked on a cut stream).
func analyzeStream(payloads []string, includeUsage, ended bool) wireReport {
	var r wireReport
	bad := func(format string, a ...any) { r.Violations = append(r.Violations, fmt.Sprintf(format, a...)) }
	ids, created := map[string]bool{}, map[int64]bool{}
	roles, choiceChunks, lastFinish, lastUsage := 0, 0, -1, -1
	calls := map[int]int{} // index → position in r.ToolCalls
	over := false          // after [DONE] or an error event
	for i, p := range payloads {
		if over {
			bad("data after the end of the stream: %.80s", p)
			continue
		}
		if p == "[DONE]" {
			r.Done, over = true, true
			continue
		}
		var keys map[string]json.RawMessage
		var c wireChunk
		if json.Unmarshal([]byte(p), &keys) != nil || json.Unmarshal([]byte(p), &c) != nil {
			bad("payload %d is not a JSON object: %.80s", i, p)
			continue
		}
		if _, hasErr := keys["error"]; hasErr {
			if c.Choices != nil {
				bad("an error key on a normal chunk")
			}
			if c.Error != nil {
				r.ErrorCode, r.ErrorParam, r.ErrorMsg, over = c.Error.Code, c.Error.Param, c.Error.Message, true
			}
			continue
		}
		ids[c.ID], created[c.Created] = true, true
		if c.Choices == nil {
			bad("chunk %d has no choices", i)
			continue
		}
		if len(*c.Choices) == 0 {
			r.UsageChunks++
			lastUsage = i
			if len(c.Usage) == 0 || string(c.Usage) == "null" {
				bad("a chunk without choices and without usage")
			}
			continue
		}
		if len(c.Usage) > 0 && string(c.Usage) != "null" {
			bad("usage on a choice chunk")
		}
		choiceChunks++
		ch := (*c.Choices)[0]
		if ch.Delta.Role != nil {
			roles++
			if choiceChunks != 1 {
				bad("a role delta on choice chunk %d", choiceChunks)
			}
		}
		if ch.Delta.Content != nil {
			r.Content += *ch.Delta.Content
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index == nil {
				bad("a tool call delta without index")
				continue
			}
			var name, args *string
			if tc.Function != nil {
				name, args = tc.Function.Name, tc.Function.Arguments
			}
			pos, seen := calls[*tc.Index]
			if !seen {
				if tc.ID == nil || name == nil || tc.Type == nil {
					bad("the first delta of tool call %d lacks id, type or name", *tc.Index)
				}
				calls[*tc.Index], pos = len(r.ToolCalls), len(r.ToolCalls)
				w := wireToolCall{Index: *tc.Index}
				if tc.ID != nil {
					w.ID = *tc.ID
				}
				if name != nil {
					w.Name = *name
				}
				r.ToolCalls = append(r.ToolCalls, w)
			} else if tc.ID != nil || tc.Type != nil || name != nil {
				bad("id, type or name repeated on a later delta of tool call %d", *tc.Index)
			}
			if args != nil {
				r.ToolCalls[pos].Arguments += *args
			}
		}
		if ch.FinishReason != nil {
			r.Finish = append(r.Finish, *ch.FinishReason)
			lastFinish = choiceChunks
		}
	}
	if len(ids) > 1 || len(created) > 1 {
		bad("%d chunk ids and %d created values in one stream", len(ids), len(created))
	}
	if choiceChunks > 0 && roles != 1 {
		bad("%d role deltas", roles)
	}
	if r.ErrorCode != "" {
		if r.Done || len(r.Finish) != 0 {
			bad("a failed stream with [DONE] or a finish_reason")
		}
		return r
	}
	if !ended {
		return r
	}
	if !r.Done {
		bad("no [DONE]")
	}
	if len(r.Finish) != 1 || lastFinish != choiceChunks {
		bad("finish reasons %v, the last at choice chunk %d of %d", r.Finish, lastFinish, choiceChunks)
	} else if want := map[bool]string{true: "tool_calls", false: "stop"}[len(r.ToolCalls) > 0]; r.Finish[0] != want {
		bad("finish_reason %q, want %q", r.Finish[0], want)
	}
	switch {
	case includeUsage && (r.UsageChunks != 1 || lastUsage != len(payloads)-2):
		bad("%d usage chunks (the last at payload %d of %d) with include_usage", r.UsageChunks, lastUsage, len(payloads))
	case !includeUsage && r.UsageChunks != 0:
		bad("a usage chunk without include_usage")
	}
	return r
}

// analyzeJSON reads a non-streamed answer or error body.
func analyzeJSON(body []byte) wireReport {
	var r wireReport
	var v struct {
		Error   *wireError `json:"error"`
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		r.Violations = append(r.Violations, "the body is not JSON")
		return r
	}
	if v.Error != nil {
		r.ErrorCode, r.ErrorParam, r.ErrorMsg = v.Error.Code, v.Error.Param, v.Error.Message
		return r
	}
	for _, c := range v.Choices {
		r.Finish = append(r.Finish, c.FinishReason)
		if c.Message.Content != nil {
			r.Content += *c.Message.Content
		}
		for i, tc := range c.Message.ToolCalls {
			r.ToolCalls = append(r.ToolCalls, wireToolCall{Index: i, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	return r
}

// ---- the observer the Node suites ask ----

// clientObserver is a loopback server for the Node suites. GET /_observe
// answers what the emulator received and what the gateway logged and sent;
// /v1/* is a recording proxy to the gateway (9router's upstream), which keeps
// every exchange with the gateway's own bytes checked by analyzeStream.
//
// Tests mark their requests with a token "mk-<hex>" in user text and tool
// results; /_observe?marker=mk-… filters exchanges and emulator requests by it,
// and &request_id=… selects the gateway's log entries of one request.
type clientObserver struct {
	s      *served
	url    string
	client *http.Client

	mu        sync.Mutex
	exchanges []*exchange
	claude    requestCatalog // what Claude Code sent to the Messages routes
}

type exchange struct {
	Seq          int    `json:"seq"`
	Marker       string `json:"marker"`
	Stream       bool   `json:"stream"`
	IncludeUsage bool   `json:"include_usage"`
	LastRole     string `json:"last_role"`
	Status       int    `json:"status"`
	RequestID    string `json:"request_id"`
	ShouldRetry  string `json:"should_retry"`
	Finished     bool   `json:"finished"`  // the proxy is done with it
	Complete     bool   `json:"complete"`  // the gateway's body was read to its end
	Cancelled    bool   `json:"cancelled"` // the client went away first
	wireReport
	anthropicReport
}

var markerRE = regexp.MustCompile(`mk-[0-9a-f]{8,32}`)

func newClientObserver(t *testing.T, s *served) *clientObserver {
	o := &clientObserver{s: s, client: &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/", o.proxy)
	mux.HandleFunc("/v1beta/", o.proxy) // the Gemini API (clients_gemini_test.go)
	mux.HandleFunc("GET /_observe", o.observe)
	// POST /_forget makes the emulator lose every conversation, as the
	// service does now and then (a continued turn then fails with
	// CONVERSATION_NOT_FOUND): the long sessions measure what the agent does
	// with the gateway's 410.
	mux.HandleFunc("POST /_forget", func(w http.ResponseWriter, _ *http.Request) {
		o.s.emu.ForgetConversations()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		o.client.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
	})
	o.url = srv.URL
	return o
}

func (o *clientObserver) proxy(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, "observer: body", http.StatusBadRequest)
		return
	}
	var req struct {
		Stream        bool `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	ex := &exchange{Marker: markerRE.FindString(string(body)), Stream: req.Stream, IncludeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	if n := len(req.Messages); n > 0 {
		ex.LastRole = req.Messages[n-1].Role
	}
	if isMessagesPath(r.URL.Path) {
		ex.API, ex.AgentID, ex.UserAgent = "messages", r.Header.Get("x-claude-code-agent-id"), r.UserAgent()
	}
	if isGeminiPath(r.URL.Path) {
		ex.API, ex.Stream, ex.UserAgent = "gemini", strings.Contains(r.URL.Path, ":streamGenerateContent"), r.UserAgent()
	}
	if strings.HasPrefix(r.URL.Path, "/v1/messages") && strings.HasPrefix(r.UserAgent(), "claude-cli") {
		o.claude.add(r.Method+" "+r.URL.RequestURI(), r.Header, body)
	}
	o.mu.Lock()
	ex.Seq = len(o.exchanges)
	o.exchanges = append(o.exchanges, ex)
	o.mu.Unlock()
	// The proxy fills these; the deferred update publishes them under o.mu.
	var (
		raw                 bytes.Buffer
		status              int
		reqID, retry, ctype string
		complete, cancelled bool
		respHeader          http.Header
	)
	defer func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		ex.Status, ex.RequestID, ex.ShouldRetry, ex.Complete, ex.Cancelled = status, reqID, retry, complete, cancelled
		if ex.API == "messages" {
			analyzeMessages(ex, status, respHeader, raw.Bytes())
		} else if ex.API == "gemini" {
			analyzeGemini(ex, status, respHeader, raw.Bytes(), complete)
		} else if strings.HasPrefix(ctype, "text/event-stream") {
			ex.wireReport = analyzeStream(ssePayloads(raw.Bytes()), ex.IncludeUsage, complete)
		} else if raw.Len() > 0 {
			ex.wireReport = analyzeJSON(raw.Bytes())
		}
		ex.Finished = true
	}()
	out, _ := http.NewRequestWithContext(r.Context(), r.Method, o.s.base+r.URL.RequestURI(), bytes.NewReader(body))
	for k, v := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Accept-Encoding", "Content-Length":
		default:
			out.Header[k] = v
		}
	}
	resp, err := o.client.Do(out)
	if err != nil {
		cancelled = r.Context().Err() != nil
		http.Error(w, "observer: gateway unreachable", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	status, reqID, retry, ctype = resp.StatusCode, resp.Header.Get("x-request-id"), resp.Header.Get("x-should-retry"), resp.Header.Get("Content-Type")
	respHeader = resp.Header.Clone()
	for k, v := range resp.Header {
		if k != "Content-Length" && k != "Connection" && k != "Transfer-Encoding" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			raw.Write(buf[:n])
			_, _ = w.Write(buf[:n])
			_ = rc.Flush()
		}
		if err == io.EOF {
			complete = true
			return
		}
		if err != nil {
			cancelled = r.Context().Err() != nil
			return
		}
	}
}

// ssePayloads splits an SSE body into its data payloads; any other line is a
// payload that analyzeStream reports as not JSON.
func ssePayloads(body []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			p, _ := strings.CutPrefix(line, "data: ")
			out = append(out, p)
		}
	}
	return out
}

func (o *clientObserver) observe(w http.ResponseWriter, r *http.Request) {
	marker, reqID := r.URL.Query().Get("marker"), r.URL.Query().Get("request_id")
	// ex_since=N keeps the exchanges from sequence number N on (a window
	// that also holds a client's requests that carry no marker).
	exSince := 0
	if v := r.URL.Query().Get("ex_since"); v != "" {
		if _, err := fmt.Sscan(v, &exSince); err != nil {
			http.Error(w, "observer: ex_since", http.StatusBadRequest)
			return
		}
	}
	// conv_since=N keeps the gateway's conversation decisions from number N on.
	convSince := 0
	if v := r.URL.Query().Get("conv_since"); v != "" {
		if _, err := fmt.Sscan(v, &convSince); err != nil {
			http.Error(w, "observer: conv_since", http.StatusBadRequest)
			return
		}
	}
	// emu_since=N also lists every upstream request from the emulator's
	// request number N on, with or without a marker (an agent's own
	// compaction request carries none).
	emuSince := -1
	if v := r.URL.Query().Get("emu_since"); v != "" {
		if _, err := fmt.Sscan(v, &emuSince); err != nil {
			http.Error(w, "observer: emu_since", http.StatusBadRequest)
			return
		}
	}
	type counts struct {
		UserQuery    int `json:"user_query"`
		ToolResponse int `json:"tool_response"`
		Rejected     int `json:"rejected"`
		// ContinuedQuery counts the USER_QUERY requests that continued a
		// conversation (turn 2 and later at the emulator).
		ContinuedQuery int `json:"continued_user_query"`
	}
	var report struct {
		Exchanges []exchange `json:"exchanges"`
		// ExchangeSeq is the sequence number the next exchange will get.
		ExchangeSeq int `json:"exchange_seq"`
		// Emulator counts the marker's requests; EmulatorTotals counts every
		// request since the emulator started (monotonic, for windows).
		Emulator       counts `json:"emulator"`
		EmulatorTotals counts `json:"emulator_totals"`
		// Queries are the marker's upstream requests as the emulator received them.
		Queries []upstreamQuery `json:"queries"`
		// Upstream is every upstream request from emu_since on;
		// EmulatorSeq is the number of the next.
		Upstream          []upstreamQuery `json:"upstream"`
		EmulatorSeq       int             `json:"emulator_seq"`
		Gateway           []logEntry      `json:"gateway"`
		UpstreamCancelled int             `json:"upstream_cancelled"`
		// Conversations are the gateway's conversation decisions from
		// conv_since on, from the "conversation" group of the access lines, in
		// the shape of its "conversation: continued|fresh" debug lines;
		// ConversationSeq is the number of the next.
		Conversations   []logEntry `json:"conversations"`
		ConversationSeq int        `json:"conversation_seq"`
	}
	report.Exchanges, report.Queries, report.Upstream = []exchange{}, []upstreamQuery{}, []upstreamQuery{}
	o.mu.Lock()
	for _, e := range o.exchanges {
		if (marker == "" || e.Marker == marker) && e.Seq >= exSince {
			report.Exchanges = append(report.Exchanges, *e)
		}
	}
	report.ExchangeSeq = len(o.exchanges)
	o.mu.Unlock()
	report.EmulatorTotals = counts{o.s.emu.Count(emulator.KindUserQuery), o.s.emu.Count(emulator.KindToolResponse),
		o.s.emu.Count(emulator.KindRejected), o.s.emu.Count(emulator.KindContinuedQuery)}
	recs := o.s.emu.Requests()
	report.EmulatorSeq = len(recs)
	for i, rec := range recs {
		if emuSince >= 0 && i >= emuSince {
			report.Upstream = append(report.Upstream, summarizeUpstream(rec))
		}
		if marker != "" && !bytes.Contains(rec.Body, []byte(marker)) {
			continue
		}
		switch {
		case rec.Rejected:
			report.Emulator.Rejected++
		case rec.ChatType == emulator.KindUserQuery:
			report.Emulator.UserQuery++
			if rec.Turn > 1 {
				report.Emulator.ContinuedQuery++
			}
		case rec.ChatType == emulator.KindToolResponse:
			report.Emulator.ToolResponse++
		}
		if marker != "" {
			report.Queries = append(report.Queries, summarizeUpstream(rec))
		}
	}
	report.Gateway, report.Conversations = []logEntry{}, []logEntry{}
	for _, e := range logEntries(o.s.logs.String()) {
		if c := e.Conversation; e.Msg == "request" && c != nil {
			if report.ConversationSeq >= convSince {
				report.Conversations = append(report.Conversations, logEntry{Msg: "conversation: " + c.Decision, RequestID: e.RequestID,
					Reason: c.Reason, Row: c.Row, Via: c.Via, HistoryMessages: c.HistoryMessages, NewMessages: c.NewMessages, Disclosure: c.Disclosure})
			}
			report.ConversationSeq++
		}
		if e.Msg == "upstream stream failed" && e.Code == "client_cancelled" {
			report.UpstreamCancelled++
		}
		if e.Msg == "request" && reqID != "" && e.RequestID == reqID {
			report.Gateway = append(report.Gateway, e)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(report)
}

// upstreamQuery is one upstream request as the emulator received it.
type upstreamQuery struct {
	ChatType   string `json:"chat_type"`
	Status     int    `json:"status"`
	Rejected   bool   `json:"rejected"`
	QueryChars int    `json:"query_chars"` // input.query in UTF-16 code units, as the service counts
	Tools      int    `json:"tools"`       // tools offered in clientTools
	BodyBytes  int    `json:"body_bytes"`
	Turn       int    `json:"turn"` // the conversation's USER_QUERY turn at the emulator; 0 for a TOOL_RESPONSE
	// CallIDs are the tool call ids a TOOL_RESPONSE answers, each once
	// (flat, array and web_session packed forms).
	CallIDs []string `json:"call_ids,omitempty"`
}

func summarizeUpstream(rec emulator.Request) upstreamQuery {
	var body struct {
		Input struct {
			Query         string  `json:"query"`
			ToolCallID    *string `json:"toolCallId"`
			ToolResponse  *string `json:"toolResponse"`
			ToolResponses []struct {
				ToolCallID string `json:"toolCallId"`
			} `json:"toolResponses"`
		} `json:"input"`
		ClientTools struct {
			ThirdParty map[string]struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"thirdParty"`
		} `json:"clientTools"`
	}
	_ = json.Unmarshal(rec.Body, &body)
	q := upstreamQuery{ChatType: rec.ChatType, Status: rec.Status, Rejected: rec.Rejected,
		QueryChars: len(utf16.Encode([]rune(body.Input.Query))), BodyBytes: len(rec.Body), Turn: rec.Turn}
	for _, g := range body.ClientTools.ThirdParty {
		q.Tools += len(g.Tools)
	}
	if rec.ChatType == emulator.KindToolResponse {
		q.CallIDs = toolResponseCallIDs(body.Input.ToolCallID, body.Input.ToolResponse, body.Input.ToolResponses)
		if q.CallIDs == nil {
			q.CallIDs = []string{}
		}
	}
	return q
}

// toolResponseCallIDs lists the call ids one TOOL_RESPONSE answers, each once:
// the flat toolCallId, the array form's ids, and the ids packed into a
// web_session toolResponse string ([{toolCallId,status,content}]).
func toolResponseCallIDs(flat, packed *string, grouped []struct {
	ToolCallID string `json:"toolCallId"`
}) []string {
	var ids []string
	add := func(id string) {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if flat != nil {
		add(*flat)
	}
	for _, g := range grouped {
		add(g.ToolCallID)
	}
	if packed != nil {
		var entries []struct {
			ToolCallID string `json:"toolCallId"`
		}
		if json.Unmarshal([]byte(*packed), &entries) == nil {
			for _, e := range entries {
				add(e.ToolCallID)
			}
		}
	}
	return ids
}

// ---- running a Node suite ----

// clientsJSDir is clients/js, relative to this package.
const clientsJSDir = "../../clients/js"

type nodeEvent struct {
	Event   string `json:"event"` // pass, fail, skip, todo
	Name    string `json:"name"`
	Nesting int    `json:"nesting"`
	Error   string `json:"error"`
}

// runNodeSuite runs one Node test file with node:test and turns each of its
// top-level tests into a subtest named after its scenario.
func runNodeSuite(t *testing.T, suite nodeSuite, env []string) {
	client, file := suite.client, suite.file
	required := os.Getenv("PMGATE_CLIENTS") == "1"
	dir, err := filepath.Abs(clientsJSDir)
	if err != nil {
		t.Fatal(err)
	}
	node, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(dir, "node_modules", "9router", "package.json"))
	if nodeErr != nil || modErr != nil {
		if required {
			t.Fatalf("%s: PMGATE_CLIENTS=1 but node or clients/js/node_modules is missing (run `make test-clients`): %v %v", client, nodeErr, modErr)
		}
		t.Skipf("%s: skipped: clients/js/node_modules is not installed (run `make test-clients`, or set PMGATE_CLIENTS=1 to require it)", client)
	}
	if ok, iface := loopbackOnly(); suite.agent && !ok {
		if required {
			t.Fatalf("%s: PMGATE_CLIENTS=1 but interface %s is not loopback: the agents run only in a loopback-only namespace (make test-clients, scripts/netns.sh)", client, iface)
		}
		t.Skipf("%s: skipped: the agents run only in a loopback-only network namespace (make test-clients)", client)
	}
	witness := newSuiteWitness(t)
	started := time.Now()
	defer func() { reportSuite(t, client, time.Since(started), witness) }()
	ctx, cancel := context.WithTimeout(t.Context(), suite.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test",
		"--test-reporter=spec", "--test-reporter-destination=stderr",
		"--test-reporter=./lib/reporter.mjs", "--test-reporter-destination=stdout", file)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), witness.env()...)
	// Its own process group, so that 9router (a grandchild) never outlives the suite.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var events []nodeEvent
	for _, line := range strings.Split(stdout.String(), "\n") {
		var e nodeEvent
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &e) == nil && e.Nesting == 0 {
			events = append(events, e)
		}
	}
	failed := false
	for _, e := range events {
		scenario := strings.TrimPrefix(e.Name, client+" ")
		t.Run(scenario, func(t *testing.T) {
			switch e.Event {
			case "fail":
				failed = true
				t.Errorf("client %s, scenario %q: %s", client, scenario, e.Error)
			case "skip", "todo":
				t.Skipf("client %s, scenario %q: %s", client, scenario, e.Event)
			}
		})
	}
	if failed || runErr != nil || len(events) == 0 {
		t.Errorf("client %s: node --test %s: %v, %d tests reported\n%s", client, file, runErr, len(events), stderr.String())
	}
}

// TestTheStreamCheckerCatchesBrokenRules keeps analyzeStream honest: a
// checker that passes everything would make every client scenario vacuous.
func TestTheStreamCheckerCatchesBrokenRules(t *testing.T) {
	chunk := func(id, delta, finish string) string {
		if finish != "null" {
			finish = `"` + finish + `"`
		}
		return fmt.Sprintf(`{"id":%q,"created":1,"choices":[{"index":0,"delta":%s,"finish_reason":%s}],"usage":null}`, id, delta, finish)
	}
	role, text := `{"role":"assistant","content":""}`, `{"content":"hi"}`
	call0 := `{"tool_calls":[{"index":0,"id":"call_pmn_a","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}`
	args0 := `{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`
	usage := `{"id":"c","created":1,"choices":[],"usage":{"total_tokens":3}}`
	good := []string{chunk("c", role, "null"), chunk("c", text, "null"), chunk("c", "{}", "stop"), usage, "[DONE]"}
	if r := analyzeStream(good, true, true); len(r.Violations) != 0 || r.Content != "hi" || r.UsageChunks != 1 {
		t.Fatalf("a good stream: %+v", r)
	}
	tools := []string{chunk("c", role, "null"), chunk("c", call0, "null"), chunk("c", args0, "null"), chunk("c", "{}", "tool_calls"), "[DONE]"}
	if r := analyzeStream(tools, false, true); len(r.Violations) != 0 || r.ToolCalls[0].Arguments != `{"a":1}` || r.ToolCalls[0].Name != "f" {
		t.Fatalf("a good tool stream: %+v", r)
	}
	failed := []string{chunk("c", role, "null"), chunk("c", text, "null"), `{"error":{"code":"upstream_failure"}}`}
	if r := analyzeStream(failed, false, true); len(r.Violations) != 0 || r.ErrorCode != "upstream_failure" {
		t.Fatalf("a failed stream: %+v", r)
	}
	broken := map[string][]string{
		"two ids":                {chunk("c", role, "null"), chunk("d", text, "null"), chunk("c", "{}", "stop"), "[DONE]"},
		"two role deltas":        {chunk("c", role, "null"), chunk("c", role, "null"), chunk("c", "{}", "stop"), "[DONE]"},
		"no index":               {chunk("c", role, "null"), chunk("c", strings.Replace(call0, `"index":0,`, "", 1), "null"), chunk("c", "{}", "tool_calls"), "[DONE]"},
		"name on a later delta":  {chunk("c", role, "null"), chunk("c", call0, "null"), chunk("c", strings.Replace(args0, `"function":{`, `"function":{"name":"f",`, 1), "null"), chunk("c", "{}", "tool_calls"), "[DONE]"},
		"finish not last":        {chunk("c", role, "null"), chunk("c", "{}", "stop"), chunk("c", text, "null"), "[DONE]"},
		"wrong finish":           {chunk("c", role, "null"), chunk("c", call0, "null"), chunk("c", "{}", "stop"), "[DONE]"},
		"no [DONE]":              {chunk("c", role, "null"), chunk("c", "{}", "stop")},
		"data after [DONE]":      append(append([]string(nil), good...), chunk("c", text, "null")),
		"no usage chunk":         {chunk("c", role, "null"), chunk("c", "{}", "stop"), "[DONE]"},
		"usage on a choice":      {chunk("c", role, "null"), strings.Replace(chunk("c", "{}", "stop"), `"usage":null`, `"usage":{"total_tokens":3}`, 1), usage, "[DONE]"},
		"error key on a chunk":   {chunk("c", role, "null"), strings.Replace(chunk("c", "{}", "stop"), `"usage":null`, `"usage":null,"error":null`, 1), usage, "[DONE]"},
		"[DONE] after an error":  append(append([]string(nil), failed...), "[DONE]"),
		"finish before an error": {chunk("c", role, "null"), chunk("c", "{}", "stop"), `{"error":{"code":"upstream_failure"}}`},
	}
	for name, payloads := range broken {
		includeUsage := name == "no usage chunk" || name == "usage on a choice" || name == "error key on a chunk"
		if r := analyzeStream(payloads, includeUsage, true); len(r.Violations) == 0 {
			t.Errorf("%s: no violation reported", name)
		}
	}
}
