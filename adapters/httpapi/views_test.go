package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/keyring"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports/porttest"
)

// budgetViews is a server whose admin slot "router" has a daily and a
// monthly quota and, at T0 on the returned clock, 2 dispatches today and 7
// this month.
func budgetViews(t *testing.T) (http.Handler, *porttest.Clock) {
	t.Helper()
	router := slotOf("router", routerKey, nil, 0)
	router.Scope = keyring.ScopeAdmin
	router.Limits = usage.Limits{DispatchesPerDay: 5, DispatchesPerMonth: 100}
	ledger := memstore.NewUsage()
	if err := ledger.Budget(t.Context(), "router", func(b *usage.Budget) error {
		*b = usage.Budget{Day: usage.Day(porttest.T0), DayDispatches: 2, Month: usage.Month(porttest.T0), MonthDispatches: 7}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	clock := porttest.NewClock(porttest.T0)
	u := app.NewUsage(ledger, clock, slog.New(slog.DiscardHandler), 90)
	keys := httpapi.NewKeyring(principalKey, []keyring.Slot{router})
	h, _ := newServer(t, fiveDeltas(), withAdmin(ops.NewMonitor(ops.MonitorConfig{Usage: u, Slots: keys.Slots})),
		withKeyring(keys), func(c *httpapi.Config) { c.Usage = u })
	return h, clock
}

// seen is what the control page, the usage report and /metrics say of the
// router slot's dispatches: today's and this month's, each view's own.
func seen(t *testing.T, h http.Handler) (live, report ops.KeyBudget, metrics string) {
	t.Helper()
	is := is.New(t)
	auth := []string{"Authorization", "Bearer " + routerKey}
	var l struct{ Keys []ops.KeyBudget }
	rec := get(h, "/admin/api/live", auth...)
	is.Equal(rec.Code, 200)
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &l))
	is.Equal(len(l.Keys), 1)
	var rep ops.UsageReport
	rec = get(h, "/admin/api/usage", auth...)
	is.Equal(rec.Code, 200)
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &rep))
	is.Equal(len(rep.Keys), 1)
	return l.Keys[0], rep.Keys[0], get(h, "/metrics", auth...).Body.String()
}

func TestTheBudgetViewsShowTodayAndThisMonthEachInItsPlace(t *testing.T) {
	is := is.New(t)
	h, _ := budgetViews(t)
	live, report, metrics := seen(t, h)
	want := ops.KeyBudget{Slot: "router", Scope: "admin", DispatchesPerDay: 5, DispatchesPerMonth: 100, DispatchesToday: 2, DispatchesMonth: 7}
	is.Equal(live, want)
	is.Equal(report, want)
	for _, series := range []string{
		`pmgate_key_dispatches{slot="router",window="day"} 2`,
		`pmgate_key_dispatches{slot="router",window="month"} 7`,
		`pmgate_key_dispatch_limit{slot="router",window="day"} 5`,
		`pmgate_key_dispatch_limit{slot="router",window="month"} 100`,
	} {
		if !strings.Contains(metrics, series+"\n") {
			t.Errorf("/metrics lacks %s", series)
		}
	}
}

// Yesterday's count is never shown as today's, last month's never as this
// month's: on the control page, in the usage report and in /metrics.
func TestTheBudgetViewsNeverShowAPastWindowsCount(t *testing.T) {
	is := is.New(t)
	h, clock := budgetViews(t)
	clock.Advance(24 * time.Hour) // 30 November
	live, report, metrics := seen(t, h)
	is.Equal([]int{live.DispatchesToday, live.DispatchesMonth}, []int{0, 7})
	is.Equal([]int{report.DispatchesToday, report.DispatchesMonth}, []int{0, 7})
	is.True(strings.Contains(metrics, `pmgate_key_dispatches{slot="router",window="day"} 0`+"\n"))
	is.True(strings.Contains(metrics, `pmgate_key_dispatches{slot="router",window="month"} 7`+"\n"))
	clock.Advance(24 * time.Hour) // 1 December
	live, report, metrics = seen(t, h)
	is.Equal([]int{live.DispatchesToday, live.DispatchesMonth}, []int{0, 0})
	is.Equal([]int{report.DispatchesToday, report.DispatchesMonth}, []int{0, 0})
	is.True(strings.Contains(metrics, `pmgate_key_dispatches{slot="router",window="month"} 0`+"\n"))
}

// GET /admin/api/usage without a range is the last seven UTC days, today
// included; a range that ends before it starts is refused, naming until.
func TestTheUsageReportDefaultsToSevenDaysAndRefusesAnInvertedRange(t *testing.T) {
	is := is.New(t)
	h, _ := budgetViews(t)
	auth := []string{"Authorization", "Bearer " + routerKey}
	before := time.Now().UTC()
	rec := get(h, "/admin/api/usage", auth...)
	after := time.Now().UTC()
	is.Equal(rec.Code, 200)
	var rep ops.UsageReport
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &rep))
	is.True(rep.Until == usage.Day(before) || rep.Until == usage.Day(after)) // a test run across midnight
	until, err := time.Parse(time.DateOnly, rep.Until)
	is.NoErr(err)
	is.Equal(rep.Since, usage.Day(until.AddDate(0, 0, -6)))

	rec = get(h, "/admin/api/usage?since=2026-11-29&until=2026-11-28", auth...)
	is.Equal(rec.Code, http.StatusBadRequest)
	is.Equal(decodeError(t, rec.Body.Bytes()).param(), "until")
	rec = get(h, "/admin/api/usage?since=2026-11-29&until=2026-11-29", auth...)
	is.Equal(rec.Code, 200) // one day
}

// A usage total is the sum of two counts of one kind: the upstream's own
// total only when both its parts are the upstream's too; with an estimated
// part, the sum of what is shown, marked estimated.
func TestAUsageTotalAddsCountsOfOneKind(t *testing.T) {
	is := is.New(t)
	total := func(u *chat.Usage) (string, string) {
		h, _ := newServer(t, returning(script(app.Delta{Text: "abcdef"}, app.Delta{Finish: app.FinishStop, Usage: u}), nil))
		rec := post(h, withFields(""))
		_, raw := decodeCompletion(t, rec.Body.Bytes())
		return string(raw["usage"]), rec.Header().Get("x-pmgate-usage")
	}
	// The upstream reported its input and a total, not its output: the output
	// is estimated (ceil(6/3)), and so is the total.
	body, how := total(&chat.Usage{PromptTokens: i64(12), TotalTokens: i64(40)})
	is.Equal(body, `{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14}`)
	is.Equal(how, "estimated")
	// Both parts reported, no total: the total of the reported counts.
	body, how = total(&chat.Usage{PromptTokens: i64(12), CompletionTokens: i64(3)})
	is.Equal(body, `{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}`)
	is.Equal(how, "reported")
}
