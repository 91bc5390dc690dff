package emulator

import "time"

// Credits is the owner's Postman plan as the emulator's usage events report
// it. The defaults are the values of ps2Api's captured-looking usage event
// (internal/provider/ossfunc_test.go:37): a free plan (userType FREE_USER,
// limit 50000, usage 28713, spillage 2, no overage allowed, a pooled team, one
// warning threshold at 50 %), with its monthly cycle (23:22:55 UTC on the
// 11th) moved to the one that holds the emulator's start. Every usage
// event adds PerQuery to Usage, up to the limit; the state stays what it was
// set to, as the service's EXCEEDED is known to arrive late. A stream that
// reports no usage (a failure, a cut stream) charges nothing. A test moves the
// values with SetCredits.
type Credits struct {
	UserType string
	// State is the usageState of a normal stream's usage event (the
	// scenarios that report EXCEEDED or BLOCKED keep theirs).
	State                           string
	Limit, Usage, Overage, Spillage int
	AllowOverage, TeamPooled        bool
	// Thresholds are the warning thresholds, in percent.
	Thresholds           []int
	CycleStart, CycleEnd time.Time
	// PerQuery is added to Usage by every usage event sent. It is not a
	// measured cost: what one query costs the service's plan is not known.
	PerQuery int
}

// The default plan (ps2Api ossfunc_test.go:37).
const (
	defaultCreditLimit    = 50000
	defaultCreditUsage    = 28713
	defaultCreditSpillage = 2
	defaultCreditPerQuery = 100
)

// DefaultCredits is the plan a new emulator reports at now.
func DefaultCredits(now time.Time) Credits {
	now = now.UTC()
	start := time.Date(now.Year(), now.Month(), 11, 23, 22, 55, 0, time.UTC)
	if start.After(now) {
		start = start.AddDate(0, -1, 0)
	}
	return Credits{UserType: "FREE_USER", State: "AVAILABLE", Limit: defaultCreditLimit, Usage: defaultCreditUsage,
		Spillage: defaultCreditSpillage, TeamPooled: true, Thresholds: []int{50},
		CycleStart: start, CycleEnd: start.AddDate(0, 1, 0), PerQuery: defaultCreditPerQuery}
}

// SetCredits replaces the plan the next usage events report.
func (s *Server) SetCredits(c Credits) {
	c.Thresholds = append([]int(nil), c.Thresholds...)
	s.credMu.Lock()
	s.credits = c
	s.credMu.Unlock()
}

// Credits returns the plan as the last usage event reported it.
func (s *Server) Credits() Credits {
	s.credMu.Lock()
	defer s.credMu.Unlock()
	c := s.credits
	c.Thresholds = append([]int(nil), c.Thresholds...)
	return c
}

// chargeCredits adds one answered stream's PerQuery to the plan's usage (at
// most up to its limit) and returns the plan its usage event reports.
func (s *Server) chargeCredits() Credits {
	s.credMu.Lock()
	defer s.credMu.Unlock()
	s.credits.Usage = max(min(s.credits.Usage+s.credits.PerQuery, s.credits.Limit), s.credits.Usage)
	c := s.credits
	c.Thresholds = append([]int(nil), c.Thresholds...)
	return c
}

// planUsage is the plan part of a usage event.
func planUsage(c Credits, state string) usageData {
	spill, overage, pooled := c.Spillage, c.AllowOverage, c.TeamPooled
	u := usageData{Limit: c.Limit, Usage: c.Usage, Overage: c.Overage, UserType: c.UserType, UsageState: state,
		Spillage: &spill, AllowOverage: &overage, IsTeamPooled: &pooled}
	if u.UsageState == "AVAILABLE" && c.State != "" {
		u.UsageState = c.State
	}
	for _, t := range c.Thresholds {
		u.WarningThresholds = append(u.WarningThresholds, map[string]any{"value": t, "unit": "Percentage"})
	}
	if !c.CycleStart.IsZero() || !c.CycleEnd.IsZero() {
		u.UsageCycle = map[string]string{"start": c.CycleStart.UTC().Format(time.RFC3339), "end": c.CycleEnd.UTC().Format(time.RFC3339)}
	}
	return u
}
