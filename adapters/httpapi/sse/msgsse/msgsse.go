// Package msgsse is the emitter of the Anthropic Messages event stream
// (the grammar internal/anthropicsse checks): message_start once, first;
// content blocks at indexes 0, 1, … each started, given its deltas and
// stopped before the next starts; a tool_use block starts with input {} and
// gets its input only through input_json_delta; then message_delta, whose
// stop_reason is tool_use whenever a tool_use block was shown (unless a stop
// sequence cut the text), and message_stop. After the open a failure is one
// event: error and the end, never message_delta or message_stop. ping may
// come between any two events, from another goroutine.
//
// Members of every event are in the order the stream had when its events
// were encoded from maps (sorted by name), so the bytes are the same.
package msgsse

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
)

// Usage is the Messages usage object: always present (the SDKs require it);
// counts neither reported nor estimated are 0.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Message is the Messages API's Message object: the JSON answer, and the
// stream's message_start without content.
type Message struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        Usage             `json:"usage"`
}

// TextBlock and ToolUseBlock are the content blocks.
type TextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type ToolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Stop reasons the gateway can prove.
const (
	StopEndTurn  = "end_turn"
	StopToolUse  = "tool_use"
	StopSequence = "stop_sequence"
)

// StopReason is the stop reason of a proven end: the stop sequence that cut
// the text, else tool_use when any tool_use block is shown, else end_turn.
// max_tokens is never reported: the gateway never cuts on it. (The JSON
// answer shows no tool_use after a cut; a stream may have shown one before
// the cut, and then its reason is tool_use: see Stream.Stop.)
func StopReason(seq *string, toolUses int) string {
	switch {
	case seq != nil:
		return StopSequence
	case toolUses > 0:
		return StopToolUse
	}
	return StopEndTurn
}

// The events, members sorted by name.
type (
	startEvent struct {
		Message Message `json:"message"`
		Type    string  `json:"type"`
	}
	blockStartEvent struct {
		ContentBlock any    `json:"content_block"`
		Index        int    `json:"index"`
		Type         string `json:"type"`
	}
	textDelta struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	inputDelta struct {
		PartialJSON string `json:"partial_json"`
		Type        string `json:"type"`
	}
	blockDeltaEvent struct {
		Delta any    `json:"delta"`
		Index int    `json:"index"`
		Type  string `json:"type"`
	}
	blockStopEvent struct {
		Index int    `json:"index"`
		Type  string `json:"type"`
	}
	stopDelta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	deltaUsage struct {
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens,omitempty"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens,omitempty"`
		InputTokens              *int64 `json:"input_tokens,omitempty"`
		OutputTokens             int64  `json:"output_tokens"`
	}
	messageDeltaEvent struct {
		Delta stopDelta  `json:"delta"`
		Type  string     `json:"type"`
		Usage deltaUsage `json:"usage"`
	}
	typeOnly struct {
		Type string `json:"type"`
	}
	errorEvent struct {
		Error     any    `json:"error"`
		RequestID string `json:"request_id"`
		Type      string `json:"type"`
	}
)

// open block kinds.
const (
	none = iota
	text
	toolUse
)

var emptyInput = json.RawMessage("{}")

// Stream is one Messages event stream. Its methods may be called from two
// goroutines (the turn's and the ping timer's); each event is whole.
type Stream struct {
	mu         sync.Mutex
	life       sse.Life
	closed     bool   // Close: nothing more is written, not even a ping
	startInput int64  // the input count message_start reported
	blocks     int    // the blocks started
	open       int    // the kind of the open block (blocks-1), none when none
	input      []byte // the open tool_use block's input so far
	toolUses   int
}

// New returns a stream written through w.
func New(w *sse.Writer) *Stream { return &Stream{life: sse.Life{W: w}} }

// Start sends the headers and message_start (id, model, the input count);
// once, first.
func (s *Stream) Start(id, model string, inputTokens int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.life.Open("message_start"); err != nil {
		return err
	}
	s.startInput = inputTokens
	return s.life.W.Event("message_start", startEvent{Type: "message_start", Message: Message{ID: id, Type: "message", Role: "assistant",
		Model: model, Content: []json.RawMessage{}, Usage: Usage{InputTokens: inputTokens}}})
}

// Started says whether the headers went.
func (s *Stream) Started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.life.Opened()
}

// Text holds t as a text_delta, in the open text block or in a new one
// (the open tool_use block, if any, stopped first); "" holds nothing.
func (s *Stream) Text(t string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.life.Step("content_block_delta"); err != nil || t == "" {
		return err
	}
	if s.open != text {
		if err := s.startBlock(text, TextBlock{Type: "text"}); err != nil {
			return err
		}
	}
	return s.life.W.Event("content_block_delta", blockDeltaEvent{Delta: textDelta{Text: t, Type: "text_delta"}, Index: s.blocks - 1, Type: "content_block_delta"})
}

// ToolUse stops the open block and starts a tool_use block (id, name) with
// input {}; its input follows through Input.
func (s *Stream) ToolUse(id, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.life.Step("content_block_start"); err != nil {
		return err
	}
	if id == "" || name == "" {
		return s.life.Refuse("a tool_use block without an id or a name")
	}
	s.toolUses++
	return s.startBlock(toolUse, ToolUseBlock{Type: "tool_use", ID: id, Name: name, Input: emptyInput})
}

// Input holds a piece of the open tool_use block's input as an
// input_json_delta; refused when no tool_use block is open.
func (s *Stream) Input(partial string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.life.Step("input_json_delta"); err != nil {
		return err
	}
	if s.open != toolUse {
		return s.life.Refuse("input_json_delta outside a tool_use block")
	}
	return s.addInput(partial)
}

func (s *Stream) addInput(partial string) error {
	s.input = append(s.input, partial...)
	return s.life.W.Event("content_block_delta", blockDeltaEvent{Delta: inputDelta{PartialJSON: partial, Type: "input_json_delta"}, Index: s.blocks - 1, Type: "content_block_delta"})
}

// isObject says whether b is one JSON object.
func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

func (s *Stream) startBlock(kind int, block any) error {
	if err := s.stopBlock(); err != nil {
		return err
	}
	s.open, s.input = kind, s.input[:0]
	s.blocks++
	return s.life.W.Event("content_block_start", blockStartEvent{ContentBlock: block, Index: s.blocks - 1, Type: "content_block_start"})
}

// stopBlock stops the open block; a tool_use block that got no input gets
// {} first (the SDKs build a tool_use's input from its deltas alone), and
// one whose input is not a JSON object is refused.
func (s *Stream) stopBlock() error {
	if s.open == none {
		return nil
	}
	if s.open == toolUse && len(s.input) == 0 {
		if err := s.addInput("{}"); err != nil {
			return err
		}
	}
	if s.open == toolUse && !isObject(s.input) {
		return s.life.Refuse("a tool_use block's input is not a JSON object")
	}
	s.open = none
	return s.life.W.Event("content_block_stop", blockStopEvent{Index: s.blocks - 1, Type: "content_block_stop"})
}

// Stop ends the stream after its proven end: the open block stopped,
// message_delta (its stop reason, the stop sequence that cut the text or
// nil, usage) and message_stop, written at once. The stop reason is tool_use
// whenever a tool_use block was shown (a stop sequence that cut later text
// is then not reported: the client must still answer the call), else that
// of StopReason. An end_turn without a content block has nothing proven:
// refused. message_delta's
// usage is cumulative (the SDKs overwrite with it), so an input count below
// the one message_start gave is left out, and message_start's stands.
func (s *Stream) Stop(seq *string, u Usage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.life.Step("message_delta"); err != nil {
		return err
	}
	if s.toolUses > 0 {
		seq = nil
	}
	if s.blocks == 0 && seq == nil {
		return s.life.Refuse("an end_turn without a content block")
	}
	if err := s.stopBlock(); err != nil {
		return err
	}
	_ = s.life.Ending("message_stop")
	du := deltaUsage{OutputTokens: u.OutputTokens}
	if u.InputTokens >= s.startInput {
		du.InputTokens, du.CacheCreationInputTokens, du.CacheReadInputTokens = &u.InputTokens, &u.CacheCreationInputTokens, &u.CacheReadInputTokens
	}
	if err := s.life.W.Event("message_delta", messageDeltaEvent{Delta: stopDelta{StopReason: StopReason(seq, s.toolUses), StopSequence: seq},
		Type: "message_delta", Usage: du}); err != nil {
		return err
	}
	if err := s.life.W.Event("message_stop", typeOnly{Type: "message_stop"}); err != nil {
		return err
	}
	return s.life.End()
}

// Fail ends a started stream with one event: error (the API's error object
// and the request id), whatever block was open.
func (s *Stream) Fail(errObj any, requestID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.life.Fail("error", "error", errorEvent{Error: errObj, RequestID: requestID, Type: "error"})
}

// Ping writes event: ping at once, with what is held, on a stream that has
// started and not ended; otherwise nothing. It says whether pings should
// go on: not once the stream is closed. A failed write is the next event's
// error.
func (s *Stream) Ping() (more bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.life.Step("ping") == nil && s.life.W.Event("ping", typeOnly{Type: "ping"}) == nil {
		_ = s.life.W.Flush()
	}
	return true
}

// Flush writes what is held (the turn is about to wait).
func (s *Stream) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return s.life.W.Flush()
}

// Close ends all writing (the handler returns): a later ping or flush
// writes nothing.
func (s *Stream) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
