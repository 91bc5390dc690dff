package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/gemsse"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// Paths and methods of the Gemini API surface (docs/GEMINI.md).
const (
	pathGeminiModels = "/v1beta/models"
	gemGenerate      = "generateContent"
	gemStreamMethod  = "streamGenerateContent"
	gemCount         = "countTokens"
)

// geminiRouteTemplates are the values routeOf gives the Gemini routes
// (never the model a client put in the path): the v1beta routes, and the
// v1 methods (GET /v1/models and /v1/models/{id} keep their OpenAI names).
var geminiRouteTemplates = []string{pathGeminiModels, pathGeminiModels + "/{model}",
	pathGeminiModels + "/{model}:" + gemGenerate, pathGeminiModels + "/{model}:" + gemStreamMethod, pathGeminiModels + "/{model}:" + gemCount,
	pathModels + "/{model}:" + gemGenerate, pathModels + "/{model}:" + gemStreamMethod, pathModels + "/{model}:" + gemCount}

// geminiRouteOf names a Gemini route for logs, metrics and spans ("" when
// the path is not one).
func geminiRouteOf(path string) string {
	if path == pathGeminiModels {
		return path
	}
	prefix := pathGeminiModels
	rest, ok := strings.CutPrefix(path, pathGeminiModels+"/")
	if !ok {
		prefix = pathModels
		rest, ok = strings.CutPrefix(path, pathModels+"/")
	}
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return ""
	}
	_, method, hasMethod := cutMethod(rest)
	switch {
	case !hasMethod && prefix == pathGeminiModels:
		return pathGeminiModels + "/{model}"
	case method == gemGenerate, method == gemStreamMethod, method == gemCount:
		return prefix + "/{model}:" + method
	}
	return ""
}

// cutMethod splits "{model}:{method}" at its last colon.
func cutMethod(s string) (model, method string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// colonMethod says whether a POST under /v1/models names a Gemini method
// ({model}:{method}); any other is the OpenAI 405 it always was.
func colonMethod(r *http.Request) bool {
	_, _, ok := cutMethod(r.PathValue("action"))
	return ok
}

// geminiKeyForm says whether a request presents its key the Gemini way
// (x-goog-api-key or ?key=) and has no Authorization header, as
// @google/genai sends.
func geminiKeyForm(r *http.Request) bool {
	return r.Header.Get("Authorization") == "" && (r.Header.Get("x-goog-api-key") != "" || r.URL.Query().Has("key"))
}

// geminiKeyCtxKey holds the key a request put in its URL (?key=), taken out
// of the URL before anything else sees it.
type geminiKeyCtxKey struct{}

// geminiKeyOutOfURL takes ?key= out of the URL of a Gemini route's request:
// from here on the key is only in the context, where authenticate finds it,
// never in r.URL (which a log line, a span or an error text could otherwise
// reach).
func geminiKeyOutOfURL(r *http.Request) *http.Request {
	if q := r.URL.Query(); q.Has("key") {
		key := q.Get("key")
		q.Del("key")
		u := *r.URL
		u.RawQuery = q.Encode()
		r = r.WithContext(context.WithValue(r.Context(), geminiKeyCtxKey{}, key))
		r.URL = &u
		r.RequestURI = u.RequestURI()
	}
	return r
}

// geminiPresentedKey is the key of a Gemini route's request when it has no
// Authorization header: x-goog-api-key, then ?key= (taken out of the URL by
// geminiKeyOutOfURL), then x-api-key.
func geminiPresentedKey(r *http.Request) string {
	if k := r.Header.Get("x-goog-api-key"); k != "" {
		return k
	}
	if k, _ := r.Context().Value(geminiKeyCtxKey{}).(string); k != "" {
		return k
	}
	return r.Header.Get("x-api-key")
}

// geminiAuthProblem says why a Gemini route's credentials were refused, from
// the shape of the request only.
func geminiAuthProblem(r *http.Request) string {
	const accepted = "send x-goog-api-key: <key> (or Authorization: Bearer <key>, or ?key=<key>)."
	if r.Header.Get("Authorization") != "" {
		return authProblem(r.Header)
	}
	if geminiPresentedKey(r) == "" {
		return "No key was sent: " + accepted
	}
	return "The key matches none of this gateway's keys."
}

func handleGeminiOtherMethod(w http.ResponseWriter, r *http.Request) error {
	if _, _, ok := cutMethod(r.PathValue("action")); ok {
		return methodNotAllowed(w, "POST")
	}
	return methodNotAllowed(w, "GET, HEAD")
}

// geminiModel checks the model of a Gemini path: configured and allowed to
// the caller's slot.
func (s *server) geminiModel(r *http.Request, model string) error {
	sl := slotFrom(r.Context())
	if model == "" || !s.in.Known(model) || !sl.allowsModel(model) {
		return s.in.ModelNotFound(sl.allowsModel)
	}
	return nil
}

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
		out[i] = gemsse.FunctionCall{ID: c.ID, Name: c.Name, Args: toolInput(c.Arguments)}
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
		return errNothingProven()
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
		return errNothingProven()
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

// geminiError is the Gemini API's error shape. details carries pmgate's
// stable code (an ErrorInfo whose reason is the code, in the domain
// pmgate) and the offending parameter; the code is also the
// x-pmgate-error-code header.
type geminiError struct {
	Error geminiErrorInner `json:"error"`
}

type geminiErrorInner struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []any  `json:"details"` // a geminiErrorInfo, then a geminiRetryInfo when there is a wait
}

// geminiRetryInfo is google.rpc.RetryInfo: the wait retry-after says, which
// gemini-cli reads from the body (it does not read the header): a short
// wait is waited, a long one (a key's quota) ends its retries.
type geminiRetryInfo struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
}

type geminiErrorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata"`
}

// geminiStatus names an HTTP status the way the Gemini API does (the
// google.rpc.Code of the status).
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusPaymentRequired:
		return "FAILED_PRECONDITION"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// geminiBody renders err in the Gemini shape, with the status to answer (the
// catalog's, as on the OpenAI routes) and the catalog entry (for a stream's
// error event).
func geminiBody(ctx context.Context, err error) (geminiError, errs.Entry, int) {
	f := failureIn(ctx, shapeGemini, err)
	return geminiOf(ctx, f), f.e, f.status
}

// geminiOf is a failure in the Gemini shape. A refusal of the request reads
// "<param>: <detail>" after the catalog message; the wait retry-after says
// is also in the body (RetryInfo).
func geminiOf(ctx context.Context, f failure) geminiError {
	body := f.public
	info := geminiErrorInfo{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: body.Error.Code, Domain: "pmgate",
		Metadata: map[string]string{"code": body.Error.Code, "type": body.Error.Type, "request_id": RequestID(ctx)}}
	if body.Error.Param != nil {
		info.Metadata["param"] = *body.Error.Param
	}
	details := []any{info}
	if f.wait > 0 {
		details = append(details, geminiRetryInfo{Type: "type.googleapis.com/google.rpc.RetryInfo", RetryDelay: strconv.Itoa(f.wait) + "s"})
	}
	return geminiError{Error: geminiErrorInner{Code: f.status, Message: body.Error.Message, Status: geminiStatus(f.status),
		Details: details}}
}
