package porttest

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
)

// NewUsageLedger returns an empty usage ledger; ledgers are expected to be
// independent between calls.
type NewUsageLedger func(t *testing.T) ports.UsageLedger

// AdmitOnce runs one admission of slot as the gateway does and reports
// whether it was admitted; a refusal's code is returned as its error.
func AdmitOnce(ctx context.Context, l ports.UsageLedger, slot string, lim usage.Limits, now time.Time) error {
	return l.Budget(ctx, slot, func(b *usage.Budget) error { return b.Admit(now, lim) })
}

// UsageRow is a daily row of one request with the given dispatches.
func UsageRow(day, slot, model, outcome string, dispatches int64) usage.Row {
	return usage.Row{Key: usage.Key{Day: day, Slot: slot, API: usage.APIChat, Model: model, Strategy: "web_session", Outcome: outcome},
		Requests: 1, Dispatches: dispatches, QueryChars: 40, OutputChars: 12, EstimatedInputTokens: 10, EstimatedOutputTokens: 3, DurationMS: 7}
}

// UsageContract is the contract of ports.UsageLedger.
func UsageContract(t *testing.T, newLedger NewUsageLedger) {
	ctx := context.Background()
	t.Run("a new slot's budget is empty and an admission is written back", func(t *testing.T) {
		is := is.New(t)
		l := newLedger(t)
		is.NoErr(AdmitOnce(ctx, l, "a", usage.Limits{}, T0))
		is.NoErr(AdmitOnce(ctx, l, "a", usage.Limits{}, T0))
		bs, err := l.Budgets(ctx)
		is.NoErr(err)
		is.Equal(bs["a"].DayDispatches, 2)
		is.Equal(bs["a"].MonthDispatches, 2)
		is.Equal(bs["a"].Day, usage.Day(T0))
		_, other := bs["b"]
		is.True(!other)
	})
	t.Run("a budget reads back as it was written, its month included", func(t *testing.T) {
		is := is.New(t)
		l := newLedger(t)
		want := usage.Budget{Day: usage.Day(T0), DayDispatches: 2, Month: usage.Month(T0), MonthDispatches: 7,
			Tokens: 1.5, TokensAt: T0.Add(1500 * time.Millisecond)}
		is.NoErr(l.Budget(ctx, "a", func(b *usage.Budget) error {
			is.Equal(*b, usage.Budget{}) // a new slot's budget is empty
			*b = want
			return nil
		}))
		bs, err := l.Budgets(ctx)
		is.NoErr(err)
		is.Equal(bs["a"], want) // what the views read (this month's count is not read as another month's)
		is.NoErr(l.Budget(ctx, "a", func(b *usage.Budget) error {
			is.Equal(*b, want) // what the next admission decides on
			return nil
		}))
	})
	t.Run("a closure's error writes nothing", func(t *testing.T) {
		is := is.New(t)
		l := newLedger(t)
		is.NoErr(AdmitOnce(ctx, l, "a", usage.Limits{DispatchesPerDay: 1}, T0))
		err := AdmitOnce(ctx, l, "a", usage.Limits{DispatchesPerDay: 1}, T0)
		is.True(errs.Has(err, errs.KeyQuotaExhausted))
		bs, _ := l.Budgets(ctx)
		is.Equal(bs["a"].DayDispatches, 1)
	})
	t.Run("the bucket's state survives the store", func(t *testing.T) {
		is := is.New(t)
		l := newLedger(t)
		lim := usage.Limits{RequestsPerMinute: 2}
		is.NoErr(AdmitOnce(ctx, l, "a", lim, T0))
		is.NoErr(AdmitOnce(ctx, l, "a", lim, T0))
		is.True(errs.Has(AdmitOnce(ctx, l, "a", lim, T0.Add(time.Second)), errs.KeyRateLimited))
		is.NoErr(AdmitOnce(ctx, l, "a", lim, T0.Add(31*time.Second))) // one token refilled
	})
	t.Run("replicas whose clocks differ refill the bucket by the difference once, not per alternation", func(t *testing.T) {
		is := is.New(t)
		l := newLedger(t)
		lim := usage.Limits{RequestsPerMinute: 60} // a token a second
		const skew = 30 * time.Second              // replica A's clock is ahead of B's
		for range 60 {
			is.NoErr(AdmitOnce(ctx, l, "a", lim, T0)) // the burst, through B
		}
		admitted := 0
		for i := range 100 { // 1 s of real time, alternating B and A
			at := T0.Add(time.Duration(i) * 10 * time.Millisecond)
			if i%2 == 1 {
				at = at.Add(skew)
			}
			if AdmitOnce(ctx, l, "a", lim, at) == nil {
				admitted++
			}
		}
		is.True(admitted >= 30 && admitted <= 31) // 30 s once, and 1 s of refill
	})
	t.Run("concurrent admissions of one slot never exceed its daily quota", func(t *testing.T) {
		is := is.New(t)
		l := newLedger(t)
		const limit, racers = 7, 32
		lim := usage.Limits{DispatchesPerDay: limit}
		var admitted, refused atomic.Int64
		var wg sync.WaitGroup
		for range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The closure yields: a store that read the budget outside
				// its atomic section would now lose admissions.
				err := l.Budget(ctx, "a", func(b *usage.Budget) error {
					runtime.Gosched()
					return b.Admit(T0, lim)
				})
				switch {
				case err == nil:
					admitted.Add(1)
				case errs.Has(err, errs.KeyQuotaExhausted):
					refused.Add(1)
				default:
					t.Errorf("admission: %v", err)
				}
			}()
		}
		wg.Wait()
		is.Equal(admitted.Load(), int64(limit))
		is.Equal(refused.Load(), int64(racers-limit))
		bs, _ := l.Budgets(ctx)
		is.Equal(bs["a"].DayDispatches, limit)
	})
	t.Run("slots are counted apart", func(t *testing.T) {
		is := is.New(t)
		l := newLedger(t)
		lim := usage.Limits{DispatchesPerDay: 1}
		is.NoErr(AdmitOnce(ctx, l, "a", lim, T0))
		is.NoErr(AdmitOnce(ctx, l, "b", lim, T0))
	})
	t.Run("rows of one key add up and a range selects whole days", func(t *testing.T) {
		is := is.New(t)
		l := newLedger(t)
		d0, d1, d2 := usage.Day(T0), usage.Day(T0.AddDate(0, 0, 1)), usage.Day(T0.AddDate(0, 0, 2))
		is.NoErr(l.Add(ctx, []usage.Row{UsageRow(d0, "b", "m", "ok", 1), UsageRow(d0, "a", "m", "ok", 1)}))
		r := UsageRow(d0, "a", "m", "ok", 1)
		r.ReportedRequests, r.ReportedPromptTokens, r.ReportedCompletionTokens = 1, 5, 6
		is.NoErr(l.Add(ctx, []usage.Row{r, UsageRow(d1, "a", "m", "key_quota_exhausted", 0), UsageRow(d2, "a", "m", "ok", 1)}))
		rows, err := l.Rows(ctx, d0, d1)
		is.NoErr(err)
		is.Equal(len(rows), 3)
		want := UsageRow(d0, "a", "m", "ok", 1)
		want.Merge(r)
		is.Equal(rows[0], want) // sorted: day, then slot
		is.Equal(rows[1].Slot, "b")
		is.Equal(rows[2].Outcome, "key_quota_exhausted")
		is.Equal(rows[2].Dispatches, int64(0))
		none, err := l.Rows(ctx, usage.Day(T0.AddDate(0, 0, 5)), usage.Day(T0.AddDate(0, 0, 9)))
		is.NoErr(err)
		is.Equal(len(none), 0)
	})
	t.Run("a sweep deletes the days before the oldest kept", func(t *testing.T) {
		is := is.New(t)
		l := newLedger(t)
		old, keep := usage.Day(T0.AddDate(0, 0, -91)), usage.Day(T0.AddDate(0, 0, -89))
		is.NoErr(l.Add(ctx, []usage.Row{UsageRow(old, "a", "m", "ok", 1), UsageRow(old, "b", "m", "ok", 1), UsageRow(keep, "a", "m", "ok", 1)}))
		n, err := l.Sweep(ctx, usage.Oldest(T0, 90))
		is.NoErr(err)
		is.Equal(n, 2)
		rows, _ := l.Rows(ctx, "0001-01-01", "9999-12-31")
		is.Equal(len(rows), 1)
		is.Equal(rows[0].Day, keep)
	})
}

// BenchUsageAdmit measures one admission (the ledger's cost on the path of
// every request that may dispatch) for slots spread over 16 keys.
func BenchUsageAdmit(b *testing.B, l ports.UsageLedger) {
	ctx := context.Background()
	slots := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15"}
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if err := AdmitOnce(ctx, l, slots[i%16], usage.Limits{DispatchesPerDay: 1 << 30}, T0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
