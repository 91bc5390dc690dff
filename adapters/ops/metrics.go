package ops

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the monitor's registry at /metrics in the Prometheus text
// format (or OpenMetrics when the scraper asks for it). The router
// (adapters/httpapi) puts an API key of admin scope in front of it, the same
// slots as the API, unless METRICS_AUTH=none (loopback only).
func (m *Monitor) Handler() http.Handler {
	// The monitor counts inline (in the observing goroutine): a scrape finds
	// every event observed before it without waiting.
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{DisableCompression: true})
}
