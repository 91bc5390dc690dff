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

// operatorAPI is /metrics and the control page, when configured, in the
// OpenAI error shape. The middleware gives every /admin answer the page's
// browser headers (setAdminHeaders).
func (s *server) operatorAPI() *api {
	a := &api{shape: shapeOpenAI}
	if s.cfg.Metrics != nil {
		// An API key of admin scope, unless MetricsOpen (METRICS_AUTH=none,
		// loopback only).
		metrics := admin
		if s.cfg.MetricsOpen {
			metrics = open
		}
		a.routes = append(a.routes, route{method: "GET", path: pathMetrics, access: metrics, h: plain(s.cfg.Metrics)})
	}
	p := s.cfg.Admin
	if p == nil {
		return a
	}
	usage := handleNotFound
	if p.ServesUsage() {
		usage = p.Usage
	}
	a.routes = append(a.routes,
		route{method: "GET", path: pathAdmin, access: open, h: plain(p.Index())},
		route{method: "GET", path: pathAdmin + "/{$}", access: open, h: plain(p.Index())},
		route{method: "GET", path: pathAdminOverview, access: admin, h: p.Overview},
		route{method: "GET", path: pathAdminLive, access: admin, h: p.Live},
		route{method: "GET", path: pathAdminUsage, access: admin, h: usage})
	for name, h := range p.Assets() {
		a.routes = append(a.routes, route{method: "GET", path: pathAdminStatic + name, access: open, h: plain(h)})
	}
	a.notFound = pathAdmin + "/"
	return a
}

// plain is a handler that writes its own answers, failures included.
func plain(h http.Handler) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
}

// setAdminHeaders sets the control page's browser headers on every answer
// whose path starts with /admin (the middleware), including errors and the
// ones given before routing (421, 403, the 404 of an unclean path): no
// framing, no referrer, no caching, and a policy that allows only the
// page's own embedded script and style (no inline code, no external asset).
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
