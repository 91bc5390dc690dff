package gemapi

import (
	"context"
	"net/http"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/gemsse"
	"github.com/pmgate/pmgate/domain/chat"
)

// The Gemini API's methods, as paths name them and a Model object lists
// them.
const (
	Generate       = "generateContent"
	StreamGenerate = "streamGenerateContent"
	CountTokens    = "countTokens"
)

// Env is what an answer needs from the transport for one request.
type Env struct {
	// EstimatesOff says the usage estimates are off: only reported counts
	// are shown.
	EstimatesOff bool
	// Fail renders a failure in the route's error shape (the body of the
	// stream's error event). Only a stream calls it (after its headers); the
	// failure is returned to the transport either way.
	Fail func(ctx context.Context, err error) any
}

// Model is the API's Model object.
type Model struct {
	Name                       string   `json:"name"`
	BaseModelID                string   `json:"baseModelId"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

// ModelOf is the Model object of a configured model.
func ModelOf(id string) Model {
	return Model{Name: "models/" + id, BaseModelID: id, Version: "pmgate", DisplayName: id,
		SupportedGenerationMethods: []string{Generate, StreamGenerate, CountTokens}}
}

// TokenCount is the answer of countTokens.
type TokenCount struct {
	TotalTokens int64 `json:"totalTokens"`
}

// Count is the countTokens answer of a request: the gateway's input
// estimate (the formula of the usage estimates, which errs high), never 0.
func Count(gr Request) TokenCount { return TokenCount{TotalTokens: max(gr.estimate, 1)} }

// Answer renders a turn of gr: one GenerateContentResponse, or the alt=sse
// stream when gr asked for one.
func Answer(w http.ResponseWriter, ctx context.Context, gr *Request, tr *answer.Reader, env Env) error {
	meta := gemsse.Meta{ResponseID: answer.RandText(), Model: gr.Chat.Model}
	if gr.Chat.Stream {
		return streamGemini(w, ctx, gr, meta, tr, env)
	}
	return completeGemini(w, ctx, gr, meta, tr, env)
}

// geminiUsageOf is a shown usage as usageMetadata.
func geminiUsageOf(u *chat.Usage) gemsse.UsageMetadata {
	var m gemsse.UsageMetadata
	if u != nil {
		if u.PromptTokens != nil {
			m.PromptTokenCount = *u.PromptTokens
		}
		if u.CompletionTokens != nil {
			m.CandidatesTokenCount = *u.CompletionTokens
		}
		m.TotalTokenCount = m.PromptTokenCount + m.CandidatesTokenCount
		if u.TotalTokens != nil {
			m.TotalTokenCount = *u.TotalTokens
		}
	}
	return m
}

// geminiCalls are the collected calls as function calls (args "" is {}).
func geminiCalls(calls []chat.ToolCall) []gemsse.FunctionCall {
	out := make([]gemsse.FunctionCall, len(calls))
	for i, c := range calls {
		out[i] = gemsse.FunctionCall{ID: c.ID, Name: c.Name, Args: answer.ToolInput(c.Arguments)}
	}
	return out
}

// completeGemini collects the whole turn and writes one
// GenerateContentResponse; any failure before the proven end is a plain
// error with its status.
func completeGemini(w http.ResponseWriter, ctx context.Context, gr *Request, meta gemsse.Meta, tr *answer.Reader, env Env) error {
	all, err := answer.Collect(ctx, tr)
	if err != nil {
		return err
	}
	sc := answer.NewStopScanner(gr.stops)
	text := sc.Feed(all.Text) + sc.Flush()
	var calls []chat.ToolCall
	if sc.Matched == nil {
		for _, c := range all.Calls {
			calls = append(calls, chat.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
	}
	if text == "" && len(calls) == 0 {
		return answer.ErrNothingProven()
	}
	u := tr.Usage(gr.Chat, env.EstimatesOff, nil)
	resp, err := gemsse.Whole(meta, text, geminiCalls(calls), geminiUsageOf(u))
	if err != nil {
		return err
	}
	w.Header().Set(answer.UsageHeader, tr.Shown)
	return answer.WriteValue(w, resp, "encode response")
}

// streamGemini renders a turn as the alt=sse stream (answer.Drive): text as
// it arrives, the function calls and finishReason only after the proven
// end, a failure after the headers one error event.
func streamGemini(w http.ResponseWriter, ctx context.Context, gr *Request, meta gemsse.Meta, tr *answer.Reader, env Env) error {
	g := &gemTurnStream{env: env, req: gr, gs: gemsse.New(sse.New(w, answer.StreamUsageHeader(env.EstimatesOff)), meta), sc: answer.NewStopScanner(gr.stops)}
	return answer.Drive(ctx, tr, g)
}

// gemTurnStream is a turn rendered through the Gemini emitter, its text cut at
// the request's stop sequences and its calls gathered for the end.
type gemTurnStream struct {
	env   Env
	req   *Request
	gs    *gemsse.Stream
	sc    *answer.StopScanner
	calls []chat.ToolCall
}

func (g *gemTurnStream) Opened() bool { return g.gs.Opened() }
func (g *gemTurnStream) Open() error  { return g.gs.Open() }

func (g *gemTurnStream) Step(st answer.Step) error {
	text, c := g.sc.Step(st)
	if err := g.gs.Text(text); err != nil || c == nil {
		return err
	}
	if st.First {
		g.calls = append(g.calls, chat.ToolCall{ID: c.ID, Name: c.Name})
	}
	if c.Index >= len(g.calls) {
		return errors.AssertionFailedf("httpapi: tool call fragment out of order")
	}
	g.calls[c.Index].Arguments += c.Arguments
	return nil
}

func (g *gemTurnStream) Finish(ctx context.Context, tr *answer.Reader) error {
	if !g.gs.Opened() {
		return answer.ErrNothingProven()
	}
	calls := g.calls
	if g.sc.Matched == nil {
		if err := g.gs.Text(g.sc.Flush()); err != nil {
			return err
		}
	} else {
		calls = nil
	}
	return g.gs.Finish(geminiCalls(calls), geminiUsageOf(tr.Usage(g.req.Chat, g.env.EstimatesOff, nil)))
}

func (g *gemTurnStream) Flush() error { return g.gs.Flush() }

func (g *gemTurnStream) Fail(ctx context.Context, err error) error {
	return g.gs.Fail(g.env.Fail(ctx, err))
}
