package httpapi

// This file is POST /v1/chat/completions: its handler and its rendering, a
// chat completion as JSON or as SSE chunks (docs/API.md); its decoding is
// chat_decode.go.

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// handleChat serves POST /v1/chat/completions: one turn (serveTurn) of the
// request rendered as a chat completion, JSON or SSE.
func (s *server) handleChat() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveTurn(s, w, r, "messages", func(body []byte) (chat.Request, chat.Request, error) {
			req, err := s.decodeRequest(body, slotFrom(r.Context()).allowsModel)
			return req, req, err
		}, func(w http.ResponseWriter, r *http.Request, req chat.Request, tr *turnReader) {
			o := output{id: "chatcmpl-" + randText(), created: s.now().Unix(), model: req.Model, includeUsage: req.IncludeUsage, req: req}
			if req.Stream {
				s.stream(w, r, o, tr)
			} else {
				s.complete(w, r, o, tr)
			}
		})
	})
}

// output is what one response needs besides the deltas.
type output struct {
	id           string
	created      int64
	model        string // the requested public id
	includeUsage bool
	req          chat.Request // what the usage estimate is computed from
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

// stream renders a turn as SSE (the streaming rules of docs/API.md). The headers wait
// for the first delta, so an error before any output is a plain JSON error
// with its own status. After the headers, a failure is one error event and
// the end of the response: no finish_reason, no [DONE].
//
// With stream_options.include_usage, every chunk carries "usage":null and one
// last chunk with "choices":[] carries the usage object, or null when the
// upstream reported no counts (the official SDKs accept a null usage).
func (s *server) stream(w http.ResponseWriter, r *http.Request, o output, tr *turnReader) {
	var out *sse
	ctx := ports.WithBeforeWait(r.Context(), waitHook(&out))
	c := chunk{ID: o.id, Object: "chat.completion.chunk", Created: o.created, Model: o.model, Choices: make([]chunkChoice, 1)}
	if o.includeUsage {
		c.Usage = jsonNull
	}
	// emit holds a chunk for the next write: when the turn waits for the
	// upstream (waitHook), or at the end (an encoding failure, or a client
	// gone at the last write, is then the next call's).
	emit := func(d delta, finish *string) bool {
		c.Choices[0] = chunkChoice{Delta: d, FinishReason: finish}
		if out.hold(&c) != nil {
			infoFrom(ctx).code = errs.ClientCancelled
			return false
		}
		return true
	}
	// start sends the headers and the role chunk with the first delta, in
	// one write.
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
			_ = out.last(s.streamError(ctx, err))
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
	// The end (the finish chunk, the usage chunk, [DONE]) is known at once,
	// after the proven end: one write.
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
		if out.hold(&c) != nil {
			return
		}
	}
	if out.done() != nil {
		infoFrom(ctx).code = errs.ClientCancelled
	}
}
