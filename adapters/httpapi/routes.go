package httpapi

import "net/http"

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
	mux.Handle("POST "+pathChat, s.requireKey(s.handleChat()))
	mux.Handle(pathChat, s.handleMethodNotAllowed("POST"))
	mux.Handle("POST "+pathResponses, s.requireKey(s.handleResponses()))
	mux.Handle(pathResponses, s.handleMethodNotAllowed("POST"))
	// The Anthropic routes answer every error (authentication, method,
	// unknown sub-path) in the Anthropic shape. Claude Code appends
	// ?beta=true: the mux matches the path alone.
	mux.Handle("POST "+pathMessages, anthropicRoute(s.requireKey(s.handleMessages())))
	mux.Handle(pathMessages, anthropicRoute(s.handleMethodNotAllowed("POST")))
	mux.Handle("POST "+pathCount, anthropicRoute(s.requireKey(s.handleCountTokens())))
	mux.Handle(pathCount, anthropicRoute(s.handleMethodNotAllowed("POST")))
	mux.Handle(pathMessages+"/", anthropicRoute(s.handleNotFound()))
	mux.Handle("GET "+pathModels, s.requireKey(s.handleModels()))
	mux.Handle(pathModels, s.handleMethodNotAllowed("GET, HEAD"))
	mux.Handle("GET "+pathHealth, s.handleHealth())
	mux.Handle(pathHealth, s.handleMethodNotAllowed("GET, HEAD"))
	if s.cfg.Monitor != nil {
		mux.Handle("GET "+pathMetrics, s.handleMetrics())
		mux.Handle(pathMetrics, s.handleMethodNotAllowed("GET, HEAD"))
	}
	if s.cfg.Admin != nil {
		s.adminRoutes(mux)
	}
	mux.Handle("/", s.handleNotFound())
	return mux
}
