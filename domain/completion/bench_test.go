package completion_test

import (
	"testing"

	"github.com/pmgate/pmgate/domain/completion"
)

func BenchmarkTrackerOutput(b *testing.B) {
	tr := completion.NewTracker(completion.RuleUsageAfterOutput)
	if _, err := tr.Fire(completion.Output, ""); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.Fire(completion.Output, ""); err != nil {
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
		_, _ = tr.Fire(completion.Metadata, "")
		for range 47 {
			_, _ = tr.Fire(completion.Output, "")
		}
		_, _ = tr.Fire(completion.Metadata, "")
		_, _ = tr.Fire(completion.Usage, "")
		_, _ = tr.Fire(completion.EOF, "")
		if !tr.Outcome().Complete {
			b.Fatalf("stream did not complete: %+v", tr.Outcome())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*perStream), "ns/event")
}

// BenchmarkNewTrackerCold measures a tracker that never reaches an outcome (its
// rule's machine is built once and shared).
func BenchmarkNewTrackerCold(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = completion.NewTracker(completion.RuleUsageAfterOutput)
	}
}

// BenchmarkTrackerStateChange measures one real state change
// (OUTPUT → OUTPUT_USAGE → OUTPUT …).
func BenchmarkTrackerStateChange(b *testing.B) {
	tr := completion.NewTracker(completion.RuleUsageAfterOutput)
	_, _ = tr.Fire(completion.Output, "")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = tr.Fire(completion.Usage, "")
		_, _ = tr.Fire(completion.Output, "")
	}
}
