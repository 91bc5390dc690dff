// Package gemsse is the emitter of the Gemini API's alt=sse stream
// (streamGenerateContent?alt=sse): data-only events, each one
// GenerateContentResponse. Text goes out as it arrives, one chunk per piece;
// function calls are held and go out whole, only in the last chunk, which
// alone carries finishReason and usageMetadata, and only after the turn's
// proven end. After the open a failure is one event holding the API's error
// object ({"error":{"code","message","status",…}}) and the same object again
// as a raw tail that is no event (Fail says why both), and the end: never a
// finishReason.
//
// Why the calls wait for the end: gemini-cli accepts a stream that ends
// without finishReason as a success when it has shown a function call (it
// checks the finish reason only of turns without one), so a call written
// before the proven end would turn a broken stream into a tool round the
// model never finished. Text alone without finishReason is an error to it
// ("Model stream ended without a finish reason").
package gemsse

import (
	"bytes"
	"encoding/json"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
)

// FinishStop is the one finish reason the gateway proves: the model ended
// its turn (with or without function calls, as the API reports both).
const FinishStop = "STOP"

// Response is a GenerateContentResponse: the JSON answer, and each event of
// the stream.
type Response struct {
	Candidates    []Candidate    `json:"candidates"`
	UsageMetadata *UsageMetadata `json:"usageMetadata,omitempty"`
	ModelVersion  string         `json:"modelVersion"`
	ResponseID    string         `json:"responseId"`
}

// Candidate is the one candidate of a response.
type Candidate struct {
	Content      Content `json:"content"`
	FinishReason string  `json:"finishReason,omitempty"`
	Index        int     `json:"index"`
}

// Content is the model's content.
type Content struct {
	Parts []Part `json:"parts"`
	Role  string `json:"role"`
}

// Part is a text part or a function call part.
type Part struct {
	Text         *string       `json:"text,omitempty"`
	FunctionCall *FunctionCall `json:"functionCall,omitempty"`
}

// FunctionCall is one whole function call: its public id, name and
// arguments object.
type FunctionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// UsageMetadata is the API's usage object; a count neither reported nor
// estimated is 0 (the API has no other way to say so).
type UsageMetadata struct {
	PromptTokenCount     int64 `json:"promptTokenCount"`
	CandidatesTokenCount int64 `json:"candidatesTokenCount"`
	TotalTokenCount      int64 `json:"totalTokenCount"`
}

// Meta is what every chunk repeats.
type Meta struct {
	ResponseID string
	Model      string
}

// Whole is the JSON answer of a finished turn: text (if any) then the
// calls, finishReason STOP. It refuses what Finish refuses.
func Whole(meta Meta, text string, calls []FunctionCall, usage UsageMetadata) (Response, error) {
	var parts []Part
	if text != "" {
		parts = append(parts, Part{Text: &text})
	}
	for i := range calls {
		if err := checkCall(calls[i]); err != nil {
			return Response{}, err
		}
		parts = append(parts, Part{FunctionCall: &calls[i]})
	}
	if parts == nil {
		return Response{}, sse.Refusef("a response with neither text nor a function call")
	}
	return Response{Candidates: []Candidate{{Content: Content{Parts: parts, Role: "model"}, FinishReason: FinishStop}},
		UsageMetadata: &usage, ModelVersion: meta.Model, ResponseID: meta.ResponseID}, nil
}

func checkCall(c FunctionCall) error {
	if c.ID == "" || c.Name == "" {
		return sse.Refusef("a function call without an id or a name")
	}
	if !isObject(c.Args) {
		return sse.Refusef("a function call whose args are not a JSON object")
	}
	return nil
}

// isObject says whether b is one JSON object.
func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// Stream is one alt=sse stream.
type Stream struct {
	life  sse.Life
	meta  Meta
	shown bool // a text part was written
}

// New returns the stream of meta written through w.
func New(w *sse.Writer, meta Meta) *Stream { return &Stream{life: sse.Life{W: w}, meta: meta} }

// Open sends the headers; once, first. No event goes with them.
func (s *Stream) Open() error { return s.life.Open("the stream's headers") }

// Opened says whether the headers went.
func (s *Stream) Opened() bool { return s.life.Opened() }

func (s *Stream) chunk(parts []Part, finish string, usage *UsageMetadata) Response {
	if parts == nil {
		parts = []Part{}
	}
	return Response{Candidates: []Candidate{{Content: Content{Parts: parts, Role: "model"}, FinishReason: finish}},
		UsageMetadata: usage, ModelVersion: s.meta.Model, ResponseID: s.meta.ResponseID}
}

// Text holds t as one chunk with one text part ("" holds nothing).
func (s *Stream) Text(t string) error {
	if err := s.life.Step("a text chunk"); err != nil || t == "" {
		return err
	}
	s.shown = true
	return s.life.W.Event("", s.chunk([]Part{{Text: &t}}, "", nil))
}

// Finish ends the stream after its proven end: one last chunk with the
// calls (each with an id, a name and an object of args), finishReason STOP
// and usageMetadata, written at once. A turn that showed neither text nor a
// call is refused: gemini-cli would read an empty STOP as a broken stream
// anyway, and the gateway proves nothing by it.
func (s *Stream) Finish(calls []FunctionCall, usage UsageMetadata) error {
	if err := s.life.Step("the last chunk"); err != nil {
		return err
	}
	if !s.shown && len(calls) == 0 {
		return s.life.Refuse("the last chunk of a stream that showed nothing")
	}
	parts := make([]Part, 0, len(calls))
	for i := range calls {
		if err := checkCall(calls[i]); err != nil {
			return s.life.Refuse("%s", err.Error())
		}
		parts = append(parts, Part{FunctionCall: &calls[i]})
	}
	_ = s.life.Ending("the last chunk") // Step allowed it
	if err := s.life.W.Event("", s.chunk(parts, FinishStop, &usage)); err != nil {
		return err
	}
	return s.life.End()
}

// Fail ends an open stream with the failure (body is the API's error
// object), after any held events, never a finishReason: first as an event,
// data: {"error":…}, which @google/genai (3.x) throws as an ApiError; then
// the same object as the body's last bytes, raw, with no "data: " and no
// blank line after it. The SDK gemini-cli bundles (google-genai 1.30)
// yields the event as an empty chunk, and would take the stream for a
// finished tool round; the raw tail is an error to it either way: read on
// its own it is an ApiError, read with the event before it "Incomplete JSON
// segment at the end". The event goes out (flushed) before the tail, which
// is the body's last write, so that the tail usually arrives as a read of
// its own and gemini-cli shows the gateway's message.
func (s *Stream) Fail(body any) error {
	if err := s.life.Failing("the error event"); err != nil {
		return err
	}
	if err := s.life.W.Event("", body); err != nil {
		return err
	}
	if err := s.life.W.Flush(); err != nil {
		return err
	}
	if err := s.life.W.Tail(body); err != nil {
		return err
	}
	return s.life.End()
}

// Flush writes what is held (the turn is about to wait).
func (s *Stream) Flush() error { return s.life.W.Flush() }
