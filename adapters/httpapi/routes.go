package httpapi

import (
	"net/http"
	"strings"

	"github.com/pmgate/pmgate/domain/errs"
)

// Paths of the API surface (docs/API.md).
const (
	pathChat      = "/v1/chat/completions"
	pathResponses = "/v1/responses"
	pathModels    = "/v1/models"
	pathMessages  = "/v1/messages"
	pathCount     = "/v1/messages/count_tokens"
	pathHealth    = "/health"
)

// routes is the whole API surface. A method-less pattern for each path is
// less specific than its method pattern, so it only answers the other
// methods (405 with Allow); "/" answers every unknown path (404). Both answer
// in the OpenAI error shape.
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST "+pathChat, s.requireKey(s.handle(s.handleChat)))
	mux.Handle(pathChat, s.handleMethodNotAllowed("POST"))
	mux.Handle("POST "+pathResponses, s.requireKey(s.handle(s.handleResponses)))
	mux.Handle(pathResponses, s.handleMethodNotAllowed("POST"))
	// The Anthropic routes answer every error (authentication, method,
	// unknown sub-path) in the Anthropic shape. Claude Code appends
	// ?beta=true: the mux matches the path alone.
	mux.Handle("POST "+pathMessages, anthropicRoute(s.requireKey(s.handle(s.handleMessages))))
	mux.Handle(pathMessages, anthropicRoute(s.handleMethodNotAllowed("POST")))
	mux.Handle("POST "+pathCount, anthropicRoute(s.requireKey(s.handle(s.handleCountTokens))))
	mux.Handle(pathCount, anthropicRoute(s.handleMethodNotAllowed("POST")))
	mux.Handle(pathMessages+"/", anthropicRoute(s.handleNotFound()))
	mux.Handle("GET "+pathModels, s.geminiOr(s.requireKey(s.handle(s.handleModels)), s.handle(s.handleGeminiModels)))
	mux.Handle(pathModels, s.handleMethodNotAllowed("GET, HEAD"))
	mux.Handle("GET "+pathModels+"/{id}", s.geminiOr(s.requireKey(s.handle(s.handleModel)), s.handle(s.handleGeminiModel)))
	mux.Handle(pathModels+"/{id}", s.handleMethodNotAllowed("GET, HEAD"))
	mux.Handle("GET "+pathLivez, s.handle(handleLivez))
	mux.Handle(pathLivez, s.handleMethodNotAllowed("GET, HEAD"))
	mux.Handle("GET "+pathReadyz, s.handle(s.handleReadyz))
	mux.Handle(pathReadyz, s.handleMethodNotAllowed("GET, HEAD"))
	mux.Handle("GET "+pathHealth, s.handle(s.handleHealth))
	mux.Handle(pathHealth, s.handleMethodNotAllowed("GET, HEAD"))
	s.geminiRoutes(mux)   // /v1beta/models…, the Gemini API (gemini_render.go)
	s.operatorRoutes(mux) // /metrics and /admin, when configured (operator.go)
	mux.Handle("/", s.handleNotFound())
	return mux
}

// noRoute is the 404 of an unknown path: with the route it stands for when
// there is one (routeMeant), so that a base URL with or without /v1 is told
// the fix.
func noRoute(path string) error {
	route := routeMeant(path)
	if route == "" {
		return errNoRoute
	}
	return &routeError{errs.New(errs.InvalidRequest), http.StatusNotFound,
		"There is no such route; did you mean " + route + "? " + routeHint(route)}
}

// apiRoutes are the client routes an unknown path may have meant.
var apiRoutes = []string{pathChat, pathResponses, pathModels, pathMessages, pathCount}

// routeMeant is the API route an unknown path stands for, or "": the path
// without its /v1 (a base URL without /v1), with one /v1 too many (a base
// URL with /v1 on a client that adds it), or under a prefix (/api, /openai)
// or with a trailing slash. The answer is one of apiRoutes, never the path.
func routeMeant(path string) string {
	p := strings.TrimSuffix(path, "/")
	for _, route := range apiRoutes {
		bare := strings.TrimPrefix(route, "/v1")
		if p == bare || p == route || strings.HasSuffix(p, route) || strings.HasSuffix(p, bare) && strings.Count(p, "/") > strings.Count(bare, "/") {
			return route
		}
	}
	if strings.HasSuffix(p, "/models/"+lastSegment(p)) { // GET /models/{id} without /v1
		return pathModels + "/{id}"
	}
	return ""
}

func lastSegment(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// routeHint says where the base URL goes wrong for the route meant.
func routeHint(route string) string {
	if strings.HasPrefix(route, pathMessages) {
		return "An Anthropic client's base URL is the gateway's address without /v1 (http://host:port); the client adds /v1/messages."
	}
	return "An OpenAI client's base URL ends in /v1 (http://host:port/v1); the client adds the rest."
}
