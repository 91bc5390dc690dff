package httpapi

import (
	"context"
	"net/http"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/gemsse"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// handleGeminiAction serves POST /v1beta/models/{model}:{method}:
// generateContent (one GenerateContentResponse), streamGenerateContent with
// alt=sse (the event stream; the JSON-array stream without alt=sse is
// refused) and countTokens.
func (s *server) handleGeminiAction(w http.ResponseWriter, r *http.Request) error {
	model, method, ok := cutMethod(r.PathValue("action"))
	if !ok {
		return methodNotAllowed(w, "GET, HEAD")
	}
	switch method {
	case gemGenerate, gemStreamMethod:
	case gemCount:
		return s.geminiCountTokens(w, r, model)
	default:
		return &routeError{errs.New(errs.InvalidRequest), http.StatusNotFound,
			"This gateway serves generateContent, streamGenerateContent and countTokens."}
	}
	stream := method == gemStreamMethod
	altSSE := r.URL.Query().Get("alt") == "sse"
	// The path's refusals come inside serveTurn, after the body is read,
	// so that the ledger counts them as every API's refusals.
	return serveTurn(s, w, r, "contents", func(body []byte) (*gemRequest, chat.Request, error) {
		if stream && !altSSE {
			return nil, chat.Request{}, rules.Invalid("alt", "streamGenerateContent is served as server-sent events only: add ?alt=sse (the JSON-array stream is not served).")
		}
		if err := s.geminiModel(r, model); err != nil {
			return nil, chat.Request{}, err
		}
		gr, err := s.decodeGeminiRequest(body, model, stream)
		if err != nil {
			return nil, chat.Request{}, err
		}
		return &gr, gr.chat, nil
	}, func(w http.ResponseWriter, r *http.Request, gr *gemRequest, tr *answer.Reader) error {
		meta := gemsse.Meta{ResponseID: answer.RandText(), Model: model}
		if stream {
			return s.streamGemini(w, r, gr, meta, tr)
		}
		return s.completeGemini(w, r, gr, meta, tr)
	})
}

// geminiCountTokens serves countTokens: the gateway's input estimate of the
// request (the formula of the usage estimates, which errs high), never 0;
// 404 when estimates are off. The body is a generateContent request, or one
// wrapped in generateContentRequest.
func (s *server) geminiCountTokens(w http.ResponseWriter, r *http.Request, model string) error {
	if s.cfg.UsageEstimatesOff {
		return errNoRoute
	}
	if err := s.geminiModel(r, model); err != nil {
		return err
	}
	body, err := s.readJSON(w, r)
	if err != nil {
		return err
	}
	wr, err := readGeminiBody(body)
	if err != nil {
		return err
	}
	if inner := wr.GenerateContentRequest; !absentRaw(inner) {
		if inner.Kind() != '{' {
			return rules.Invalid("generateContentRequest", "must be an object.")
		}
		if wr.Contents.Kind != 0 {
			return rules.Invalid("contents", "cannot be given with generateContentRequest; give one.")
		}
		if wr, err = readGeminiBody(inner); err != nil {
			return err
		}
	}
	gr, err := s.translateGemini(wr, model, false)
	if err != nil {
		return err
	}
	w.Header().Set(answer.UsageHeader, "estimated")
	return writeValue(w, map[string]int64{"totalTokens": max(gr.estimate, 1)}, "count tokens")
}

// absentRaw says whether a member kept as sent is missing or null.
func absentRaw(r []byte) bool { return len(r) == 0 || r[0] == 'n' }

// geminiModelJSON is the API's Model object.
type geminiModelJSON struct {
	Name                       string   `json:"name"`
	BaseModelID                string   `json:"baseModelId"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

func geminiModelOf(id string) geminiModelJSON {
	return geminiModelJSON{Name: "models/" + id, BaseModelID: id, Version: "pmgate", DisplayName: id,
		SupportedGenerationMethods: []string{gemGenerate, gemStreamMethod, gemCount}}
}

// handleGeminiModels serves GET /v1beta/models: the configured models the
// caller's slot may use, in configuration order, in one page.
func (s *server) handleGeminiModels(w http.ResponseWriter, r *http.Request) error {
	sl := slotFrom(r.Context())
	list := struct {
		Models []geminiModelJSON `json:"models"`
	}{Models: []geminiModelJSON{}}
	for _, m := range s.cfg.Models {
		if sl.allowsModel(m) {
			list.Models = append(list.Models, geminiModelOf(m))
		}
	}
	return writeValue(w, list, "models")
}

// handleGeminiModel serves GET /v1beta/models/{model}.
func (s *server) handleGeminiModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("action")
	if id == "" {
		id = r.PathValue("id") // GET /v1/models/{id} (geminiKeyForm)
	}
	if _, _, ok := cutMethod(id); ok {
		return methodNotAllowed(w, "POST")
	}
	if err := s.geminiModel(r, id); err != nil {
		return err
	}
	return writeValue(w, geminiModelOf(id), "model")
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
func (s *server) completeGemini(w http.ResponseWriter, r *http.Request, gr *gemRequest, meta gemsse.Meta, tr *answer.Reader) error {
	all, err := answer.Collect(r.Context(), tr)
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
	u := tr.Usage(gr.chat, s.cfg.UsageEstimatesOff, nil)
	resp, err := gemsse.Whole(meta, text, geminiCalls(calls), geminiUsageOf(u))
	if err != nil {
		return err
	}
	w.Header().Set(answer.UsageHeader, tr.Shown)
	return writeValue(w, resp, "encode response")
}

// streamGemini renders a turn as the alt=sse stream (answer.Drive): text as
// it arrives, the function calls and finishReason only after the proven
// end, a failure after the headers one error event.
func (s *server) streamGemini(w http.ResponseWriter, r *http.Request, gr *gemRequest, meta gemsse.Meta, tr *answer.Reader) error {
	g := &gemTurnStream{s: s, req: gr, gs: gemsse.New(sse.New(w, answer.StreamUsageHeader(s.cfg.UsageEstimatesOff)), meta), sc: answer.NewStopScanner(gr.stops)}
	return answer.Drive(r.Context(), tr, g)
}

// gemTurnStream is a turn rendered through the Gemini emitter, its text cut at
// the request's stop sequences and its calls gathered for the end.
type gemTurnStream struct {
	s     *server
	req   *gemRequest
	gs    *gemsse.Stream
	sc    *answer.StopScanner
	calls []chat.ToolCall
}

func (g *gemTurnStream) Opened() bool { return g.gs.Opened() }
func (g *gemTurnStream) Open() error  { return g.gs.Open() }

func (g *gemTurnStream) Step(st answer.Step) error {
	if err := g.gs.Text(g.sc.Feed(st.Text)); err != nil {
		return err
	}
	c := st.Call
	if c == nil || g.sc.Matched != nil {
		return nil
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
	return g.gs.Finish(geminiCalls(calls), geminiUsageOf(tr.Usage(g.req.chat, g.s.cfg.UsageEstimatesOff, nil)))
}

func (g *gemTurnStream) Flush() error { return g.gs.Flush() }

func (g *gemTurnStream) Fail(ctx context.Context, err error) error {
	body, e, _ := geminiBody(ctx, err)
	g.s.noteError(ctx, e, err)
	return g.gs.Fail(body)
}
