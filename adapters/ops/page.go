package ops

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/fsm"
)

// The control page: GET /admin is a static page (no data in it), its script
// and style sheet are embedded, and every datum comes from the JSON endpoints
// under /admin/api/, which need an API key of admin scope (the router,
// adapters/httpapi, checks it, and the Host, Origin and browser policy, in
// front of every handler here). The page asks for the key once and keeps it
// in sessionStorage.

//go:embed adminui
var adminFiles embed.FS

// AdminInfo is what the control page shows of the configuration. Nothing in
// it is a secret: the wiring passes check-config's redacted summary.
type AdminInfo struct {
	Version      string
	Strategy     string
	UpstreamHost string
	Models       []AdminModel
	Summary      map[string]string
	// Update is the release check's latest outcome (the control page's
	// update notice); nil when the owner set no manifest URL.
	Update func() any
	// Health returns the live counts the page shows beside /health's (may
	// be nil): its "correlation" and "conversation" entries.
	Health func(ctx context.Context) map[string]any
	// Verification reports whether the upstream was verified by a probe
	// report, and the fields that go with it; nil means never verified.
	Verification func() (verified bool, fields map[string]any)
}

// AdminModel is one public model and the upstream enum it is pinned to.
type AdminModel struct {
	Public   string   `json:"public"`
	Upstream string   `json:"upstream"`
	Observed []string `json:"observed"`
}

// ProbeStatus is the verdict of a probe report (from AdminInfo.Verification).
type ProbeStatus struct {
	Passed bool   `json:"passed"`
	Time   string `json:"time"`
	Detail string `json:"detail"`
}

// Page is the control page: its static files and the handlers of its JSON
// endpoints, which return their failure for the router to write.
type Page struct {
	info     AdminInfo
	m        *Monitor
	overview func() []byte
}

// NewPage returns the control page showing info and what m records. It
// panics when an embedded file is missing or m is nil (mis-wiring).
func NewPage(info AdminInfo, m *Monitor) *Page {
	if m == nil {
		panic("ops: the control page needs a monitor")
	}
	p := &Page{info: info, m: m}
	p.overview = sync.OnceValue(p.overviewBody)
	for _, name := range append(slices.Sorted(maps.Keys(assets)), "index.html") {
		if _, err := fs.Stat(adminFiles, "adminui/"+name); err != nil {
			panic("ops: missing embedded admin file " + name)
		}
	}
	return p
}

// assets are the page's files besides index.html, by name, with their types.
var assets = map[string]string{
	"app.js":   "text/javascript; charset=utf-8",
	"app.css":  "text/css; charset=utf-8",
	"icon.svg": "image/svg+xml",
}

// static serves one embedded file, copied out of the binary on first request:
// a gateway whose page nobody opens keeps no copy in its heap.
func static(name, contentType string) http.Handler {
	body := sync.OnceValue(func() []byte {
		b, _ := adminFiles.ReadFile("adminui/" + name)
		return b
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body())
	})
}

// Index is the page itself.
func (p *Page) Index() http.Handler {
	return static("index.html", "text/html; charset=utf-8")
}

// Assets are the page's script, style sheet and icon by file name.
func (p *Page) Assets() map[string]http.Handler {
	out := make(map[string]http.Handler, len(assets))
	for name, contentType := range assets {
		out[name] = static(name, contentType)
	}
	return out
}

// Overview serves what does not change while the process runs.
func (p *Page) Overview(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, p.overview())
	return nil
}

// overviewBody is the overview's JSON. It never changes while the process
// runs, so it is built once — on the first request, not at start-up, where it
// cost every gateway about 0.1 MB of allocations.
func (p *Page) overviewBody() []byte {
	a := p.info
	models := a.Models
	if models == nil {
		models = []AdminModel{}
	}
	body, err := json.Marshal(map[string]any{
		"version":              a.Version,
		"strategy":             a.Strategy,
		"upstream_host":        a.UpstreamHost,
		"models":               models,
		"config":               a.Summary,
		"machine":              machineLayout(correlation.Table()),
		"conversation_machine": machineLayout(conversation.Table()),
	})
	if err != nil {
		panic("ops: admin overview: " + err.Error())
	}
	return body
}

// Live serves what the page polls: health, the upstream-verified state,
// correlation counts, the recent requests and machine transitions.
func (p *Page) Live(w http.ResponseWriter, r *http.Request) error {
	pr, verified := p.probe()
	_, fields := p.verification()
	reason, _ := fields["upstream_verified_reason"].(string)
	until, _ := fields["upstream_verified_until"].(string)
	m := p.m
	out := map[string]any{"status": "ok", "strategy": p.info.Strategy, "upstream_verified": verified,
		"upstream_verified_reason": reason, "upstream_verified_until": until, "probe": pr, "time": m.now().UTC()}
	if p.info.Health != nil {
		h := p.info.Health(r.Context())
		if c, ok := h["correlation"]; ok {
			out["correlation"] = c
		}
		if c, ok := h["conversation"]; ok {
			out["conversation"] = c
		}
	}
	out["requests"], out["transitions"] = m.Recent()
	out["last_hour"], out["upstream_quota"] = m.lastHour(), m.upstreamQuota()
	if w := m.rateWindow(); w != nil {
		out["upstream_rate_limit"] = w
	}
	if c := m.Credits(); c != nil {
		out["upstream_credits"] = c
	}
	out["keys"] = m.keyBudgets(r.Context())
	if p.info.Update != nil {
		out["update"] = p.info.Update()
	}
	return writeValue(w, out, "admin live")
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

// verification is the upstream-verified state of AdminInfo.Verification
// (false, with no fields, when it is nil), as /health answers it.
func (p *Page) verification() (bool, map[string]any) {
	if p.info.Verification == nil {
		return false, nil
	}
	return p.info.Verification()
}

// probe returns the verdict of the configured probe report for the control
// page (nil when no report could be read) and whether it makes the upstream
// verified: only a passing report does.
func (p *Page) probe() (*ProbeStatus, bool) {
	verified, fields := p.verification()
	if _, read := fields["upstream_report_digest"]; !read && !verified {
		return nil, false
	}
	pr := &ProbeStatus{Passed: verified}
	pr.Time, _ = fields["upstream_verified_at"].(string)
	pr.Detail, _ = fields["upstream_verified_reason"].(string)
	return pr, verified
}
