package httpapi

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// pathMetrics is the Prometheus scrape endpoint.
const pathMetrics = "/metrics"

// handleMetrics serves the monitor's registry in the Prometheus text format
// (or OpenMetrics when the scraper asks for it). It needs an API key, the same
// slots as the API, unless MetricsOpen (METRICS_AUTH=none, loopback only).
func (s *server) handleMetrics() http.Handler {
	m := s.cfg.Monitor
	// The chat concurrency gauges read the server's semaphore at scrape time.
	// A monitor shared by several servers (tests) keeps the first one's.
	_ = m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pmgate_chat_requests_in_flight",
		Help: "Chat requests holding a concurrency slot now."}, func() float64 { return float64(len(s.sem)) }))
	_ = m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pmgate_chat_concurrency_limit",
		Help: "The concurrency limit of chat requests (MAX_CONCURRENT_REQUESTS)."}, func() float64 { return float64(cap(s.sem)) }))
	scrape := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{DisableCompression: true})
	var h http.Handler = scrape
	_ = m.reg.Register(&budgetCollector{s: s})
	if s.cfg.MetricsOpen {
		return h
	}
	return s.requireAdmin(h)
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
	m.observeRequest(RequestRecord{Time: start, RequestID: ri.id, Route: routeOf(r), Status: status, Code: string(ri.code),
		Model: ri.model, Slot: ri.slot, Stream: ri.stream, ToolCalls: ri.toolCalls}, ri.code, start, ri.firstToken, s.now())
}
