package ops

import (
	"time"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// ObserveRequestAt runs the monitor's per-request recording, for benchmarks.
func (m *Monitor) ObserveRequestAt(route string, status int, code string, start, firstToken, end time.Time) {
	m.ObserveRequest(ports.AnsweredRequest{Start: start, FirstToken: firstToken, End: end, RequestID: "bench", Route: route,
		Status: status, Code: errs.Code(code), Model: "m"})
}
