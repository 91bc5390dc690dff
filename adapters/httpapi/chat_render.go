package httpapi

// This file is POST /v1/chat/completions: its handler and its rendering, a
// chat completion as JSON or as SSE chunks (docs/API.md); its decoding is
// chat_decode.go.

import (
	"context"
	"io"
	"net/http"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/chatsse"

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

// usageJSON is the OpenAI usage object (the stream's emitter owns it).
type usageJSON = chatsse.Usage

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

// stream renders a turn as SSE (the streaming rules of docs/API.md). The headers wait
// for the first delta, so an error before any output is a plain JSON error
// with its own status. After the headers, a failure is one error event and
// the end of the response: no finish_reason, no [DONE].
//
// With stream_options.include_usage, every chunk carries "usage":null and one
// last chunk with "choices":[] carries the usage object, or null when the
// upstream reported no counts (the official SDKs accept a null usage).
func (s *server) stream(w http.ResponseWriter, r *http.Request, o output, tr *turnReader) {
	sw := sse.New(w, func(h http.Header) {
		if o.includeUsage {
			s.markStreamUsage(h)
		}
	})
	cs := chatsse.New(sw, chatsse.Meta{ID: o.id, Created: o.created, Model: o.model, IncludeUsage: o.includeUsage})
	ctx := ports.WithBeforeWait(r.Context(), func() { _ = cs.Flush() })
	// emitted says whether the stream goes on after err, an emitter's: a
	// refusal (a bug) ends it with an error event, a failed write (the
	// client gone) ends it there.
	emitted := func(err error) bool {
		if err != nil {
			s.emitFailed(ctx, err, func(b errorBody) error { return cs.Fail(b) })
		}
		return err == nil
	}
	for {
		st, err := tr.next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			if !cs.Opened() {
				s.writeError(w, r, err)
				return
			}
			_ = cs.Fail(s.streamError(ctx, err))
			return
		}
		// The headers and the role chunk go with the first delta, in one write.
		if !cs.Opened() && !emitted(cs.Open()) {
			return
		}
		if st.text != "" && !emitted(cs.Text(st.text)) {
			return
		}
		if tc := st.call; tc != nil {
			id, name := "", ""
			if st.first {
				id, name = tc.ID, tc.Name
			}
			if !emitted(cs.ToolCall(tc.Index, id, name, tc.Arguments)) {
				return
			}
		}
	}
	if !cs.Opened() && !emitted(cs.Open()) {
		return
	}
	// The end (the finish chunk, the usage chunk, [DONE]) is known at once,
	// after the proven end: one write.
	var u *chatsse.Usage
	if o.includeUsage {
		u = usageOf(s.streamUsage(ctx, o.req, tr))
	}
	emitted(cs.Finish(string(tr.finish), u))
}

// emitFailed handles the error of a stream's emitter: a refusal of an
// ungrammatical event is an internal error, shown as the grammar's failure
// event (fail) when the stream can still take one; any other error is a
// failed write, the client gone.
func (s *server) emitFailed(ctx context.Context, err error, fail func(errorBody) error) {
	if errors.Is(err, sse.ErrUngrammatical) {
		_ = fail(s.streamError(ctx, err))
		return
	}
	infoFrom(ctx).code = errs.ClientCancelled
}
