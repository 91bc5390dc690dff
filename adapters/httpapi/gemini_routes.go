package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/gemapi"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// This file is the Gemini API's routes as the transport sees them: its
// paths and their names, where its key may be presented, the model of a
// path, and the thin handlers over package gemapi (the translation and the
// answer).

// pathGeminiModels is the root of the Gemini API surface (docs/GEMINI.md);
// its methods are gemapi's (Generate, StreamGenerate, CountTokens).
const pathGeminiModels = "/v1beta/models"

// geminiRouteTemplates are the values routeOf gives the Gemini routes
// (never the model a client put in the path): the v1beta routes, and the
// v1 methods (GET /v1/models and /v1/models/{id} keep their OpenAI names).
var geminiRouteTemplates = []string{pathGeminiModels, pathGeminiModels + "/{model}",
	pathGeminiModels + "/{model}:" + gemapi.Generate, pathGeminiModels + "/{model}:" + gemapi.StreamGenerate, pathGeminiModels + "/{model}:" + gemapi.CountTokens,
	pathModels + "/{model}:" + gemapi.Generate, pathModels + "/{model}:" + gemapi.StreamGenerate, pathModels + "/{model}:" + gemapi.CountTokens}

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
	case method == gemapi.Generate, method == gemapi.StreamGenerate, method == gemapi.CountTokens:
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
func (s *server) handleGeminiAction(w http.ResponseWriter, r *http.Request) (turnFacts, error) {
	model, method, ok := cutMethod(r.PathValue("action"))
	if !ok {
		return turnFacts{}, methodNotAllowed(w, "GET, HEAD")
	}
	switch method {
	case gemapi.Generate, gemapi.StreamGenerate:
	case gemapi.CountTokens:
		return turnFacts{}, s.geminiCountTokens(w, r, model)
	default:
		return turnFacts{}, &routeError{errs.New(errs.InvalidRequest), http.StatusNotFound,
			"This gateway serves generateContent, streamGenerateContent and countTokens."}
	}
	stream := method == gemapi.StreamGenerate
	altSSE := r.URL.Query().Get("alt") == "sse"
	// The path's refusals come inside serveTurn, after the body is read,
	// so that the ledger counts them as every API's refusals.
	return serveTurn(s, w, r, "contents", func(body []byte) (*gemapi.Request, chat.Request, error) {
		if stream && !altSSE {
			return nil, chat.Request{}, rules.Invalid("alt", "streamGenerateContent is served as server-sent events only: add ?alt=sse (the JSON-array stream is not served).")
		}
		if err := s.geminiModel(r, model); err != nil {
			return nil, chat.Request{}, err
		}
		gr, err := gemapi.Decode(s.in, body, model, stream)
		if err != nil {
			return nil, chat.Request{}, err
		}
		return &gr, gr.Chat, nil
	}, func(w http.ResponseWriter, r *http.Request, gr *gemapi.Request, tr *answer.Reader) error {
		return gemapi.Answer(w, r.Context(), gr, tr, gemapi.Env{EstimatesOff: s.cfg.UsageEstimatesOff, Fail: geminiStreamFailure})
	})
}

// geminiCountTokens serves countTokens: the gateway's input estimate of the
// request (gemapi.Count); 404 when estimates are off.
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
	gr, err := gemapi.DecodeCount(s.in, body, model)
	if err != nil {
		return err
	}
	w.Header().Set(answer.UsageHeader, "estimated")
	return answer.WriteValue(w, gemapi.Count(gr), "count tokens")
}

// handleGeminiModels serves GET /v1beta/models: the configured models the
// caller's slot may use, in configuration order, in one page.
func (s *server) handleGeminiModels(w http.ResponseWriter, r *http.Request) error {
	sl := slotFrom(r.Context())
	list := struct {
		Models []gemapi.Model `json:"models"`
	}{Models: []gemapi.Model{}}
	for _, m := range s.cfg.Models {
		if sl.allowsModel(m) {
			list.Models = append(list.Models, gemapi.ModelOf(m))
		}
	}
	return answer.WriteValue(w, list, "models")
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
	return answer.WriteValue(w, gemapi.ModelOf(id), "model")
}
