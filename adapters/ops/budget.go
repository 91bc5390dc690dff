package ops

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
)

// KeyBudget is one slot's budget as the control page and `gateway keys list`
// show it: its limits and today's and this month's dispatches (UTC).
type KeyBudget struct {
	Slot               string `json:"slot"`
	Scope              string `json:"scope"`
	RequestsPerMinute  int    `json:"requests_per_minute"` // 0: unlimited
	DispatchesPerDay   int    `json:"dispatches_per_day"`
	DispatchesPerMonth int    `json:"dispatches_per_month"`
	DispatchesToday    int    `json:"dispatches_today"`
	DispatchesMonth    int    `json:"dispatches_month"`
}

// keyBudgets is every current slot's budget; counts are absent (zero) when
// no ledger is configured or it cannot be read.
func (m *Monitor) keyBudgets(ctx context.Context) []KeyBudget {
	var bs map[string]usage.Budget
	if m.usage != nil {
		bs, _ = m.usage.Budgets(ctx)
	}
	var slots []ports.KeySlot
	if m.keySlots != nil {
		slots = m.keySlots()
	}
	out := make([]KeyBudget, 0, len(slots))
	for _, k := range slots {
		scope := "inference"
		if k.Admin {
			scope = "admin"
		}
		b := bs[k.ID]
		out = append(out, KeyBudget{Slot: k.ID, Scope: scope, RequestsPerMinute: k.Limits.RequestsPerMinute,
			DispatchesPerDay: k.Limits.DispatchesPerDay, DispatchesPerMonth: k.Limits.DispatchesPerMonth,
			DispatchesToday: b.DayDispatches, DispatchesMonth: b.MonthDispatches})
	}
	return out
}

// UsageRow is one daily row of the ledger as GET /admin/api/usage and
// `gateway usage --json` write it.
type UsageRow struct {
	Day                      string `json:"day"`
	Slot                     string `json:"slot"`
	API                      string `json:"api"`
	Model                    string `json:"model"`
	Strategy                 string `json:"strategy"`
	Outcome                  string `json:"outcome"`
	Requests                 int64  `json:"requests"`
	Dispatches               int64  `json:"dispatches"`
	QueryChars               int64  `json:"query_chars"`
	OutputChars              int64  `json:"output_chars"`
	ReportedRequests         int64  `json:"reported_requests"`
	ReportedPromptTokens     int64  `json:"reported_prompt_tokens"`
	ReportedCompletionTokens int64  `json:"reported_completion_tokens"`
	EstimatedInputTokens     int64  `json:"estimated_input_tokens"`
	EstimatedOutputTokens    int64  `json:"estimated_output_tokens"`
	DurationMS               int64  `json:"duration_ms"`
}

// UsageRowOf and Row convert between the ledger's row and its JSON form.
func UsageRowOf(r usage.Row) UsageRow {
	return UsageRow{Day: r.Day, Slot: r.Slot, API: r.API, Model: r.Model, Strategy: r.Strategy, Outcome: r.Outcome,
		Requests: r.Requests, Dispatches: r.Dispatches, QueryChars: r.QueryChars, OutputChars: r.OutputChars,
		ReportedRequests: r.ReportedRequests, ReportedPromptTokens: r.ReportedPromptTokens,
		ReportedCompletionTokens: r.ReportedCompletionTokens, EstimatedInputTokens: r.EstimatedInputTokens,
		EstimatedOutputTokens: r.EstimatedOutputTokens, DurationMS: r.DurationMS}
}

// Row is the ledger row of u.
func (u UsageRow) Row() usage.Row {
	return usage.Row{Key: usage.Key{Day: u.Day, Slot: u.Slot, API: u.API, Model: u.Model, Strategy: u.Strategy, Outcome: u.Outcome},
		Requests: u.Requests, Dispatches: u.Dispatches, QueryChars: u.QueryChars, OutputChars: u.OutputChars,
		ReportedRequests: u.ReportedRequests, ReportedPromptTokens: u.ReportedPromptTokens,
		ReportedCompletionTokens: u.ReportedCompletionTokens, EstimatedInputTokens: u.EstimatedInputTokens,
		EstimatedOutputTokens: u.EstimatedOutputTokens, DurationMS: u.DurationMS}
}

// UsageReport is the body of GET /admin/api/usage.
type UsageReport struct {
	Since string      `json:"since"`
	Until string      `json:"until"`
	Rows  []UsageRow  `json:"rows"`
	Keys  []KeyBudget `json:"keys"`
	// UpstreamCredits is the plan as the service last reported it to the
	// process that answered (per process; absent when read from the store
	// directly, which does not hold it).
	UpstreamCredits *UpstreamCredits `json:"upstream_credits,omitempty"`
}

// maxUsageDays bounds one report's range.
const maxUsageDays = 366

// Usage serves GET /admin/api/usage?since=YYYY-MM-DD&until=YYYY-MM-DD
// (UTC days, both included; default: the last seven days). The router serves
// it only when the monitor has a ledger (ServesUsage).
func (p *Page) Usage(w http.ResponseWriter, r *http.Request) error {
	m := p.m
	now := m.now().UTC()
	since, until := usage.Day(now.AddDate(0, 0, -6)), usage.Day(now)
	q := r.URL.Query()
	for _, f := range []struct {
		name string
		dst  *string
	}{{"since", &since}, {"until", &until}} {
		if v := q.Get(f.name); v != "" {
			if _, err := time.Parse(time.DateOnly, v); err != nil {
				return invalid(f.name, "A day is YYYY-MM-DD (UTC).")
			}
			*f.dst = v
		}
	}
	a, _ := time.Parse(time.DateOnly, since)
	b, _ := time.Parse(time.DateOnly, until)
	if b.Before(a) || b.Sub(a) > maxUsageDays*24*time.Hour {
		return invalid("until", "until must not be before since, and a report spans at most 366 days.")
	}
	rows, err := m.usage.Report(r.Context(), since, until)
	if err != nil {
		return err
	}
	out := UsageReport{Since: since, Until: until, Rows: make([]UsageRow, 0, len(rows)), Keys: m.keyBudgets(r.Context()),
		UpstreamCredits: m.Credits()}
	for _, row := range rows {
		out.Rows = append(out.Rows, UsageRowOf(row))
	}
	return writeValue(w, out, "usage report")
}

// ServesUsage reports whether the monitor has a usage ledger to report.
func (p *Page) ServesUsage() bool { return p.m.usage != nil }

// refusalCodes are the causes the per-slot refusal counter distinguishes: a
// closed set, so the label set stays bounded by the configured slots.
var refusalCodes = map[errs.Code]bool{
	errs.KeyRateLimited: true, errs.KeyQuotaExhausted: true, errs.ConcurrencyLimitExceeded: true,
	errs.UpstreamRateLimited: true, errs.UpstreamQuotaExhausted: true,
}

// budgetCollector reports each current slot's dispatches today and this
// month and its limits at scrape time. Labels: the configured slot ids and
// the window ("day", "month"): bounded by the key file.
type budgetCollector struct{ m *Monitor }

var (
	descKeyDispatches = prometheus.NewDesc("pmgate_key_dispatches", "Upstream dispatches of an API key slot in the current UTC day or month (the counts its quotas are enforced on).", []string{"slot", "window"}, nil)
	descKeyLimit      = prometheus.NewDesc("pmgate_key_dispatch_limit", "An API key slot's dispatch quota per UTC day or month (absent: unlimited).", []string{"slot", "window"}, nil)
	descKeyRPM        = prometheus.NewDesc("pmgate_key_requests_per_minute_limit", "An API key slot's requests-per-minute limit (absent: unlimited).", []string{"slot"}, nil)
)

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descKeyDispatches
	ch <- descKeyLimit
	ch <- descKeyRPM
}

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, k := range c.m.keyBudgets(ctx) {
		ch <- prometheus.MustNewConstMetric(descKeyDispatches, prometheus.GaugeValue, float64(k.DispatchesToday), k.Slot, "day")
		ch <- prometheus.MustNewConstMetric(descKeyDispatches, prometheus.GaugeValue, float64(k.DispatchesMonth), k.Slot, "month")
		if k.DispatchesPerDay > 0 {
			ch <- prometheus.MustNewConstMetric(descKeyLimit, prometheus.GaugeValue, float64(k.DispatchesPerDay), k.Slot, "day")
		}
		if k.DispatchesPerMonth > 0 {
			ch <- prometheus.MustNewConstMetric(descKeyLimit, prometheus.GaugeValue, float64(k.DispatchesPerMonth), k.Slot, "month")
		}
		if k.RequestsPerMinute > 0 {
			ch <- prometheus.MustNewConstMetric(descKeyRPM, prometheus.GaugeValue, float64(k.RequestsPerMinute), k.Slot)
		}
	}
}

// causeOf is the control page's name for an answer's cause: its stable code,
// or the status class for an answer without one.
func causeOf(status int, code string) string {
	if code != "" {
		return code
	}
	return strings.TrimSuffix(http.StatusText(status), " ")
}
