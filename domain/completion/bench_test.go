package completion_test

import (
	"testing"

	"github.com/pmgate/pmgate/domain/completion"
)

func BenchmarkTrackerOutput(b *testing.B) {
	tr := completion.NewTracker(completion.RuleUsageAfterOutput)
	if _, err := tr.Output(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.Output(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTrackerWholeStream builds a tracker and feeds a 50-event stream
// (metadata, 47 outputs, metadata, usage) and a clean EOF.
func BenchmarkTrackerWholeStream(b *testing.B) {
	const perStream = 51
	b.ReportAllocs()
	iters := 0
	for b.Loop() {
		iters++
		tr := completion.NewTracker(completion.RuleUsageAfterOutput)
		_, _ = tr.Metadata()
		for range 47 {
			_, _ = tr.Output()
		}
		_, _ = tr.Metadata()
		_, _ = tr.Usage()
		_, _ = tr.EOF(false)
		if !tr.Outcome().Complete {
			b.Fatalf("stream did not complete: %+v", tr.Outcome())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*perStream), "ns/event")
}

// BenchmarkNewTrackerCold measures a tracker that never reaches an outcome, so
// its machine never returns to the pool: every iteration configures a stateless
// machine from the rows. This is the cost the pool saves.
func BenchmarkNewTrackerCold(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = completion.NewTracker(completion.RuleUsageAfterOutput)
	}
}

// BenchmarkTrackerStateChange measures one real state change through the
// stateless machine (OUTPUT → OUTPUT_USAGE → OUTPUT …).
func BenchmarkTrackerStateChange(b *testing.B) {
	tr := completion.NewTracker(completion.RuleUsageAfterOutput)
	_, _ = tr.Output()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = tr.Usage()
		_, _ = tr.Output()
	}
}
