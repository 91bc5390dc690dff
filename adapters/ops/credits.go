package ops

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pmgate/pmgate/ports"
)

// UpstreamCredits is the owner's Postman plan as the service's last usage
// event reported it, as /health, the control page, /admin/api/usage (and so
// `gateway usage --json`) show it: labelled as reported and when, never
// turned into "credits left now" (docs/USAGE.md). It is kept per process.
type UpstreamCredits struct {
	Known bool `json:"known"`
	// Strategy labels the report (never the credential).
	Strategy string `json:"strategy"`
	// ReportedAt is when the service reported it; AgeS how long ago.
	ReportedAt *time.Time `json:"reported_at"`
	AgeS       float64    `json:"age_s"`
	// Label says it in words: "as reported by the service at 14:02 UTC".
	Label string `json:"label"`
	// NotNow says what the numbers are not.
	NotNow   string `json:"not"`
	State    string `json:"usage_state"`
	UserType string `json:"user_type"`
	// Usage, Limit, Overage and Spillage are the plan's numbers in the
	// service's own unit (null when not reported).
	Usage    *int64 `json:"usage"`
	Limit    *int64 `json:"limit"`
	Overage  *int64 `json:"overage"`
	Spillage *int64 `json:"spillage"`
	// UsedRatio is usage/limit (null without both): the unit cancels out.
	UsedRatio    *float64                `json:"used_ratio"`
	AllowOverage *bool                   `json:"allow_overage"`
	TeamPooled   *bool                   `json:"team_pooled"`
	CycleStart   *time.Time              `json:"cycle_start"`
	CycleEnd     *time.Time              `json:"cycle_end"`
	Thresholds   []ports.CreditThreshold `json:"warning_thresholds"`
	// Crossed are the Percentage thresholds the reported ratio reached.
	Crossed []ports.CreditThreshold `json:"thresholds_crossed"`
}

// creditsNotNow is what every view of the report says its numbers are not.
const creditsNotNow = "Not the credits left now: the report may come before the request's own cost, " +
	"the unit is not stated and has changed between plans, an exhausted state is reported late, " +
	"and a pooled plan is spent by the whole team."

// CreditsView is the report as the views show it, at now; nil when none is
// configured (a nil source).
func CreditsView(src func() ports.CreditReport, now time.Time) *UpstreamCredits {
	if src == nil {
		return nil
	}
	r := src()
	out := &UpstreamCredits{Known: r.Known, Strategy: r.Strategy, NotNow: creditsNotNow,
		Thresholds: []ports.CreditThreshold{}, Crossed: []ports.CreditThreshold{}}
	if !r.Known {
		out.Label = "no report yet: the service reports the plan in every chat stream"
		return out
	}
	seen := r.Seen.UTC()
	out.ReportedAt, out.AgeS = &seen, max(now.Sub(seen), 0).Seconds()
	out.Label = "as reported by the service at " + seen.Format("15:04 UTC") + " on " + seen.Format(time.DateOnly)
	out.State, out.UserType = r.State, r.UserType
	num := func(v int64, ok bool) *int64 {
		if !ok {
			return nil
		}
		return &v
	}
	out.Usage, out.Limit = num(r.Usage, r.HasUsage), num(r.Limit, r.HasLimit)
	out.Overage, out.Spillage = num(r.Overage, r.HasOverage), num(r.Spillage, r.HasSpillage)
	if ratio, ok := r.UsedRatio(); ok {
		out.UsedRatio = &ratio
	}
	out.AllowOverage, out.TeamPooled = r.AllowOverage, r.TeamPooled
	if !r.CycleStart.IsZero() {
		t := r.CycleStart.UTC()
		out.CycleStart = &t
	}
	if !r.CycleEnd.IsZero() {
		t := r.CycleEnd.UTC()
		out.CycleEnd = &t
	}
	out.Thresholds = append(out.Thresholds, r.Thresholds...)
	out.Crossed = append(out.Crossed, r.Crossed()...)
	return out
}

// Credits is the monitor's view of the report (/health, the control page and
// the usage report show it); nil without a source.
func (m *Monitor) Credits() *UpstreamCredits { return CreditsView(m.credits, m.now()) }

// creditStates is the closed set of the state gauge's label.
var creditStates = []string{"AVAILABLE", "EXCEEDED", "UNAVAILABLE", "BLOCKED"}

// creditsCollector reports the report at each scrape, once a stream carried
// one. Labels: the strategy (one per process) and, for the state, the closed
// set of states.
type creditsCollector struct{ m *Monitor }

var (
	descCreditsUsage = prometheus.NewDesc("pmgate_upstream_credits_usage",
		"The plan's usage as the service last reported it, in the service's own unit (not stated; not credits left now).", []string{"strategy"}, nil)
	descCreditsLimit = prometheus.NewDesc("pmgate_upstream_credits_limit",
		"The plan's limit as the service last reported it, in the service's own unit.", []string{"strategy"}, nil)
	descCreditsRatio = prometheus.NewDesc("pmgate_upstream_credits_used_ratio",
		"usage/limit as the service last reported them (the unit cancels out).", []string{"strategy"}, nil)
	descCreditsState = prometheus.NewDesc("pmgate_upstream_credits_state",
		"1 for the usageState the service last reported, 0 for the others.", []string{"strategy", "state"}, nil)
	descCreditsSeen = prometheus.NewDesc("pmgate_upstream_credits_reported_timestamp_seconds",
		"When the service reported the plan (Unix seconds): every other credits gauge is as of this time.", []string{"strategy"}, nil)
	descCreditsCycleEnd = prometheus.NewDesc("pmgate_upstream_credits_cycle_end_timestamp_seconds",
		"When the plan's usage cycle ends, as reported (Unix seconds).", []string{"strategy"}, nil)
	descCreditsCrossed = prometheus.NewDesc("pmgate_upstream_credits_warning_thresholds_crossed",
		"How many of the plan's warning thresholds (in percent) the reported usage/limit reached.", []string{"strategy"}, nil)
)

func (c *creditsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCreditsUsage, descCreditsLimit, descCreditsRatio, descCreditsState, descCreditsSeen,
		descCreditsCycleEnd, descCreditsCrossed} {
		ch <- d
	}
}

func (c *creditsCollector) Collect(ch chan<- prometheus.Metric) {
	if c.m.credits == nil {
		return
	}
	r := c.m.credits()
	if !r.Known {
		return // no stream carried a report yet
	}
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{r.Strategy}, labels...)...)
	}
	g(descCreditsSeen, float64(r.Seen.UnixMilli())/1000)
	if r.HasUsage {
		g(descCreditsUsage, float64(r.Usage))
	}
	if r.HasLimit {
		g(descCreditsLimit, float64(r.Limit))
	}
	if ratio, ok := r.UsedRatio(); ok {
		g(descCreditsRatio, ratio)
		g(descCreditsCrossed, float64(len(r.Crossed())))
	}
	if r.State != "" {
		for _, s := range creditStates {
			v := 0.0
			if s == r.State {
				v = 1
			}
			g(descCreditsState, v, s)
		}
	}
	if !r.CycleEnd.IsZero() {
		g(descCreditsCycleEnd, float64(r.CycleEnd.Unix()))
	}
}
