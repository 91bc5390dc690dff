package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
)

// apiOf names the API of a chat route for the ledger.
func apiOf(path string) string {
	switch path {
	case pathChat:
		return usage.APIChat
	case pathResponses:
		return usage.APIResponses
	}
	return usage.APIMessages
}

// recordUsage counts one finished chat request: in the ledger (Config.Usage)
// and in the per-slot metrics.
func (s *server) recordUsage(r *http.Request, m *app.Meter, start time.Time) {
	ri := infoFrom(r.Context())
	outcome := string(ri.code)
	if outcome == "" {
		outcome = "ok"
	}
	if mon := s.cfg.Monitor; mon != nil {
		mon.observeSlot(ri.slot, m.Dispatches, ri.code)
	}
	if s.cfg.Usage == nil || ri.slot == "" {
		return
	}
	e := usage.Entry{At: start, Slot: ri.slot, API: apiOf(r.URL.Path), Model: ri.model, Strategy: s.cfg.Strategy,
		Outcome: outcome, Dispatches: m.Dispatches, QueryChars: m.QueryChars, OutputChars: m.OutputChars,
		Duration: s.now().Sub(start)}
	if u := m.Usage; u != nil {
		e.Reported = true
		if u.PromptTokens != nil {
			e.PromptTokens = *u.PromptTokens
		}
		if u.CompletionTokens != nil {
			e.CompletionTokens = *u.CompletionTokens
		}
	}
	s.cfg.Usage.Record(e)
}

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
func (s *server) keyBudgets(ctx context.Context) []KeyBudget {
	var bs map[string]usage.Budget
	if s.cfg.Usage != nil {
		bs, _ = s.cfg.Usage.Budgets(ctx)
	}
	slots := s.keys.Slots()
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

// adminUsage serves GET /admin/api/usage?since=YYYY-MM-DD&until=YYYY-MM-DD
// (UTC days, both included; default: the last seven days).
func (s *server) adminUsage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Usage == nil {
			s.writeError(w, r, errNoRoute)
			return
		}
		now := s.now().UTC()
		since, until := usage.Day(now.AddDate(0, 0, -6)), usage.Day(now)
		q := r.URL.Query()
		for _, p := range []struct {
			name string
			dst  *string
		}{{"since", &since}, {"until", &until}} {
			if v := q.Get(p.name); v != "" {
				if _, err := time.Parse(time.DateOnly, v); err != nil {
					s.writeError(w, r, invalid(p.name, "A day is YYYY-MM-DD (UTC)."))
					return
				}
				*p.dst = v
			}
		}
		a, _ := time.Parse(time.DateOnly, since)
		b, _ := time.Parse(time.DateOnly, until)
		if b.Before(a) || b.Sub(a) > maxUsageDays*24*time.Hour {
			s.writeError(w, r, invalid("until", "until must not be before since, and a report spans at most 366 days."))
			return
		}
		rows, err := s.cfg.Usage.Report(r.Context(), since, until)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out := UsageReport{Since: since, Until: until, Rows: make([]UsageRow, 0, len(rows)), Keys: s.keyBudgets(r.Context())}
		if m := s.cfg.Monitor; m != nil {
			out.UpstreamCredits = m.upstreamCredits()
		}
		for _, row := range rows {
			out.Rows = append(out.Rows, UsageRowOf(row))
		}
		s.writeValue(w, r, out, "usage report")
	})
}

// refusalCodes are the causes the per-slot refusal counter distinguishes: a
// closed set, so the label set stays bounded by the configured slots.
var refusalCodes = map[errs.Code]bool{
	errs.KeyRateLimited: true, errs.KeyQuotaExhausted: true, errs.ConcurrencyLimitExceeded: true,
	errs.UpstreamRateLimited: true, errs.UpstreamQuotaExhausted: true,
}

// budgetCollector reports each current slot's dispatches today and this
// month and its limits at scrape time. Labels: the configured slot ids and
// the window ("day", "month"): bounded by the key file.
type budgetCollector struct{ s *server }

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
	for _, k := range c.s.keyBudgets(ctx) {
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
