package ports

import "time"

// CreditReport is the owner's Postman plan as the service's last usage event
// reported it (every chat stream carries one; docs/USAGE.md, "Postman
// credits as the service reports them"). It is what the service said, when it
// said it, never an estimate: the gateway neither counts its own dispatches
// against it nor extrapolates it. Its numbers are not "credits left now": the
// unit is not stated (it looks like millicredits but has drifted between
// plans), the report may come before the turn's own cost, an exhausted state
// is known to arrive late, and a pooled plan is spent by every member of the
// team.
//
// The control page, /metrics, /health and `gateway usage` show it, labelled
// by Strategy (never by a credential).
type CreditReport struct {
	// Known: a usage event carried a readable usageState, limit or usage;
	// every other field is meaningless without it.
	Known bool
	// Strategy labels the report: the upstream strategy whose credential the
	// service reported on.
	Strategy string
	// State is usageState as reported: AVAILABLE, EXCEEDED, UNAVAILABLE or
	// BLOCKED ("" when the event carried none).
	State string
	// UserType is userType as reported (FREE_USER, PAID_USER, …; "" when
	// absent or not an identifier).
	UserType string
	// Limit, Usage, Overage and Spillage are the plan's numbers as reported,
	// in the service's own unit; the Has flags say which were present.
	Limit, Usage, Overage, Spillage             int64
	HasLimit, HasUsage, HasOverage, HasSpillage bool
	// AllowOverage and TeamPooled are allowOverage and isTeamPooled (nil when
	// absent).
	AllowOverage, TeamPooled *bool
	// Thresholds are the plan's warningThresholds, in the order sent (at
	// most MaxCreditThresholds).
	Thresholds []CreditThreshold
	// CycleStart and CycleEnd are usageCycle.start and .end (zero when absent
	// or not RFC 3339): when the plan's allowance renews.
	CycleStart, CycleEnd time.Time
	// Seen is when the usage event arrived.
	Seen time.Time
}

// MaxCreditThresholds bounds the warning thresholds kept of one report.
const MaxCreditThresholds = 8

// CreditThreshold is one of the plan's warning thresholds (the service sends
// {"value":50,"unit":"Percentage"}).
type CreditThreshold struct {
	Value int64  `json:"value"`
	Unit  string `json:"unit"`
}

// ThresholdPercentage is the unit of a threshold on the used/limit ratio.
const ThresholdPercentage = "Percentage"

// UsedRatio is usage/limit as reported: the one number of the report whose
// unit cancels out. ok is false when either is missing or the limit is 0.
func (r CreditReport) UsedRatio() (ratio float64, ok bool) {
	if !r.Known || !r.HasLimit || !r.HasUsage || r.Limit <= 0 {
		return 0, false
	}
	return float64(r.Usage) / float64(r.Limit), true
}

// Crossed is the one rule of the warning thresholds: the Percentage
// thresholds the reported used/limit ratio has reached (usage*100 >=
// value*limit, in integers, so 50 % is crossed at exactly half). A threshold
// in another unit is never reported as crossed: its meaning is not known.
func (r CreditReport) Crossed() []CreditThreshold {
	if _, ok := r.UsedRatio(); !ok {
		return nil
	}
	var out []CreditThreshold
	for _, t := range r.Thresholds {
		if t.Unit == ThresholdPercentage && t.Value > 0 && t.Value <= 100_000 && r.Usage*100 >= t.Value*r.Limit {
			out = append(out, t)
		}
	}
	return out
}
