package ops_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/pmgate/pmgate/adapters/ops"
)

// The cost the metrics add to one request: the monitor's recording alone
// (counter, duration and time-to-first-token histograms, the recent list),
// sequential and from every core at once.
func BenchmarkMonitorObserveRequest(b *testing.B) {
	m := ops.NewMonitor(ops.MonitorConfig{})
	start := time.Now()
	first, end := start.Add(3*time.Millisecond), start.Add(40*time.Millisecond)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		m.ObserveRequestAt("/v1/chat/completions", 200, "", start, first, end)
	}
	reportCPU(b, cpu)
}

func BenchmarkMonitorObserveRequestParallel(b *testing.B) {
	m := ops.NewMonitor(ops.MonitorConfig{})
	start := time.Now()
	first, end := start.Add(3*time.Millisecond), start.Add(40*time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveRequestAt("/v1/chat/completions", 200, "", start, first, end)
		}
	})
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
