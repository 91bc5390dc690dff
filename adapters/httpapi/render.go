package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// randText is a random completion id suffix (26 base32 characters).
func randText() string { return rand.Text() }

// output is what one response needs besides the deltas.
type output struct {
	id           string
	created      int64
	model        string // the requested public id
	includeUsage bool
	req          chat.Request // what the usage estimate is computed from
}

// step is one piece of client-visible output: text, a tool-call fragment, or
// both. first marks the first fragment of a call (the one with id and name).
type step struct {
	text  string
	call  *app.ToolCallDelta
	first bool
}

// turnReader reads a turn and enforces the app.Turn contract, so that the
// renderers can never show an unproven finish: a finish is reported only
// after the turn's io.EOF, tool-call indexes are dense (0, 1, …) with id and
// name on each call's first fragment, and the finish agrees with the calls
// (tool_calls when any call was emitted, stop otherwise). A violation is an
// internal error.
type turnReader struct {
	turn  app.Turn
	calls int
	// outBytes counts the output received: text, tool names and arguments
	// (the output side of a usage estimate).
	outBytes int
	finish   app.FinishReason
	usage    *chat.Usage
	onFirst  func() // called once, at the first text or tool-call delta; may be nil
}

// next returns the next step, or io.EOF once the turn ended with a proven
// finish (then tr.finish and tr.usage are set).
func (tr *turnReader) next(ctx context.Context) (step, error) {
	for {
		d, err := tr.turn.Next(ctx)
		if errors.Is(err, io.EOF) {
			switch {
			case tr.finish == "":
				return step{}, errors.AssertionFailedf("httpapi: turn ended without a finish")
			case (tr.finish == app.FinishToolCalls) != (tr.calls > 0):
				return step{}, errors.AssertionFailedf("httpapi: finish %s disagrees with %d tool calls", redact.Safe(string(tr.finish)), redact.Safe(tr.calls))
			}
			return step{}, io.EOF
		}
		if err != nil {
			return step{}, err
		}
		if tr.finish != "" {
			return step{}, errors.AssertionFailedf("httpapi: delta after the finish")
		}
		st := step{text: d.Text}
		if c := d.ToolCall; c != nil {
			switch {
			case c.Index == tr.calls && c.ID != "" && c.Name != "":
				tr.calls++
				st.first = true
			case c.Index >= 0 && c.Index < tr.calls:
			default:
				return step{}, errors.AssertionFailedf("httpapi: tool call delta out of order")
			}
			st.call = c
			tr.outBytes += len(c.Name) + len(c.Arguments)
		}
		tr.outBytes += len(d.Text)
		if d.Finish != "" {
			if d.Finish != app.FinishStop && d.Finish != app.FinishToolCalls {
				return step{}, errors.AssertionFailedf("httpapi: unknown finish reason")
			}
			tr.finish = d.Finish
			if d.Usage != nil && d.Usage.Reported() {
				tr.usage = d.Usage
			}
		}
		if st.text != "" || st.call != nil {
			if tr.onFirst != nil {
				tr.onFirst()
				tr.onFirst = nil
			}
			return st, nil
		}
	}
}

// usageJSON is the OpenAI usage object. Only counts the upstream reported
// are present; a count it did not report is absent, never 0.
type usageJSON struct {
	PromptTokens     *int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64 `json:"completion_tokens,omitempty"`
	TotalTokens      *int64 `json:"total_tokens,omitempty"`
}

func usageOf(u *chat.Usage) *usageJSON {
	if u == nil || !u.Reported() {
		return nil
	}
	return &usageJSON{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// completion is the JSON (non-streaming) response.
type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usageJSON         `json:"usage"`
}

type completionChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     *struct{}       `json:"logprobs"`
}

type responseMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []toolCallJSON `json:"tool_calls,omitempty"`
	Refusal   *string        `json:"refusal"`
}

type toolCallJSON struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionJSON `json:"function"`
}

type functionJSON struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// complete renders a whole turn as one chat.completion. Every delta is read
// until io.EOF first: any error before that is answered as an error, with no
// partial content.
//
// content is the concatenated text; it is null only when the turn produced
// tool calls and no text. usage holds the upstream's token counts and is
// null when the upstream reported none: the gateway never invents counts.
// collected is a whole turn read to its proven end: the text and each tool
// call (id, name, argument string), in order.
type collected struct {
	text  string
	calls []app.ToolCallDelta // ID, Name and the whole Arguments of each call
}

// collect reads a turn to its proven end; any failure before it is returned
// as it is, and nothing may be shown.
func collect(ctx context.Context, tr *turnReader) (collected, error) {
	var text strings.Builder
	var calls []app.ToolCallDelta
	var args []*strings.Builder
	for {
		st, err := tr.next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return collected{}, err
		}
		text.WriteString(st.text)
		if c := st.call; c != nil {
			if st.first {
				calls = append(calls, app.ToolCallDelta{Index: c.Index, ID: c.ID, Name: c.Name})
				args = append(args, new(strings.Builder))
			}
			args[c.Index].WriteString(c.Arguments)
		}
	}
	for i := range calls {
		calls[i].Arguments = args[i].String()
	}
	return collected{text: text.String(), calls: calls}, nil
}

func (s *server) complete(w http.ResponseWriter, r *http.Request, o output, tr *turnReader) {
	all, err := collect(r.Context(), tr)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	calls := make([]toolCallJSON, len(all.calls))
	for i, c := range all.calls {
		calls[i] = toolCallJSON{ID: c.ID, Type: "function", Function: functionJSON{Name: c.Name, Arguments: c.Arguments}}
	}
	if len(calls) == 0 {
		calls = nil
	}
	text := all.text
	msg := responseMessage{Role: "assistant", ToolCalls: calls}
	if text != "" || len(calls) == 0 {
		msg.Content = &text
	}
	u, estimated := s.usageOfTurn(o.req, tr)
	s.markUsage(r.Context(), w.Header(), u, estimated)
	s.writeValue(w, r, completion{
		ID: o.id, Object: "chat.completion", Created: o.created, Model: o.model,
		Choices: []completionChoice{{Index: 0, Message: msg, FinishReason: string(tr.finish)}},
		Usage:   usageOf(u),
	}, "encode completion")
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

// sse writes events: "data: <one-line JSON>\n\n", flushed one by one.
type sse struct {
	w   io.Writer
	rc  *http.ResponseController
	buf bytes.Buffer
	enc *json.Encoder
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}

func (s *sse) event(v any) error {
	s.buf.Reset()
	s.buf.WriteString("data: ")
	if err := s.enc.Encode(v); err != nil { // one line, ends in \n
		return err
	}
	s.buf.WriteByte('\n')
	return s.flush()
}

func (s *sse) done() error {
	s.buf.Reset()
	s.buf.WriteString("data: [DONE]\n\n")
	return s.flush()
}

func (s *sse) flush() error {
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return err
	}
	return s.rc.Flush()
}

// stream renders a turn as SSE (the streaming rules of docs/API.md). The headers wait
// for the first delta, so an error before any output is a plain JSON error
// with its own status. After the headers, a failure is one error event and
// the end of the response: no finish_reason, no [DONE].
//
// With stream_options.include_usage, every chunk carries "usage":null and one
// last chunk with "choices":[] carries the usage object, or null when the
// upstream reported no counts (the official SDKs accept a null usage).
func (s *server) stream(w http.ResponseWriter, r *http.Request, o output, tr *turnReader) {
	ctx := r.Context()
	var out *sse
	c := chunk{ID: o.id, Object: "chat.completion.chunk", Created: o.created, Model: o.model, Choices: make([]chunkChoice, 1)}
	if o.includeUsage {
		c.Usage = jsonNull
	}
	emit := func(d delta, finish *string) bool {
		c.Choices[0] = chunkChoice{Delta: d, FinishReason: finish}
		if err := out.event(&c); err != nil {
			infoFrom(ctx).code = errs.ClientCancelled
			return false
		}
		return true
	}
	start := func() bool {
		if o.includeUsage {
			s.markStreamUsage(w.Header())
		}
		out = newSSE(w)
		empty := ""
		return emit(delta{Role: "assistant", Content: &empty}, nil)
	}
	calls := make([]toolCallDelta, 1)
	for {
		st, err := tr.next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			if out == nil {
				s.writeError(w, r, err)
				return
			}
			_ = out.event(s.streamError(ctx, err))
			return
		}
		if out == nil && !start() {
			return
		}
		if st.text != "" {
			text := st.text
			if !emit(delta{Content: &text}, nil) {
				return
			}
		}
		if tc := st.call; tc != nil {
			calls[0] = toolCallDelta{Index: tc.Index, Function: functionDelta{Arguments: tc.Arguments}}
			if st.first {
				calls[0].ID, calls[0].Type, calls[0].Function.Name = tc.ID, "function", tc.Name
			}
			if !emit(delta{ToolCalls: calls}, nil) {
				return
			}
		}
	}
	if out == nil && !start() {
		return
	}
	finish := string(tr.finish)
	if !emit(delta{}, &finish) {
		return
	}
	if o.includeUsage {
		c.Choices = noChoice
		c.Usage = jsonNull
		if u := usageOf(s.streamUsage(ctx, o.req, tr)); u != nil {
			b, err := json.Marshal(u)
			if err != nil {
				return
			}
			c.Usage = b
		}
		if out.event(&c) != nil {
			infoFrom(ctx).code = errs.ClientCancelled
			return
		}
	}
	if out.done() != nil {
		infoFrom(ctx).code = errs.ClientCancelled
	}
}
