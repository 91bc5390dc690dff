package httpapi

import (
	"context"
	"net/http"
	"strings"
)

// This file is the Gemini API's routes as the transport sees them: its
// paths and their names, where its key may be presented, and the model of a
// path.

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
