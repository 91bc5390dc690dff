// Package respsse is the emitter of the OpenAI Responses event stream:
// named events, each with its sequence number (0, 1, … in the order
// written); response.created and response.in_progress first; output items
// added, their content, then done, one item at a time, at output indexes
// 0, 1, … in order; then response.completed, or after the open at any point
// response.failed, and the end.
//
// Members of every event are in the order the stream had when its events
// were encoded from maps (sorted by name), so the bytes are the same.
package respsse

import (
	"encoding/json"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
)

// Output items and their parts.
type MessageItem struct {
	Type    string     `json:"type"`
	ID      string     `json:"id"`
	Status  string     `json:"status"`
	Role    string     `json:"role"`
	Content []TextPart `json:"content"`
}

type TextPart struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
}

type FunctionCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

type CustomCallItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Input  string `json:"input"`
	Status string `json:"status,omitempty"`
}

// Message is an assistant message item with one output_text part.
func Message(id, text, status string) MessageItem {
	return MessageItem{Type: "message", ID: id, Status: status, Role: "assistant",
		Content: []TextPart{{Type: "output_text", Text: text, Annotations: []struct{}{}}}}
}

// Call is one tool call as a whole: a function call (Custom false: its
// arguments) or a custom tool call (its input).
type Call struct {
	ItemID, CallID, Name, Namespace string
	Custom                          bool
	Arguments                       string // a function call's arguments
	Input                           string // a custom tool call's input
}

func (c Call) item(status string, whole bool) any {
	if c.Custom {
		in := ""
		if whole {
			in = c.Input
		}
		return CustomCallItem{Type: "custom_tool_call", ID: c.ItemID, CallID: c.CallID, Name: c.Name, Input: in, Status: status}
	}
	args := ""
	if whole {
		args = c.Arguments
	}
	return FunctionCallItem{Type: "function_call", ID: c.ItemID, CallID: c.CallID, Name: c.Name, Namespace: c.Namespace, Arguments: args, Status: status}
}

// Item is c's completed output item, as the response object lists it.
func (c Call) Item() json.RawMessage { return mustJSON(c.item("completed", true)) }

// The events, members sorted by name.
type (
	responseEvent struct {
		Response any    `json:"response"`
		Seq      int    `json:"sequence_number"`
		Type     string `json:"type"`
	}
	itemEvent struct {
		Item        any    `json:"item"`
		OutputIndex int    `json:"output_index"`
		Seq         int    `json:"sequence_number"`
		Type        string `json:"type"`
	}
	partEvent struct {
		ContentIndex int      `json:"content_index"`
		ItemID       string   `json:"item_id"`
		OutputIndex  int      `json:"output_index"`
		Part         TextPart `json:"part"`
		Seq          int      `json:"sequence_number"`
		Type         string   `json:"type"`
	}
	textDeltaEvent struct {
		ContentIndex int        `json:"content_index"`
		Delta        string     `json:"delta"`
		ItemID       string     `json:"item_id"`
		Logprobs     []struct{} `json:"logprobs"`
		OutputIndex  int        `json:"output_index"`
		Seq          int        `json:"sequence_number"`
		Type         string     `json:"type"`
	}
	textDoneEvent struct {
		ContentIndex int        `json:"content_index"`
		ItemID       string     `json:"item_id"`
		Logprobs     []struct{} `json:"logprobs"`
		OutputIndex  int        `json:"output_index"`
		Seq          int        `json:"sequence_number"`
		Text         string     `json:"text"`
		Type         string     `json:"type"`
	}
	argsEvent struct {
		Arguments   *string `json:"arguments,omitempty"`
		Delta       *string `json:"delta,omitempty"`
		Input       *string `json:"input,omitempty"`
		ItemID      string  `json:"item_id"`
		OutputIndex int     `json:"output_index"`
		Seq         int     `json:"sequence_number"`
		Type        string  `json:"type"`
	}
)

var noLogprobs = []struct{}{}

// Stream is one Responses event stream.
type Stream struct {
	life   sse.Life
	seq    int
	output []json.RawMessage // the items added, in output order (an open message in progress)
	msgID  string            // the open message item, "" when none
	msgIdx int               // its output index
	text   []byte            // its text so far
}

// New returns a stream written through w.
func New(w *sse.Writer) *Stream { return &Stream{life: sse.Life{W: w}} }

func (s *Stream) event(typ string, v any) error { return s.life.W.Event(typ, v) }

func (s *Stream) next() int { s.seq++; return s.seq - 1 }

// Open sends the headers, response.created and response.in_progress, both
// with response (the response object in progress); once, first.
func (s *Stream) Open(response any) error {
	if err := s.life.Open("response.created"); err != nil {
		return err
	}
	for _, typ := range []string{"response.created", "response.in_progress"} {
		if err := s.event(typ, responseEvent{Response: response, Seq: s.next(), Type: typ}); err != nil {
			return err
		}
	}
	return nil
}

// Opened says whether the headers went.
func (s *Stream) Opened() bool { return s.life.Opened() }

// OpenMessage adds a message item (id) in progress and its output_text
// part; refused while another message is open.
func (s *Stream) OpenMessage(id string) error {
	if err := s.life.Step("response.output_item.added"); err != nil {
		return err
	}
	if s.msgID != "" {
		return s.life.Refuse("message %s opened inside message %s", id, s.msgID)
	}
	idx := len(s.output)
	s.msgID, s.msgIdx, s.text = id, idx, s.text[:0]
	item := mustJSON(MessageItem{Type: "message", ID: id, Status: "in_progress", Role: "assistant", Content: []TextPart{}})
	s.output = append(s.output, item)
	if err := s.event("response.output_item.added", itemEvent{Item: item, OutputIndex: idx, Seq: s.next(), Type: "response.output_item.added"}); err != nil {
		return err
	}
	return s.event("response.content_part.added", partEvent{ItemID: id, OutputIndex: idx,
		Part: TextPart{Type: "output_text", Annotations: noLogprobs}, Seq: s.next(), Type: "response.content_part.added"})
}

// InMessage says whether a message item is open.
func (s *Stream) InMessage() bool { return s.msgID != "" }

// Text adds t to the open message; refused when none is.
func (s *Stream) Text(t string) error {
	if err := s.life.Step("response.output_text.delta"); err != nil {
		return err
	}
	if s.msgID == "" {
		return s.life.Refuse("output text outside a message item")
	}
	s.text = append(s.text, t...)
	return s.event("response.output_text.delta", textDeltaEvent{Delta: t, ItemID: s.msgID, Logprobs: noLogprobs,
		OutputIndex: s.msgIdx, Seq: s.next(), Type: "response.output_text.delta"})
}

// CloseMessage ends the open message item (its text done, its part done,
// the item done); nothing when none is open.
func (s *Stream) CloseMessage() error {
	if err := s.life.Step("response.output_item.done"); err != nil || s.msgID == "" {
		return err
	}
	id, idx, t := s.msgID, s.msgIdx, string(s.text)
	s.msgID = ""
	item := mustJSON(Message(id, t, "completed"))
	s.output[idx] = item
	if err := s.event("response.output_text.done", textDoneEvent{ItemID: id, Logprobs: noLogprobs, OutputIndex: idx, Seq: s.next(),
		Text: t, Type: "response.output_text.done"}); err != nil {
		return err
	}
	if err := s.event("response.content_part.done", partEvent{ItemID: id, OutputIndex: idx,
		Part: TextPart{Type: "output_text", Text: t, Annotations: noLogprobs}, Seq: s.next(), Type: "response.content_part.done"}); err != nil {
		return err
	}
	return s.event("response.output_item.done", itemEvent{Item: item, OutputIndex: idx, Seq: s.next(), Type: "response.output_item.done"})
}

// ToolCall writes one tool call as a whole: added, its arguments (or a
// custom tool's input) in one delta, done; refused while a message is open.
func (s *Stream) ToolCall(c Call) error {
	if err := s.life.Step("response.output_item.added"); err != nil {
		return err
	}
	if s.msgID != "" {
		return s.life.Refuse("tool call %s inside message %s", c.ItemID, s.msgID)
	}
	idx := len(s.output)
	done := c.Item()
	s.output = append(s.output, done)
	if err := s.event("response.output_item.added", itemEvent{Item: c.item("in_progress", false), OutputIndex: idx, Seq: s.next(), Type: "response.output_item.added"}); err != nil {
		return err
	}
	d, e := argsEvent{ItemID: c.ItemID, OutputIndex: idx}, argsEvent{ItemID: c.ItemID, OutputIndex: idx}
	if c.Custom {
		d.Delta, d.Type = &c.Input, "response.custom_tool_call_input.delta"
		e.Input, e.Type = &c.Input, "response.custom_tool_call_input.done"
	} else {
		d.Delta, d.Type = &c.Arguments, "response.function_call_arguments.delta"
		e.Arguments, e.Type = &c.Arguments, "response.function_call_arguments.done"
	}
	d.Seq = s.next()
	if err := s.event(d.Type, d); err != nil {
		return err
	}
	e.Seq = s.next()
	if err := s.event(e.Type, e); err != nil {
		return err
	}
	return s.event("response.output_item.done", itemEvent{Item: done, OutputIndex: idx, Seq: s.next(), Type: "response.output_item.done"})
}

// Output is the items added so far, in output order (a failed or completed
// response object lists them; an open message as it was added).
func (s *Stream) Output() []json.RawMessage { return s.output }

// Complete ends the stream after its proven end with response.completed
// (response: the completed object); refused while a message is open.
func (s *Stream) Complete(response any) error {
	if err := s.life.Step("response.completed"); err != nil {
		return err
	}
	if s.msgID != "" {
		return s.life.Refuse("response.completed inside message %s", s.msgID)
	}
	_ = s.life.Ending("response.completed")
	if err := s.event("response.completed", responseEvent{Response: response, Seq: s.next(), Type: "response.completed"}); err != nil {
		return err
	}
	return s.life.End()
}

// Fail ends an open stream with response.failed (response: the failed
// object), whatever was open.
func (s *Stream) Fail(response any) error {
	if err := s.life.Failing("response.failed"); err != nil {
		return err
	}
	if err := s.event("response.failed", responseEvent{Response: response, Seq: s.next(), Type: "response.failed"}); err != nil {
		return err
	}
	return s.life.End()
}

// Flush writes what is held (the turn is about to wait).
func (s *Stream) Flush() error { return s.life.W.Flush() }

// mustJSON encodes values that cannot fail to encode (plain strings and
// structs of them), as the stream's writer does: no HTML escaping.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
