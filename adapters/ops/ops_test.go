package ops_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func scrape(t *testing.T, m *ops.Monitor) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

// What the ingress reports shows in /metrics and the recent list: a watched
// route's series exist before its first request, the ingress's concurrency
// slots are read at scrape time, a request of the operator's own views is
// counted but not listed, and a route the ingress did not announce is still
// counted under its own name.
func TestTheMonitorCountsEveryAnsweredRequestAndListsOnlyTheAPIs(t *testing.T) {
	is := is.New(t)
	m := ops.NewMonitor(ops.MonitorConfig{})
	inFlight := 0
	m.Watch([]string{"/v1/chat/completions", "/admin/api/live"}, func() int { return inFlight }, 4)
	body := scrape(t, m)
	is.True(strings.Contains(body, `pmgate_http_requests_total{code="none",route="/v1/chat/completions",status="200"} 0`))
	is.True(strings.Contains(body, "pmgate_chat_concurrency_limit 4"))
	start := time.Now()
	inFlight = 2
	m.ObserveRequest(ports.AnsweredRequest{Start: start, End: start.Add(time.Millisecond), RequestID: "a", Route: "/v1/chat/completions",
		Status: 200, Model: "pm-test", Slot: "router"})
	m.ObserveRequest(ports.AnsweredRequest{Start: start, End: start, RequestID: "b", Route: "/admin/api/live", Operator: true, Status: 200})
	m.ObserveRequest(ports.AnsweredRequest{Start: start, End: start, RequestID: "c", Route: "/v1/other", Status: 404,
		Code: errs.InvalidRequest})
	body = scrape(t, m)
	is.True(strings.Contains(body, `pmgate_http_requests_total{code="none",route="/v1/chat/completions",status="200"} 1`))
	is.True(strings.Contains(body, `pmgate_http_requests_total{code="none",route="/admin/api/live",status="200"} 1`))
	is.True(strings.Contains(body, `pmgate_http_requests_total{code="invalid_request",route="/v1/other",status="404"} 1`))
	is.True(strings.Contains(body, `pmgate_key_requests_total{slot="router"} 1`))
	is.True(strings.Contains(body, "pmgate_chat_requests_in_flight 2"))
	reqs, _ := m.Recent()
	is.Equal(len(reqs), 2) // the page's own polling is not listed
	is.Equal(reqs[0].RequestID, "c")
	is.Equal(reqs[1].RequestID, "a")
	is.Equal(reqs[1].DurationMS, 1.0)
	is.True(reqs[1].TTFTMS == nil) // no token: null, not zero
}

// A control page handler that refuses returns the refusal and writes
// nothing, so that the router writes the one answer; the refusal names its
// parameter to the router's error writer.
func TestTheUsageReportReturnsItsRefusalUnwritten(t *testing.T) {
	is := is.New(t)
	u := app.NewUsage(memstore.NewUsage(), porttest.NewClock(porttest.T0), slog.New(slog.DiscardHandler), 90)
	p := ops.NewPage(ops.AdminInfo{}, ops.NewMonitor(ops.MonitorConfig{Usage: u}))
	is.True(p.ServesUsage())
	for _, tc := range []struct{ query, param, detail string }{
		{"since=2026-13-01", "since", "since: A day is YYYY-MM-DD (UTC)."},
		{"since=2026-11-29&until=2026-11-28", "until", "until: until must not be before since, and a report spans at most 366 days."},
	} {
		rec := httptest.NewRecorder()
		err := p.Usage(rec, httptest.NewRequest(http.MethodGet, "/admin/api/usage?"+tc.query, nil))
		is.True(err != nil)
		is.Equal(rec.Body.Len(), 0)    // nothing written
		is.Equal(len(rec.Header()), 0) // not even a header
		is.Equal(errs.CodeOf(err), errs.InvalidRequest)
		named, ok := err.(interface {
			PublicParam() string
			PublicDetail() string
		})
		is.True(ok)
		is.Equal(named.PublicParam(), tc.param)
		is.Equal(named.PublicDetail(), tc.detail)
	}
	rec := httptest.NewRecorder()
	is.NoErr(p.Usage(rec, httptest.NewRequest(http.MethodGet, "/admin/api/usage?since=2026-11-28&until=2026-11-28", nil)))
	is.True(strings.HasPrefix(rec.Body.String(), `{"since":"2026-11-28","until":"2026-11-28","rows":[],"keys":[]`))
	is.True(!ops.NewPage(ops.AdminInfo{}, ops.NewMonitor(ops.MonitorConfig{})).ServesUsage()) // no ledger: no report
}
