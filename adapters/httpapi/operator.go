package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// The operator's views — the control page under /admin and the Prometheus
// scrape at /metrics — are served by adapters/ops, which the wiring hands to
// NewServer (Config.Monitor, Config.Metrics, Config.Admin). This file is all
// this package knows of them: their paths, the route names they log under,
// the browser policy of every /admin answer, and the checks in front of them
// (Host and Origin in the middleware, an admin key on their data).
const (
	pathMetrics       = "/metrics"
	pathAdmin         = "/admin"
	pathAdminStatic   = "/admin/static/"
	pathAdminOverview = "/admin/api/overview"
	pathAdminLive     = "/admin/api/live"
	pathAdminUsage    = "/admin/api/usage"
)

// HandlerFunc is a handler that returns its failure instead of writing it
// (the shape of tailscale's tsweb): the router writes a returned error through
// writeError, in the route's error shape, so the handler writes only its
// answer. A handler returns an error only before it wrote anything.
type HandlerFunc = func(http.ResponseWriter, *http.Request) error

// Monitor is the operator's monitor (adapters/ops) as the ingress feeds it.
type Monitor interface {
	// Watch is called once by NewServer with the route templates its
	// requests are reported under and its chat concurrency slots (in use
	// now, and the limit).
	Watch(routes []string, inFlight func() int, limit int)
	// ObserveRequest records one answered request, before its response ends
	// (a scrape after a request counts it).
	ObserveRequest(ports.AnsweredRequest)
	// ObserveSlot counts a finished chat request's dispatches and, when a
	// limit refused it, the refusal, by API key slot.
	ObserveSlot(slot string, dispatches int, code errs.Code)
}

// ControlPage is the control page (adapters/ops) as the router serves it: a
// static page and its files, and three JSON endpoints behind an admin key.
type ControlPage interface {
	// Index is the page itself (GET /admin and /admin/).
	Index() http.Handler
	// Assets are its files by name, served at /admin/static/<name>.
	Assets() map[string]http.Handler
	// Overview, Live and Usage serve /admin/api/overview, live and usage.
	Overview(http.ResponseWriter, *http.Request) error
	Live(http.ResponseWriter, *http.Request) error
	Usage(http.ResponseWriter, *http.Request) error
	// ServesUsage is false without a usage ledger: /admin/api/usage then
	// answers 404, as an unknown path does.
	ServesUsage() bool
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

// operatorRoutes registers /metrics and the control page, when configured.
func (s *server) operatorRoutes(mux *http.ServeMux) {
	if s.cfg.Metrics != nil {
		// An API key of admin scope, unless MetricsOpen (METRICS_AUTH=none,
		// loopback only).
		h := s.cfg.Metrics
		if !s.cfg.MetricsOpen {
			h = s.requireAdmin(h)
		}
		mux.Handle("GET "+pathMetrics, h)
		mux.Handle(pathMetrics, s.handleMethodNotAllowed("GET, HEAD"))
	}
	p := s.cfg.Admin
	if p == nil {
		return
	}
	get := func(pattern string, h http.Handler) {
		mux.Handle("GET "+pattern, adminHeaders(h))
		mux.Handle(pattern, adminHeaders(s.handleMethodNotAllowed("GET, HEAD")))
	}
	get(pathAdmin, p.Index())
	get(pathAdmin+"/{$}", p.Index())
	for name, h := range p.Assets() {
		get(pathAdminStatic+name, h)
	}
	get(pathAdminOverview, s.requireAdmin(s.handle(p.Overview)))
	get(pathAdminLive, s.requireAdmin(s.handle(p.Live)))
	usage := s.handleNotFound()
	if p.ServesUsage() {
		usage = s.handle(p.Usage)
	}
	get(pathAdminUsage, s.requireAdmin(usage))
	mux.Handle(pathAdmin+"/", adminHeaders(s.handleNotFound()))
}

// adminHeaders are set on every /admin answer, including errors: no framing,
// no referrer, no caching, and a policy that allows only the page's own
// embedded script and style (no inline code, no external asset).
func adminHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setAdminHeaders(w.Header())
		next.ServeHTTP(w, r)
	})
}

// setAdminHeaders sets the control page's browser headers; the middleware
// sets them too on every answer whose path starts with /admin, so the ones
// given before routing (421, 403, the 404 of an unclean path) have them.
func setAdminHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// adminRouteOf names the control page's routes for logs and metrics (a fixed
// set: never the client's path).
func adminRouteOf(path string) string {
	switch {
	case path == pathAdmin || path == pathAdmin+"/":
		return pathAdmin
	case strings.HasPrefix(path, pathAdminStatic):
		return pathAdminStatic + "*"
	case path == pathAdminOverview, path == pathAdminLive, path == pathAdminUsage:
		return path
	}
	return "unmatched"
}

// routeTemplates is every value routeOf can return.
var routeTemplates = []string{pathChat, pathResponses, pathMessages, pathCount, pathModels, pathHealth, pathMetrics, pathAdmin, pathAdminStatic + "*",
	pathAdminOverview, pathAdminLive, pathAdminUsage, pathLivez, pathReadyz, pathModels + "/{id}", "unmatched"}

func init() { routeTemplates = append(routeTemplates, geminiRouteTemplates...) }

// operatorRoute says which routes are the operator's own views.
func operatorRoute(route string) bool {
	return route == pathMetrics || strings.HasPrefix(route, pathAdmin)
}

// observe hands one finished request to the monitor.
func (s *server) observe(r *http.Request, rw *recorder, ri *reqInfo, start time.Time) {
	m := s.cfg.Monitor
	if m == nil {
		return
	}
	status := rw.status
	if status == 0 {
		status = http.StatusOK
	}
	route := routeOf(r)
	m.ObserveRequest(ports.AnsweredRequest{Start: start, FirstToken: ri.firstToken, End: s.now(), RequestID: ri.id,
		Route: route, Operator: operatorRoute(route), Status: status, Code: ri.code, Model: ri.model, Slot: ri.slot,
		Stream: ri.stream, ToolCalls: ri.toolCalls})
}
