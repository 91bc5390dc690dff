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
	scrape := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{DisableCompression: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.settle(r.Context()) // count every event observed before the scrape
		scrape.ServeHTTP(w, r)
	})
}
