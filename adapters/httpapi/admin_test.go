package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/domain/correlation"
)

// withAdmin serves the control page and /metrics of adapters/ops from m,
// wired as cmd/gateway wires them: the page shows the server's strategy, and
// its health and verification are the server's, as later options set them.
func withAdmin(m *ops.Monitor) func(*httpapi.Config) {
	return func(c *httpapi.Config) {
		withMonitor(m)(c)
		c.Admin = ops.NewPage(ops.AdminInfo{Version: "v-test", Strategy: c.Strategy, UpstreamHost: "team.postman.co",
			Models:  []ops.AdminModel{{Public: model, Upstream: "GPT_55", Observed: []string{"GPT_55"}}},
			Summary: map[string]string{"api_key": "set", "strategy": "access_token"},
			Health: func(ctx context.Context) map[string]any {
				if c.Health == nil {
					return nil
				}
				return c.Health(ctx)
			},
			Verification: func() (bool, map[string]any) {
				if c.Verification == nil {
					return false, nil
				}
				return c.Verification()
			}}, m)
	}
}

// withMonitor reports every request to m and serves its /metrics, as
// cmd/gateway wires them.
func withMonitor(m *ops.Monitor) func(*httpapi.Config) {
	return func(c *httpapi.Config) { c.Monitor, c.Metrics = m, m.Handler() }
}

func get(h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestEveryAdminAnswerCarriesTheBrowserPolicy(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, fiveDeltas(), withAdmin(ops.NewMonitor(ops.MonitorConfig{})))
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/admin", 200}, {"GET", "/admin/", 200}, {"GET", "/admin/static/app.js", 200},
		{"GET", "/admin/static/app.css", 200}, {"GET", "/admin/static/icon.svg", 200},
		{"GET", "/admin/api/overview", 401}, {"GET", "/admin/api/live", 401},
		{"POST", "/admin/api/live", 405}, {"GET", "/admin/nothing", 404},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		is.Equal(rec.Code, tc.status) // tc.path
		hd := rec.Header()
		csp := hd.Get("Content-Security-Policy")
		is.True(strings.HasPrefix(csp, "default-src 'self'")) // no inline code, no external asset
		is.True(!strings.Contains(csp, "unsafe"))
		is.True(strings.Contains(csp, "frame-ancestors 'none'"))
		is.Equal(hd.Get("X-Frame-Options"), "DENY")
		is.Equal(hd.Get("Referrer-Policy"), "no-referrer")
		is.Equal(hd.Get("Cache-Control"), "no-store")
		is.Equal(hd.Get("X-Content-Type-Options"), "nosniff")
	}
}

func TestTheAdminPageCarriesNoDataAndNoInlineCode(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, fiveDeltas(), withAdmin(ops.NewMonitor(ops.MonitorConfig{})))
	page := get(h, "/admin").Body.String()
	is.True(strings.Contains(page, `<script src="/admin/static/app.js" defer></script>`))
	for _, data := range []string{model, "GPT_55", "team.postman.co", "access_token", "v-test", apiKey} {
		is.True(!strings.Contains(page, data)) // data only from /admin/api with a key
	}
	is.True(!strings.Contains(page, "style="))   // no inline style
	is.True(!strings.Contains(page, "<style"))   // no style element
	is.True(!strings.Contains(page, "onclick"))  // no inline handler
	is.Equal(strings.Count(page, "<script"), 1)  // only the embedded script
	is.True(!strings.Contains(page, "http://"))  // no external asset
	is.True(!strings.Contains(page, "https://")) // no external asset
	js := get(h, "/admin/static/app.js").Body.String()
	is.True(!strings.Contains(js, "innerHTML")) // values are written as text
	is.True(!strings.Contains(js, "eval("))
}

func TestAdminDataNeedsTheKey(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, fiveDeltas(), withAdmin(ops.NewMonitor(ops.MonitorConfig{})))
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer nope-nope-nope-nope"}, {"Authorization", "Basic " + apiKey}} {
		rec := get(h, "/admin/api/overview", hdr...)
		is.Equal(rec.Code, 401)
		is.True(strings.Contains(rec.Body.String(), `"code":"invalid_api_key"`))
		is.True(!strings.Contains(rec.Body.String(), model))
	}
	rec := get(h, "/admin/api/overview", "Authorization", "Bearer "+apiKey)
	is.Equal(rec.Code, 200)
	var o struct {
		Version, Strategy string
		UpstreamHost      string `json:"upstream_host"`
		Models            []ops.AdminModel
		Config            map[string]string
	}
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &o))
	is.Equal(o.Version, "v-test")
	is.Equal(o.Strategy, "access_token")
	is.Equal(o.UpstreamHost, "team.postman.co")
	is.Equal(o.Models[0].Upstream, "GPT_55")
	is.Equal(o.Config["api_key"], "set")
	is.True(!strings.Contains(rec.Body.String(), apiKey))
	is.Equal(get(h, "/admin/api/live", "x-api-key", apiKey).Code, 200) // the API's other header works too
}

func TestTheRecentListKeepsTheLastHundredAPIRequestsNewestFirst(t *testing.T) {
	is := is.New(t)
	m := ops.NewMonitor(ops.MonitorConfig{})
	h, _ := newServer(t, fiveDeltas(), withAdmin(m))
	for i := range 130 {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(withFields(`,"stream":true`)))
		r.Header.Set("Authorization", "Bearer "+apiKey)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("x-request-id", "req-"+string(rune('A'+i%26))+"-"+itoa(i))
		h.ServeHTTP(rec, r)
		is.Equal(rec.Code, 200)
		_ = get(h, "/admin/api/live", "Authorization", "Bearer "+apiKey) // the page's polling is not listed
	}
	_ = get(h, "/v1/nothing")
	reqs, _ := m.Recent()
	is.Equal(len(reqs), 100)
	is.Equal(reqs[0].Route, "unmatched") // newest first; an unknown path is listed as such
	is.Equal(reqs[0].Status, 404)
	is.True(strings.HasSuffix(reqs[1].RequestID, "-129"))
	is.True(strings.HasSuffix(reqs[99].RequestID, "-31"))
	r := reqs[1]
	is.Equal(r.Route, "/v1/chat/completions")
	is.Equal(r.Model, model)
	is.True(r.Stream)
	is.True(r.TTFTMS != nil && *r.TTFTMS <= r.DurationMS)
	for _, r := range reqs {
		is.True(!strings.HasPrefix(r.Route, "/admin"))
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestTheMachineDrawingIsTheDeclaredTable(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, fiveDeltas(), withAdmin(ops.NewMonitor(ops.MonitorConfig{})))
	rec := get(h, "/admin/api/overview", "Authorization", "Bearer "+apiKey)
	var o struct {
		Machine struct {
			States []struct {
				Name  string
				X, Y  int
				Loops []string
			}
			Edges []struct {
				From, To string
				Rows     []string
			}
		}
	}
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &o))
	table := correlation.Table()
	is.Equal(len(o.Machine.States), len(table.States))
	x := map[string]int{}
	for _, s := range o.Machine.States {
		x[s.Name] = s.X
	}
	drawn := map[string]int{}
	for _, s := range o.Machine.States {
		for _, id := range s.Loops {
			drawn[id]++
		}
	}
	byID := map[string][2]string{}
	for _, r := range table.Rows {
		byID[r.ID] = [2]string{r.From, r.To}
	}
	for _, s := range o.Machine.States {
		for _, id := range s.Loops {
			is.Equal(byID[id], [2]string{s.Name, s.Name}) // a loop keeps its state
		}
	}
	for _, e := range o.Machine.Edges {
		is.True(e.From != e.To)
		for _, id := range e.Rows {
			drawn[id]++
			is.Equal(byID[id], [2]string{e.From, e.To}) // the edge joins the row's states
		}
	}
	for _, r := range table.Rows {
		is.Equal(drawn[r.ID], 1) // every declared row is drawn exactly once
	}
	is.Equal(len(drawn), len(table.Rows))
	// Columns follow the forward rows: a claim moves right, and so does every
	// row into a terminal state.
	is.True(x["INFLIGHT"] > x["PENDING"])
	is.True(x["CONSUMED"] > x["INFLIGHT"])
	is.True(x["REMOVED"] > x["CONSUMED"])
	is.True(x["REMOVED"] > x["EXPIRED"])
}

func TestMetricsAreServedOnlyWithAMonitor(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, fiveDeltas())
	is.Equal(get(h, "/metrics", "Authorization", "Bearer "+apiKey).Code, 404)
	h, _ = newServer(t, fiveDeltas(), withMonitor(ops.NewMonitor(ops.MonitorConfig{})))
	is.Equal(get(h, "/metrics").Code, 401)
	rec := get(h, "/metrics", "Authorization", "Bearer "+apiKey)
	is.Equal(rec.Code, 200)
	body, _ := io.ReadAll(rec.Body)
	is.True(strings.Contains(string(body), "pmgate_chat_concurrency_limit 4"))
	h, _ = newServer(t, fiveDeltas(), withMonitor(ops.NewMonitor(ops.MonitorConfig{})), func(c *httpapi.Config) {
		c.MetricsOpen = true
	})
	is.Equal(get(h, "/metrics").Code, 200)
}

func TestOnlyAPassingProbeReportVerifiesTheUpstream(t *testing.T) {
	is := is.New(t)
	for _, tc := range []struct {
		probe *ops.ProbeStatus
		want  bool
	}{{nil, false}, {&ops.ProbeStatus{Passed: false, Time: "2026-01-01T00:00:00Z"}, false}, {&ops.ProbeStatus{Passed: true, Time: "2026-01-01T00:00:00Z"}, true}} {
		h, _ := newServer(t, fiveDeltas(), withAdmin(ops.NewMonitor(ops.MonitorConfig{})), func(c *httpapi.Config) {
			if tc.probe != nil {
				c.Verification = func() (bool, map[string]any) {
					return tc.probe.Passed, map[string]any{"upstream_verified_at": tc.probe.Time, "upstream_report_digest": "sha256:x"}
				}
			}
		})
		var health, live struct {
			Verified bool             `json:"upstream_verified"`
			Probe    *ops.ProbeStatus `json:"probe"`
		}
		is.NoErr(json.Unmarshal(get(h, "/health").Body.Bytes(), &health))
		is.NoErr(json.Unmarshal(get(h, "/admin/api/live", "Authorization", "Bearer "+apiKey).Body.Bytes(), &live))
		is.Equal(health.Verified, tc.want) // /health and the page agree
		is.Equal(live.Verified, tc.want)
		is.Equal(live.Probe != nil, tc.probe != nil)
	}
}
