package ports_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/ports"
)

// A Percentage threshold is crossed when the reported usage reaches exactly
// that share of the reported limit, not before; other units are never judged,
// and without both numbers nothing is crossed.
func TestAThresholdIsCrossedExactlyAtItsShareOfTheLimit(t *testing.T) {
	t.Parallel()
	th := []ports.CreditThreshold{{Value: 50, Unit: "Percentage"}, {Value: 90, Unit: "Percentage"}, {Value: 10, Unit: "Credits"}}
	report := func(usage, limit int64) ports.CreditReport {
		return ports.CreditReport{Known: true, Usage: usage, Limit: limit, HasUsage: true, HasLimit: true, Thresholds: th}
	}
	for _, tc := range []struct {
		name       string
		r          ports.CreditReport
		crossed    []int64
		ratio      float64
		ratioKnown bool
	}{
		{"just below half", report(24999, 50000), nil, 0.49998, true},
		{"exactly half", report(25000, 50000), []int64{50}, 0.5, true},
		{"just below ninety", report(44999, 50000), []int64{50}, 0.89998, true},
		{"exactly ninety", report(45000, 50000), []int64{50, 90}, 0.9, true},
		{"past the limit", report(60000, 50000), []int64{50, 90}, 1.2, true},
		{"a zero limit", report(10, 0), nil, 0, false},
		{"no usage", ports.CreditReport{Known: true, Limit: 50000, HasLimit: true, Thresholds: th}, nil, 0, false},
		{"not known", ports.CreditReport{Usage: 45000, Limit: 50000, HasUsage: true, HasLimit: true, Thresholds: th}, nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var got []int64
			for _, c := range tc.r.Crossed() {
				is.Equal(c.Unit, "Percentage") // only percentages are judged
				got = append(got, c.Value)
			}
			is.Equal(got, tc.crossed) // the thresholds reached
			ratio, ok := tc.r.UsedRatio()
			is.Equal(ok, tc.ratioKnown) // a ratio only from both numbers and a positive limit
			is.Equal(ratio, tc.ratio)   // usage / limit
		})
	}
}
