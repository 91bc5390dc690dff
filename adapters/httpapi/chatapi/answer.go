package chatapi

// This file is the answer of POST /v1/chat/completions: a chat completion
// as JSON or as SSE chunks (docs/API.md); its decoding is decode.go.

import (
	"context"
	"net/http"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/chatsse"
	"github.com/pmgate/pmgate/domain/chat"
)

// Env is what the answer needs from the transport for one request.
type Env struct {
	Now          time.Time // when the answer begins: the completion's created time
	EstimatesOff bool      // no usage estimates where the upstream reported no counts
	// Fail is a failure after the stream's headers as the body of the one
	// error event (the OpenAI error shape).
	Fail func(ctx context.Context, err error) any
}

// Answer renders one turn (tr) of req as a chat completion, JSON or SSE. A
// failure before anything was written is returned, for the transport to
// write in the route's shape; a stream that began reports its failure inside
// the stream (env.Fail) and returns it, for the transport to note.
func Answer(w http.ResponseWriter, ctx context.Context, req chat.Request, tr *answer.Reader, env Env) error {
	o := output{id: "chatcmpl-" + answer.RandText(), created: env.Now.Unix(), model: req.Model, includeUsage: req.IncludeUsage, req: req}
	if req.Stream {
		return stream(w, ctx, o, tr, env)
	}
	return complete(w, ctx, o, tr, env)
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

func complete(w http.ResponseWriter, ctx context.Context, o output, tr *answer.Reader, env Env) error {
	all, err := answer.Collect(ctx, tr)
	if err != nil {
		return err
	}
	calls := make([]toolCallJSON, len(all.Calls))
	for i, c := range all.Calls {
		calls[i] = toolCallJSON{ID: c.ID, Type: "function", Function: functionJSON{Name: c.Name, Arguments: c.Arguments}}
	}
	if len(calls) == 0 {
		calls = nil
	}
	text := all.Text
	msg := responseMessage{Role: "assistant", ToolCalls: calls}
	if text != "" || len(calls) == 0 {
		msg.Content = &text
	}
	u := tr.Usage(o.req, env.EstimatesOff, w.Header())
	return answer.WriteValue(w, completion{
		ID: o.id, Object: "chat.completion", Created: o.created, Model: o.model,
		Choices: []completionChoice{{Index: 0, Message: msg, FinishReason: string(tr.Finish)}},
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
func stream(w http.ResponseWriter, ctx context.Context, o output, tr *answer.Reader, env Env) error {
	var header func(http.Header) // the usage header goes only with the usage chunk
	if o.includeUsage {
		header = answer.StreamUsageHeader(env.EstimatesOff)
	}
	sw := sse.New(w, header)
	return answer.Drive(ctx, tr, &chatStream{env: env, o: o,
		cs: chatsse.New(sw, chatsse.Meta{ID: o.id, Created: o.created, Model: o.model, IncludeUsage: o.includeUsage})})
}

// chatStream is a turn rendered through the chat completions emitter.
type chatStream struct {
	env Env
	o   output
	cs  *chatsse.Stream
}

func (c *chatStream) Opened() bool { return c.cs.Opened() }

// open: the headers and the role chunk go with the first delta, in one write.
func (c *chatStream) Open() error { return c.cs.Open() }

func (c *chatStream) Step(st answer.Step) error {
	if st.Text != "" {
		if err := c.cs.Text(st.Text); err != nil {
			return err
		}
	}
	if tc := st.Call; tc != nil {
		id, name := "", ""
		if st.First {
			id, name = tc.ID, tc.Name
		}
		return c.cs.ToolCall(tc.Index, id, name, tc.Arguments)
	}
	return nil
}

// finish: the end (the finish chunk, the usage chunk, [DONE]) is known at
// once, after the proven end: one write.
func (c *chatStream) Finish(ctx context.Context, tr *answer.Reader) error {
	if !c.cs.Opened() {
		if err := c.cs.Open(); err != nil {
			return err
		}
	}
	var u *chatsse.Usage
	if c.o.includeUsage {
		u = usageOf(tr.Usage(c.o.req, c.env.EstimatesOff, nil))
	}
	return c.cs.Finish(string(tr.Finish), u)
}

func (c *chatStream) Fail(ctx context.Context, err error) error {
	return c.cs.Fail(c.env.Fail(ctx, err))
}

func (c *chatStream) Flush() error { return c.cs.Flush() }
