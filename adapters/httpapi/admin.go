package httpapi

import (
	"embed"
	"encoding/json"
	"io/fs"
	"maps"
	"net/http"
	"strings"
	"sync"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/fsm"
)

// The control page: GET /admin is a static page (no data in it), its script
// and style sheet are embedded, and every datum comes from the JSON endpoints
// under /admin/api/, which need an API key (the same slots as the API). The
// page asks for the key once and keeps it in sessionStorage.
const (
	pathAdmin         = "/admin"
	pathAdminStatic   = "/admin/static/"
	pathAdminOverview = "/admin/api/overview"
	pathAdminLive     = "/admin/api/live"
	pathAdminUsage    = "/admin/api/usage"
)

//go:embed adminui
var adminFiles embed.FS

// AdminInfo is what the control page shows of the configuration. Nothing in
// it is a secret: the wiring passes check-config's redacted summary.
type AdminInfo struct {
	Version      string
	UpstreamHost string
	Models       []AdminModel
	Summary      map[string]string
	// Update is the release check's latest outcome (the control page's
	// update notice); nil when the owner set no manifest URL.
	Update func() any
}

// AdminModel is one public model and the upstream enum it is pinned to.
type AdminModel struct {
	Public   string   `json:"public"`
	Upstream string   `json:"upstream"`
	Observed []string `json:"observed"`
}

// ProbeStatus is the verdict of a probe report (from Config.Verification).
type ProbeStatus struct {
	Passed bool   `json:"passed"`
	Time   string `json:"time"`
	Detail string `json:"detail"`
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

// adminRoutes registers the control page on mux.
func (s *server) adminRoutes(mux *http.ServeMux) {
	// The files are checked here and copied out of the binary on first
	// request: a gateway whose page nobody opens keeps no copy in its heap.
	static := func(name, contentType string) http.Handler {
		if _, err := fs.Stat(adminFiles, "adminui/"+name); err != nil {
			panic("httpapi: missing embedded admin file " + name)
		}
		body := sync.OnceValue(func() []byte {
			b, _ := adminFiles.ReadFile("adminui/" + name)
			return b
		})
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(body())
		})
	}
	overview := s.adminOverview()
	get := func(pattern string, h http.Handler) {
		mux.Handle("GET "+pattern, adminHeaders(h))
		mux.Handle(pattern, adminHeaders(s.handleMethodNotAllowed("GET, HEAD")))
	}
	get(pathAdmin, static("index.html", "text/html; charset=utf-8"))
	get(pathAdmin+"/{$}", static("index.html", "text/html; charset=utf-8"))
	get(pathAdminStatic+"app.js", static("app.js", "text/javascript; charset=utf-8"))
	get(pathAdminStatic+"app.css", static("app.css", "text/css; charset=utf-8"))
	get(pathAdminStatic+"icon.svg", static("icon.svg", "image/svg+xml"))
	get(pathAdminOverview, s.requireAdmin(overview))
	get(pathAdminLive, s.requireAdmin(s.adminLive()))
	get(pathAdminUsage, s.requireAdmin(s.adminUsage()))
	mux.Handle(pathAdmin+"/", adminHeaders(s.handleNotFound()))
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

// adminOverview serves what does not change while the process runs.
func (s *server) adminOverview() http.Handler {
	body := sync.OnceValue(s.adminOverviewBody)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, body())
	})
}

// adminOverviewBody is the overview's JSON. It never changes while the server
// runs, so it is built once — on the first request, not at start-up, where it
// cost every gateway about 0.1 MB of allocations.
func (s *server) adminOverviewBody() []byte {
	a := s.cfg.Admin
	models := a.Models
	if models == nil {
		models = []AdminModel{}
	}
	body, err := json.Marshal(map[string]any{
		"version":              a.Version,
		"strategy":             s.cfg.Strategy,
		"upstream_host":        a.UpstreamHost,
		"models":               models,
		"config":               a.Summary,
		"machine":              machineLayout(correlation.Table()),
		"conversation_machine": machineLayout(conversation.Table()),
	})
	if err != nil {
		panic("httpapi: admin overview: " + err.Error())
	}
	return body
}

// adminLive serves what the page polls: health, the upstream-verified state,
// correlation counts, the recent requests and machine transitions.
func (s *server) adminLive() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, verified := s.probe()
		_, fields := s.verification()
		reason, _ := fields["upstream_verified_reason"].(string)
		until, _ := fields["upstream_verified_until"].(string)
		out := map[string]any{"status": "ok", "strategy": s.cfg.Strategy, "upstream_verified": verified,
			"upstream_verified_reason": reason, "upstream_verified_until": until, "probe": p, "time": s.now().UTC()}
		if s.cfg.Health != nil {
			h := s.cfg.Health(r.Context())
			if c, ok := h["correlation"]; ok {
				out["correlation"] = c
			}
			if c, ok := h["conversation"]; ok {
				out["conversation"] = c
			}
		}
		reqs, trans := []RequestRecord{}, []TransitionRecord{}
		if m := s.cfg.Monitor; m != nil {
			reqs, trans = m.Recent()
		}
		out["requests"], out["transitions"] = reqs, trans
		if m := s.cfg.Monitor; m != nil {
			out["last_hour"], out["upstream_quota"] = m.lastHour(), m.upstreamQuota()
			if w := m.rateWindow(); w != nil {
				out["upstream_rate_limit"] = w
			}
			if c := m.upstreamCredits(); c != nil {
				out["upstream_credits"] = c
			}
		}
		out["keys"] = s.keyBudgets(r.Context())
		if a := s.cfg.Admin; a != nil && a.Update != nil {
			out["update"] = a.Update()
		}
		s.writeValue(w, r, out, "admin live")
	})
}

// layout is a drawing of a declared machine: states placed in columns by
// their distance from the initial state, and one edge per pair of distinct
// states with the ids of its rows. Self-loops (rows that keep the state) are
// listed on their state. Everything comes from the table, so the drawing
// follows the declaration as spec/ does.
type layout struct {
	Width  int          `json:"width"`
	Height int          `json:"height"`
	States []layoutNode `json:"states"`
	Edges  []layoutEdge `json:"edges"`
	Rows   []fsm.Row    `json:"rows"`
}

type layoutNode struct {
	Name     string   `json:"name"`
	X        int      `json:"x"`
	Y        int      `json:"y"`
	Terminal bool     `json:"terminal"`
	Initial  bool     `json:"initial"`
	Loops    []string `json:"loops"`
}

type layoutEdge struct {
	From string   `json:"from"`
	To   string   `json:"to"`
	Rows []string `json:"rows"`
}

// Geometry of the drawing, in SVG user units.
const (
	layoutColumn = 250
	layoutRow    = 80
	layoutMargin = 20
	layoutNodeW  = 140
	layoutNodeH  = 44
)

func machineLayout(t fsm.Table) layout {
	depth := map[string]int{t.Initial: 0}
	queue := []string{t.Initial}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, r := range t.Rows {
			if r.From == cur && r.To != cur {
				if _, seen := depth[r.To]; !seen {
					depth[r.To] = depth[cur] + 1
					queue = append(queue, r.To)
				}
			}
		}
	}
	// Columns follow the longest forward path, so that a state comes after
	// every state that leads to it; rows back towards the initial state (a
	// smaller breadth-first depth) do not count, which also bounds the loop.
	bfs := maps.Clone(depth)
	forward := func(r fsm.Row) bool {
		df, okf := bfs[r.From]
		dt, okt := bfs[r.To]
		return r.From != r.To && okf && okt && dt >= df
	}
	for range t.States {
		for _, r := range t.Rows {
			if forward(r) && depth[r.To] < depth[r.From]+1 {
				depth[r.To] = depth[r.From] + 1
			}
		}
	}
	maxDepth := 0
	for _, d := range depth {
		maxDepth = max(maxDepth, d)
	}
	terminal := map[string]bool{}
	for _, s := range t.Terminal {
		terminal[s] = true
	}
	column := func(s string) int {
		if d, ok := depth[s]; ok {
			return d
		}
		return maxDepth + 1 // unreachable from the initial state: a column of its own
	}
	// Columns are centred on the tallest one.
	height := map[int]int{}
	tallest := 0
	for _, s := range t.States {
		height[column(s)]++
		tallest = max(tallest, height[column(s)])
	}
	var l layout
	perColumn := map[int]int{}
	index := map[string]int{}
	for _, s := range t.States {
		d := column(s)
		y := layoutMargin + (tallest-height[d])*layoutRow/2 + perColumn[d]*layoutRow
		n := layoutNode{Name: s, X: layoutMargin + d*layoutColumn, Y: y,
			Terminal: terminal[s], Initial: s == t.Initial, Loops: []string{}}
		perColumn[d]++
		index[s] = len(l.States)
		l.States = append(l.States, n)
		l.Width = max(l.Width, n.X+layoutNodeW+layoutMargin)
		l.Height = max(l.Height, n.Y+layoutNodeH+layoutMargin)
	}
	edges := map[[2]string]int{}
	for _, r := range t.Rows {
		if r.From == r.To {
			n := &l.States[index[r.From]]
			n.Loops = append(n.Loops, r.ID)
			continue
		}
		k := [2]string{r.From, r.To}
		i, ok := edges[k]
		if !ok {
			i = len(l.Edges)
			edges[k] = i
			l.Edges = append(l.Edges, layoutEdge{From: r.From, To: r.To})
		}
		l.Edges[i].Rows = append(l.Edges[i].Rows, r.ID)
	}
	l.Rows = t.Rows
	return l
}

// verification is the upstream-verified state of Config.Verification
// (false, with no fields, when it is nil). /health and the control page both
// answer from it.
func (s *server) verification() (bool, map[string]any) {
	if s.cfg.Verification == nil {
		return false, nil
	}
	return s.cfg.Verification()
}

// probe returns the verdict of the configured probe report for the control
// page (nil when no report could be read) and whether it makes the upstream
// verified: only a passing report does.
func (s *server) probe() (*ProbeStatus, bool) {
	verified, fields := s.verification()
	if _, read := fields["upstream_report_digest"]; !read && !verified {
		return nil, false
	}
	p := &ProbeStatus{Passed: verified}
	p.Time, _ = fields["upstream_verified_at"].(string)
	p.Detail, _ = fields["upstream_verified_reason"].(string)
	return p, verified
}
