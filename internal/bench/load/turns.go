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
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Protocols a target speaks: the upstream's (the body goes to /_gw/chat as is
// and the answer is the upstream's SSE), or the OpenAI API of the gateway.
const (
	protoUpstream = iota
	protoOpenAI
)

// Turn kinds. Every kind is an exchange of one or two requests; what is timed
// of it is documented in docs/BENCHMARKS.md (turnTimed).
const (
	turnFresh     = iota // one small text turn that starts a conversation
	turnTool             // a turn answered with a tool call, then the continuation carrying the result
	turnContinued        // an opening turn, then a follow-up the gateway continues through its anchor
)

var turnNames = []string{"fresh", "tool", "continued"}

const (
	seqQuery     = "hi"
	toolQuery    = "What is the weather in Paris?"
	toolName     = "get_weather"
	toolResult   = `{"temperature_c":21,"sky":"clear"}`
	followQuery  = "and once more?"
	replyPrefix  = "Hello from the pmgate emulator. You said: "
	againPrefix2 = "Hello again from the pmgate emulator (turn 2 of this conversation). You said: "
	resultPrefix = "Tool results received: "
	// Upstream events of a normal text turn besides its text chunks:
	// conversation, thinking, usage and [DONE].
	framingEvents = 4
	shortEvents   = 6 // "hi": 44 bytes of reply, two text chunks of ≤ 24 bytes
	chunkBytes    = 24
)

// longQuery is the prompt of the long stream: the emulator's "#text_chunks=N"
// directive makes its reply exactly events−framingEvents text chunks.
func longQuery(events int) string {
	return "hi #text_chunks=" + strconv.Itoa(events-framingEvents)
}

var weatherTool = map[string]any{
	"name":        toolName,
	"description": "Current weather of a city.",
	"parameters": map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string", "description": "city name"}},
		"required":   []any{"city"},
	},
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// upstreamBody is the access_token chat body the gateway sends for input, as
// the emulator validates it (adapters/emulator/body.go); withTools offers
// weatherTool with parallel calling on, as the gateway does for an OpenAI
// request that leaves parallel_tool_calls at its default.
func upstreamBody(input map[string]any, withTools bool) []byte {
	input["product"], input["useCase"], input["agent"], input["startedFrom"] = "workspace_v12", nil, nil, "CHAT_INPUT"
	clientTools := map[string]any{"native": []any{}}
	if withTools {
		clientTools["thirdParty"] = map[string]any{"pmgate": map[string]any{"tools": []any{weatherTool}}}
	}
	return mustJSON(map[string]any{
		"input":             input,
		"platform":          "WEB",
		"clientTools":       clientTools,
		"clientKBTerms":     map[string]any{"native": []any{}},
		"mandatoryContext":  map[string]any{"workspaceId": benchWorkspace},
		"selectedContext":   []any{},
		"backgroundContext": []any{},
		"devModeOptions": map[string]any{
			"selectedModel": benchEnum, "isParallelToolCallingSupported": withTools, "autoRun": withTools,
			"supportsAskUser": false, "supportsActionRecommendations": false, "useThinkingModeIfAvailable": false,
		},
	})
}

// userQuery is the upstream body of a USER_QUERY; convID "" starts a conversation.
func userQuery(query, convID string, withTools bool) []byte {
	var conv any
	if convID != "" {
		conv = convID
	}
	return upstreamBody(map[string]any{"chatType": "USER_QUERY", "query": query, "conversationId": conv, "toolResponse": ""}, withTools)
}

// toolResponse is the grouped TOOL_RESPONSE the gateway sends for one result
// of a group issued with parallel calling on.
func toolResponse(convID, groupID, callID, name, content string) []byte {
	return upstreamBody(map[string]any{
		"chatType": "TOOL_RESPONSE", "query": "", "conversationId": convID, "toolCallGroupId": groupID, "toolResponse": "",
		"toolResponses": []any{map[string]any{"toolCallId": callID, "content": content,
			"toolResponseSummary": "Result for " + name, "toolResponseStatus": "SUCCESS"}},
	}, true)
}

var openAITools = []any{map[string]any{"type": "function", "function": weatherTool}}

func openAIBody(messages []any, stream, withTools bool) []byte {
	body := map[string]any{"model": benchModel, "messages": messages}
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if withTools {
		body["tools"] = openAITools
	}
	return mustJSON(body)
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

// target is one path to the emulator.
type target struct {
	name   string
	proto  int
	url    string
	client *http.Client
	header http.Header
	server *proc // the process under test; nil for direct
	// Bodies that never change.
	freshBody, shortBody, longBody, toolBody []byte
	coldBody, coldStreamBody                 []byte        // the cold pass's fresh and streamed turns
	serial                                   *atomic.Int64 // shared: unique openings of continued conversations
}

func (t *target) post(ctx context.Context, body []byte) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		panic(err) // the URL was built by the rig
	}
	req.Header = t.header.Clone()
	return req
}

// roundTrip sends body and reads the answer to EOF into buf; it returns the
// latency in ns (request start → last byte read).
func (t *target) roundTrip(ctx context.Context, body []byte, buf *bytes.Buffer) (float64, error) {
	req := t.post(ctx, body)
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, err
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %.300s", resp.StatusCode, buf.Bytes())
	}
	return float64(d.Nanoseconds()), nil
}

// ask is roundTrip and parseAnswer; errors name the leg.
func (t *target) ask(ctx context.Context, leg string, body []byte, buf *bytes.Buffer) (float64, answer, error) {
	d, err := t.roundTrip(ctx, body, buf)
	if err != nil {
		return 0, answer{}, fmt.Errorf("%s: %w", leg, err)
	}
	a, err := parseAnswer(t.proto, buf.Bytes())
	if err != nil {
		return 0, answer{}, fmt.Errorf("%s: %w", leg, err)
	}
	return d, a, nil
}

// answer is what the rig reads of one complete answer, on either protocol.
type answer struct {
	text     string
	convID   string // upstream only: the conversation event
	groupID  string // upstream only: the tool call group
	callID   string
	callName string
	callArgs string
}

var (
	upstreamDone  = []byte("data: [DONE]\n\n")
	failureMarker = []byte(`"eventType":"failure"`)
)

// wireCall is a tool call as both protocols spell it: an id, a name and
// (a fragment of) the arguments.
type wireCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// parseAnswer checks that an answer is complete and reads it: an upstream SSE
// stream that ends with [DONE] and holds no failure event, or an OpenAI chat
// completion with one choice.
func parseAnswer(proto int, b []byte) (answer, error) {
	var a answer
	if proto == protoOpenAI {
		var c struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct {
					Content   *string    `json:"content"`
					ToolCalls []wireCall `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &c); err != nil || len(c.Choices) != 1 {
			return a, fmt.Errorf("unexpected answer: %.300s", b)
		}
		ch := c.Choices[0]
		if ch.Message.Content != nil {
			a.text = *ch.Message.Content
		}
		switch {
		case ch.FinishReason == "tool_calls" && len(ch.Message.ToolCalls) == 1:
			tc := ch.Message.ToolCalls[0]
			a.callID, a.callName, a.callArgs = tc.ID, tc.Function.Name, tc.Function.Arguments
		case ch.FinishReason != "stop":
			return a, fmt.Errorf("finish_reason %q: %.300s", ch.FinishReason, b)
		}
		return a, nil
	}
	if !bytes.HasSuffix(b, upstreamDone) || bytes.Contains(b, failureMarker) {
		return a, fmt.Errorf("incomplete or failed upstream answer: %.300s", b)
	}
	var text, args strings.Builder
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		payload, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || string(payload) == "[DONE]" {
			continue
		}
		var ev struct {
			EventType string `json:"eventType"`
			Data      struct {
				ID              string     `json:"id"`
				TextContent     string     `json:"textContent"`
				ToolCallGroupID string     `json:"toolCallGroupId"`
				ToolCalls       []wireCall `json:"toolCalls"`
			} `json:"data"`
		}
		if err := json.Unmarshal(payload, &ev); err != nil {
			return a, fmt.Errorf("bad upstream event: %v", err)
		}
		switch ev.EventType {
		case "conversation":
			a.convID = ev.Data.ID
		case "textChunk":
			text.WriteString(ev.Data.TextContent)
		case "toolCallChunk":
			a.groupID = ev.Data.ToolCallGroupID
			for _, c := range ev.Data.ToolCalls {
				if c.ID != "" {
					a.callID = c.ID
				}
				if c.Function.Name != "" {
					a.callName = c.Function.Name
				}
				args.WriteString(c.Function.Arguments)
			}
		}
	}
	a.text, a.callArgs = text.String(), args.String()
	return a, nil
}

// exchange runs one exchange of a kind and returns its timed latency in ns
// (turnTimed) and the final answer. buf is the caller's scratch buffer.
func (t *target) exchange(ctx context.Context, kind int, buf *bytes.Buffer) (float64, answer, error) {
	switch kind {
	case turnFresh:
		d, err := t.roundTrip(ctx, t.freshBody, buf)
		if err != nil {
			return 0, answer{}, err
		}
		if err := t.cheapCheck(buf.Bytes()); err != nil {
			return 0, answer{}, err
		}
		return d, answer{}, nil
	case turnTool:
		return t.toolRoundTrip(ctx, buf)
	default:
		return t.continuedTurn(ctx, buf)
	}
}

// cheapCheck is the completeness check of a fresh text answer in the timed
// loops (verify reads the content once).
func (t *target) cheapCheck(b []byte) error {
	if t.proto == protoUpstream {
		if !bytes.HasSuffix(b, upstreamDone) || bytes.Contains(b, failureMarker) {
			return fmt.Errorf("incomplete answer: %.300s", b)
		}
		return nil
	}
	if !bytes.Contains(b, []byte(`"finish_reason":"stop"`)) {
		return fmt.Errorf("incomplete answer: %.300s", b)
	}
	return nil
}

// toolRoundTrip: the tool turn, then its continuation with the result; both
// legs are timed (the sum is the latency).
func (t *target) toolRoundTrip(ctx context.Context, buf *bytes.Buffer) (float64, answer, error) {
	d1, call, err := t.ask(ctx, "tool turn", t.toolBody, buf)
	if err != nil {
		return 0, answer{}, err
	}
	if call.callID == "" || call.callName != toolName {
		return 0, answer{}, fmt.Errorf("tool turn: no call of %s: %.300s", toolName, buf.Bytes())
	}
	var body []byte
	if t.proto == protoUpstream {
		if call.convID == "" || call.groupID == "" {
			return 0, answer{}, fmt.Errorf("tool turn: no conversation or group id: %.300s", buf.Bytes())
		}
		body = toolResponse(call.convID, call.groupID, call.callID, call.callName, toolResult)
	} else {
		body = openAIBody([]any{
			user(toolQuery),
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": call.callID, "type": "function",
				"function": map[string]any{"name": call.callName, "arguments": call.callArgs}}}},
			map[string]any{"role": "tool", "tool_call_id": call.callID, "content": toolResult},
		}, false, true)
	}
	d2, a, err := t.ask(ctx, "tool result", body, buf)
	if err != nil {
		return 0, answer{}, err
	}
	if !strings.HasPrefix(a.text, resultPrefix) {
		return 0, answer{}, fmt.Errorf("tool result: answered %q, want the results quoted", a.text)
	}
	return d1 + d2, a, nil
}

// continuedTurn: an opening turn with a unique text (not timed), then a
// follow-up in the same conversation (timed). The follow-up must be answered
// from the emulator's conversation — "Hello again … turn 2" — so a gateway that
// fell back to a fresh conversation fails here instead of being measured.
func (t *target) continuedTurn(ctx context.Context, buf *bytes.Buffer) (float64, answer, error) {
	opening := "hi " + strconv.FormatInt(t.serial.Add(1), 36)
	var body []byte
	if t.proto == protoUpstream {
		body = userQuery(opening, "", false)
	} else {
		body = openAIBody([]any{user(opening)}, false, false)
	}
	_, first, err := t.ask(ctx, "opening turn", body, buf)
	if err != nil {
		return 0, answer{}, err
	}
	if t.proto == protoUpstream {
		if first.convID == "" {
			return 0, answer{}, fmt.Errorf("opening turn: no conversation id: %.300s", buf.Bytes())
		}
		body = userQuery(followQuery, first.convID, false)
	} else {
		body = openAIBody([]any{user(opening), map[string]any{"role": "assistant", "content": first.text}, user(followQuery)}, false, false)
	}
	d, a, err := t.ask(ctx, "follow-up", body, buf)
	if err != nil {
		return 0, answer{}, err
	}
	if a.text != againPrefix2+followQuery {
		return 0, answer{}, fmt.Errorf("follow-up was not continued: answered %q", a.text)
	}
	return d, a, nil
}

// --- streamed turns ----------------------------------------------------------

// streamStats are the timings of one streamed turn, in ns from the request.
type streamStats struct {
	firstContent float64 // the first event carrying text fully read
	lastByte     float64 // the body's end (EOF) read
	events       int     // data events (including [DONE])
	chunks       int     // events carrying text
	text         string  // concatenated text
}

// perEvent is the cost of each further upstream event of a stream of n:
// (last byte − first content) / (n − 1).
func (s streamStats) perEvent(n int) float64 {
	return (s.lastByte - s.firstContent) / float64(n-1)
}

type stamped struct {
	at   time.Duration
	line []byte
}

// stream sends a streamed turn and stamps every data line as it is read, and
// the end of the body; parsing happens after the stream ends, so it does not
// skew the stamps.
func (t *target) stream(ctx context.Context, body []byte) (streamStats, error) {
	req := t.post(ctx, body)
	lines := make([]stamped, 0, 64)
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return streamStats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return streamStats{}, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return streamStats{}, fmt.Errorf("content type %q", ct)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var end time.Duration
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && bytes.HasPrefix(line, []byte("data:")) {
			lines = append(lines, stamped{at: time.Since(start), line: bytes.Clone(line)})
		}
		if errors.Is(err, io.EOF) {
			end = time.Since(start)
			break
		}
		if err != nil {
			return streamStats{}, err
		}
		if len(lines) > 10000 {
			return streamStats{}, errors.New("more than 10000 events")
		}
	}
	return analyzeStream(t.proto, lines, end)
}

func analyzeStream(proto int, lines []stamped, end time.Duration) (streamStats, error) {
	var st streamStats
	if len(lines) == 0 {
		return st, errors.New("no data events")
	}
	st.events = len(lines)
	st.lastByte = float64(end.Nanoseconds())
	if last := bytes.TrimSpace(lines[len(lines)-1].line); string(last) != "data: [DONE]" {
		return st, fmt.Errorf("the stream did not end with [DONE]: %.200s", last)
	}
	var text strings.Builder
	for _, l := range lines {
		payload := bytes.TrimSpace(bytes.TrimPrefix(l.line, []byte("data:")))
		if string(payload) == "[DONE]" {
			continue
		}
		piece, err := textOf(proto, payload)
		if err != nil {
			return st, err
		}
		if piece == "" {
			continue
		}
		if st.chunks == 0 {
			st.firstContent = float64(l.at.Nanoseconds())
		}
		st.chunks++
		text.WriteString(piece)
	}
	if st.chunks == 0 {
		return st, errors.New("no text in the stream")
	}
	st.text = text.String()
	return st, nil
}

// textOf extracts the text of one event: textChunk.textContent upstream,
// choices[0].delta.content on the OpenAI side.
func textOf(proto int, payload []byte) (string, error) {
	if proto == protoUpstream {
		var ev struct {
			EventType string `json:"eventType"`
			Data      struct {
				TextContent string `json:"textContent"`
			} `json:"data"`
		}
		if err := json.Unmarshal(payload, &ev); err != nil {
			return "", fmt.Errorf("bad upstream event: %v", err)
		}
		if ev.EventType == "failure" {
			return "", fmt.Errorf("upstream failure event: %.300s", payload)
		}
		if ev.EventType != "textChunk" {
			return "", nil
		}
		return ev.Data.TextContent, nil
	}
	var ch struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(payload, &ch); err != nil {
		return "", fmt.Errorf("bad chunk: %v", err)
	}
	if ch.Error != nil {
		return "", fmt.Errorf("error event: %.300s", payload)
	}
	if len(ch.Choices) == 0 {
		return "", nil // the usage chunk
	}
	return ch.Choices[0].Delta.Content, nil
}
