package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/ops"
)

// The same request through the whole handler, without and with a monitor:
// the difference is what a request pays for the metrics end to end.
func BenchmarkModelsRequest(b *testing.B) {
	for _, tc := range []struct {
		name    string
		monitor httpapi.Monitor
	}{{"without_metrics", nil}, {"with_metrics", ops.NewMonitor(ops.MonitorConfig{})}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := testConfig()
			cfg.Monitor = tc.monitor
			h := httpapi.NewServer(cfg, fiveDeltas(), slog.New(slog.DiscardHandler))
			r := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
			r.Header.Set("Authorization", "Bearer "+apiKey)
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// cpuTime is the CPU time the process used so far. On a machine shared with
// other work the wall-clock ns/op of a benchmark also counts the time the
// benchmark waited for a core; cpu-ns/op counts only the time it ran.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(cpuTime()-since)/float64(b.N), "cpu-ns/op")
}
