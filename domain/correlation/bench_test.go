package correlation_test

import (
	"testing"
	"time"

	"github.com/pmgate/pmgate/domain/correlation"
)

// BenchmarkSelfLoop fires C10 (capacity pressure on a pending group): a row
// that changes nothing.
func BenchmarkSelfLoop(b *testing.B) {
	g := correlation.Group{State: correlation.Pending}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.NoteCapacityPressure(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStateChange fires C11 (cancel a pending group), which runs the
// tombstone's entry action.
func BenchmarkStateChange(b *testing.B) {
	p := correlation.Policy{PendingTTL: time.Minute, InflightTTL: time.Minute, TerminalTTL: time.Hour}
	now := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		g := correlation.Group{State: correlation.Pending}
		if _, err := g.Cancel(now, p); err != nil {
			b.Fatal(err)
		}
	}
}
