// Package chatsse is the emitter of the OpenAI chat completions stream
// (docs/API.md): data-only events, a role chunk first, content and
// tool-call chunks, one finish chunk whose reason agrees with the calls
// shown, with stream_options.include_usage one usage chunk, and [DONE] only
// after that proven end. After the open a failure is one error event and the
// end: no finish, no [DONE].
package chatsse

import (
	"encoding/json"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
)

// Finish reasons the stream can show.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
)

// Usage is the OpenAI usage object. Only counts the upstream reported (or
// the gateway estimated) are present; a count it did not report is absent,
// never 0.
type Usage struct {
	PromptTokens     *int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64 `json:"completion_tokens,omitempty"`
	TotalTokens      *int64 `json:"total_tokens,omitempty"`
}

// Meta is what every chunk repeats.
type Meta struct {
	ID      string
	Created int64
	Model   string
	// IncludeUsage: every chunk carries "usage":null, and one last chunk
	// with "choices":[] the usage object (or null when there is none).
	IncludeUsage bool
}

// chunk is one chat.completion.chunk event.
type chunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   json.RawMessage `json:"usage,omitempty"` // absent, null, or the usage object
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
}

type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

var (
	jsonNull = json.RawMessage("null")
	noChoice = []chunkChoice{}
)

// Stream is one chat completions stream.
type Stream struct {
	life  sse.Life
	c     chunk
	usage bool
	calls int              // the tool calls opened: 0, 1, … in order
	call  [1]toolCallDelta // the one call of a tool call chunk, reused
}

// New returns the stream of meta written through w.
func New(w *sse.Writer, meta Meta) *Stream {
	s := &Stream{life: sse.Life{W: w}, usage: meta.IncludeUsage}
	s.c = chunk{ID: meta.ID, Object: "chat.completion.chunk", Created: meta.Created, Model: meta.Model, Choices: make([]chunkChoice, 1)}
	if meta.IncludeUsage {
		s.c.Usage = jsonNull
	}
	return s
}

// Open sends the headers and holds the role chunk; once, first.
func (s *Stream) Open() error {
	if err := s.life.Open("the role chunk"); err != nil {
		return err
	}
	empty := ""
	return s.hold(delta{Role: "assistant", Content: &empty}, nil)
}

// Opened says whether the headers went.
func (s *Stream) Opened() bool { return s.life.Opened() }

func (s *Stream) hold(d delta, finish *string) error {
	s.c.Choices[0] = chunkChoice{Delta: d, FinishReason: finish}
	return s.life.W.Event("", &s.c)
}

// Text holds a content chunk.
func (s *Stream) Text(t string) error {
	if err := s.life.Step("a content chunk"); err != nil {
		return err
	}
	return s.hold(delta{Content: &t}, nil)
}

// ToolCall holds a fragment of tool call index: the first fragment of a
// call opens the next index (0, 1, …) and carries its id and name; the
// others continue an open call with arguments only.
func (s *Stream) ToolCall(index int, id, name, arguments string) error {
	if err := s.life.Step("a tool call chunk"); err != nil {
		return err
	}
	d := toolCallDelta{Index: index, Function: functionDelta{Arguments: arguments}}
	switch {
	case index == s.calls && id != "" && name != "":
		s.calls++
		d.ID, d.Type, d.Function.Name = id, "function", name
	case index >= 0 && index < s.calls && id == "" && name == "":
	default:
		return s.life.Refuse("tool call %d (id %q) out of order: %d calls open", index, id, s.calls)
	}
	s.call[0] = d
	return s.hold(delta{ToolCalls: s.call[:]}, nil)
}

// Finish ends the stream after its proven end: the finish chunk, the usage
// chunk when asked for (usage nil is null), and [DONE], written at once.
// The reason must agree with the calls shown: tool_calls when any was,
// stop otherwise.
func (s *Stream) Finish(reason string, usage *Usage) error {
	if err := s.life.Step("the finish chunk"); err != nil {
		return err
	}
	if (reason == FinishToolCalls) != (s.calls > 0) || (reason != FinishToolCalls && reason != FinishStop) {
		return s.life.Refuse("finish %q after %d tool calls", reason, s.calls)
	}
	u := jsonNull
	if usage != nil {
		b, err := json.Marshal(usage)
		if err != nil {
			return err
		}
		u = b
	}
	_ = s.life.Ending("the finish chunk") // Step allowed it
	if err := s.hold(delta{}, &reason); err != nil {
		return err
	}
	if s.usage {
		s.c.Choices = noChoice
		s.c.Usage = u
		if err := s.life.W.Event("", &s.c); err != nil {
			return err
		}
	}
	if err := s.life.W.Data("[DONE]"); err != nil {
		return err
	}
	return s.life.End()
}

// Fail ends an open stream with one error event (body is the API's error
// object), after any held events: no finish, no [DONE].
func (s *Stream) Fail(body any) error { return s.life.Fail("the error event", "", body) }

// Flush writes what is held (the turn is about to wait).
func (s *Stream) Flush() error { return s.life.W.Flush() }
