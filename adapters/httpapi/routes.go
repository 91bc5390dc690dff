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

// HandlerFunc is a handler that returns its failure instead of writing it
// (the shape of tailscale's tsweb): the router writes a returned error through
// writeError, in the route's error shape, so the handler writes only its
// answer. A failure returned after the handler began its answer is only
// noted (handle).
type HandlerFunc = func(http.ResponseWriter, *http.Request) error

// turnFunc is the handler of a route that serves turns: besides its failure
// it returns what the request did (serveTurn's facts; zero when the request
// was answered without a turn).
type turnFunc = func(http.ResponseWriter, *http.Request) (turnFacts, error)

// turn is the adapter of a turn route's handler, the one place what a turn
// did is written on the request's record (for the access line, the metrics
// and the span), and a request serveTurn served is counted in the ledger,
// under the code its failure is answered with.
func (s *server) turn(h turnFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		f, err := h(w, r)
		ri := infoFrom(r.Context())
		ri.stream, ri.model, ri.toolCalls, ri.firstToken, ri.usage = f.stream, f.model, f.toolCalls, f.firstToken, f.usage
		if f.served {
			ri.notes = f.summary.Notes
			var code errs.Code
			if err != nil {
				code = entryOf(r.Context(), err).Code
			}
			s.recordUsage(r, f, ri.slot, code)
		}
		return err
	}
}

// handle writes the error a HandlerFunc returns: the one place it is
// written. An answer that already began (a stream, which reports its own
// failures inside it) never gets a second one: the failure is then only
// noted, for the access line and, when internal, the log.
func (s *server) handle(h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		switch rw, ok := w.(*recorder); {
		case err == nil:
		case ok && rw.status != 0:
			s.noteError(r.Context(), entryOf(r.Context(), err), err)
		default:
			s.writeError(w, r, err)
		}
	})
}

// access is who may call a route.
type access int

const (
	open  access = iota // anyone (the Host and Origin checks still apply)
	keyed               // a configured API key (401 invalid_api_key otherwise)
	admin               // an API key of admin scope (403 insufficient_scope otherwise)
)

// route is one method of one path of an API. A path another API serves too
// is split by when: the requests it is true for are this route's; the
// others go to the route without when, or to the path's 405.
type route struct {
	method string // GET (HEAD too) or POST
	path   string // a mux path pattern
	access access
	h      HandlerFunc
	when   func(*http.Request) bool
}

// api is one API's surface as data: its error shape, its routes, the
// subtree whose unknown paths it answers 404, how a request presents its
// key when it sends no Authorization header and why a key is refused, and
// what it does to a request before anything else sees it.
type api struct {
	shape    *errShape
	routes   []route
	notFound string                            // a subtree ("/v1/messages/"), or ""
	others   map[string]HandlerFunc            // a path's answer to its other methods, when not 405 with its methods
	key      func(*http.Request) string        // the key sent without an Authorization header (nil: x-api-key)
	problem  func(*http.Request) string        // why a key was refused (nil: authProblem)
	prepare  func(*http.Request) *http.Request // nil: none
}

// apis is the whole API surface (docs/API.md, docs/GEMINI.md).
func (s *server) apis() []*api {
	openai := &api{shape: shapeOpenAI, routes: []route{
		{method: "POST", path: pathChat, access: keyed, h: s.turn(s.handleChat)},
		{method: "POST", path: pathResponses, access: keyed, h: s.turn(s.handleResponses)},
		{method: "GET", path: pathModels, access: keyed, h: s.handleModels},
		{method: "GET", path: pathModels + "/{id}", access: keyed, h: s.handleModel},
		{method: "GET", path: pathLivez, access: open, h: handleLivez},
		{method: "GET", path: pathReadyz, access: open, h: s.handleReadyz},
		{method: "GET", path: pathHealth, access: open, h: s.handleHealth},
	}}
	// Claude Code appends ?beta=true: the mux matches the path alone.
	anthropic := &api{shape: shapeAnthropic, notFound: pathMessages + "/", routes: []route{
		{method: "POST", path: pathMessages, access: keyed, h: s.turn(s.handleMessages)},
		{method: "POST", path: pathCount, access: keyed, h: s.handleCountTokens},
	}}
	gemini := &api{shape: shapeGemini, notFound: "/v1beta/", key: geminiPresentedKey, problem: geminiAuthProblem, prepare: geminiKeyOutOfURL,
		// One segment holds {model} (GET) and {model}:{method} (POST).
		others: map[string]HandlerFunc{pathGeminiModels + "/{action}": handleGeminiOtherMethod},
		routes: []route{
			{method: "POST", path: pathGeminiModels + "/{action}", access: keyed, h: s.turn(s.handleGeminiAction)},
			{method: "GET", path: pathGeminiModels, access: keyed, h: s.handleGeminiModels},
			{method: "GET", path: pathGeminiModels + "/{action}", access: keyed, h: s.handleGeminiModel},
			// @google/genai 3.x asks for the API's v1 paths by default: its
			// methods are served there too (no OpenAI route has a colon
			// method), and GET /v1/models and /v1/models/{id} answer a
			// request with a Gemini key form (x-goog-api-key or ?key=, no
			// Authorization header) as the Gemini API.
			{method: "POST", path: pathModels + "/{action}", access: keyed, h: s.turn(s.handleGeminiAction), when: colonMethod},
			{method: "GET", path: pathModels, access: keyed, h: s.handleGeminiModels, when: geminiKeyForm},
			{method: "GET", path: pathModels + "/{id}", access: keyed, h: s.handleGeminiModel, when: geminiKeyForm},
		}}
	return []*api{openai, anthropic, gemini, s.operatorAPI()}
}

// routes registers the API surface: each route's method pattern, the
// method-less pattern of each path (less specific, so it answers only the
// other methods: 405 with Allow, in the shape of the API whose path it is),
// each API's 404 subtree, and "/" (every other unknown path: 404, in the
// OpenAI shape). A method pattern two APIs share goes to the first route
// whose when claims the request, else to the one without when, else to the
// path's 405.
func (s *server) routes() http.Handler {
	type claim struct {
		when func(*http.Request) bool
		h    http.Handler
	}
	mux := http.NewServeMux()
	var patterns []string
	claims := map[string][]claim{}          // by bare method pattern: the routes with when
	unclaimed := map[string]http.Handler{}  // by bare method pattern: the route without
	notAllowed := map[string]http.Handler{} // by bare path
	for _, a := range s.apis() {
		var paths []string
		allow := map[string]string{}
		for _, rt := range a.routes {
			pattern := bare(rt.method + " " + rt.path)
			if claims[pattern] == nil && unclaimed[pattern] == nil {
				patterns = append(patterns, rt.method+" "+rt.path)
			}
			h := s.serve(a, rt.access, rt.h)
			switch {
			case rt.when != nil:
				claims[pattern] = append(claims[pattern], claim{rt.when, h})
				continue
			case unclaimed[pattern] != nil:
				panic("httpapi: two routes answer every request of " + pattern)
			}
			unclaimed[pattern] = h
			if allow[rt.path] == "" {
				paths = append(paths, rt.path)
				allow[rt.path] = allowOf(rt.method)
			} else {
				allow[rt.path] += ", " + allowOf(rt.method)
			}
		}
		for _, p := range paths {
			h, methods := a.others[p], allow[p]
			if h == nil {
				h = func(w http.ResponseWriter, _ *http.Request) error { return methodNotAllowed(w, methods) }
			}
			notAllowed[bare(p)] = s.serve(a, open, h)
			mux.Handle(p, notAllowed[bare(p)])
		}
		if a.notFound != "" {
			mux.Handle(a.notFound, s.serve(a, open, handleNotFound))
		}
	}
	for _, pattern := range patterns {
		cs, rest := claims[bare(pattern)], unclaimed[bare(pattern)]
		if rest == nil {
			_, p, _ := strings.Cut(pattern, " ")
			rest = notAllowed[bare(p)]
		}
		if len(cs) == 0 {
			mux.Handle(pattern, rest)
			continue
		}
		mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for _, c := range cs {
				if c.when(r) {
					c.h.ServeHTTP(w, r)
					return
				}
			}
			rest.ServeHTTP(w, r)
		}))
	}
	mux.Handle("/", s.serve(&api{shape: shapeOpenAI}, open, handleNotFound))
	return mux
}

// allowOf is a served method as Allow lists it (GET serves HEAD too).
func allowOf(method string) string {
	if method == http.MethodGet {
		return "GET, HEAD"
	}
	return method
}

// bare is a pattern with its wildcards unnamed: two patterns that differ
// only in wildcard names are the same to the mux.
func bare(pattern string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(pattern, '{')
		j := strings.IndexByte(pattern, '}')
		if i < 0 || j < i {
			b.WriteString(pattern)
			return b.String()
		}
		b.WriteString(pattern[:i+1])
		pattern = pattern[j:]
	}
}

// serve is one route of an API as the mux serves it, the one adapter of
// every route: the request takes the API's error shape and preparation, its
// key is checked as the route's access says, and the handler's returned
// failure (or the key's refusal) is written by handle, in that shape.
func (s *server) serve(a *api, acc access, h HandlerFunc) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		ri := infoFrom(r.Context())
		ri.shape = a.shape
		if a.prepare != nil {
			r = a.prepare(r)
		}
		if acc != open {
			var err error
			if r, err = s.checkKey(a, r); err != nil {
				return err
			}
			ri.slot = principalFrom(r.Context()).Slot
			if acc == admin {
				if err := checkAdmin(r); err != nil {
					return err
				}
			}
		}
		return h(w, r)
	})
}

func handleNotFound(_ http.ResponseWriter, r *http.Request) error { return noRoute(r.URL.Path) }

// methodNotAllowed is the refusal of a method the route does not serve,
// with the methods it does in Allow.
func methodNotAllowed(w http.ResponseWriter, allow string) error {
	w.Header().Set("Allow", allow)
	return errNoMethod
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
