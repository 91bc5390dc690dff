package usage_test

import (
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
)

var t0 = time.Date(2026, 1, 30, 22, 0, 0, 0, time.UTC) // near the end of a day and a month

// TestAdmissionMatchesACountingModel drives random admissions over days and
// months against a model that counts dispatches per calendar day and month:
// a fresh turn is admitted exactly while both counts are under their limits,
// a continuation always, and a refusal's wait ends at the next window.
func TestAdmissionMatchesACountingModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		lim := usage.Limits{DispatchesPerDay: rapid.IntRange(1, 4).Draw(rt, "day"), DispatchesPerMonth: rapid.IntRange(1, 9).Draw(rt, "month")}
		var b usage.Budget
		perDay, perMonth := map[[3]int]int{}, map[[2]int]int{}
		now := t0
		for i := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 30*60).Draw(rt, "minutes")) * time.Minute)
			cont := rapid.Bool().Draw(rt, "continuation")
			y, m, d := now.Date()
			dk, mk := [3]int{y, int(m), d}, [2]int{y, int(m)}
			err := b.Admit(now, lim, cont)
			wantAdmit := cont || (perDay[dk] < lim.DispatchesPerDay && perMonth[mk] < lim.DispatchesPerMonth)
			if (err == nil) != wantAdmit {
				rt.Fatalf("step %d at %s (continuation %v, day %d/%d, month %d/%d): %v", i, now, cont, perDay[dk], lim.DispatchesPerDay,
					perMonth[mk], lim.DispatchesPerMonth, err)
			}
			if err == nil {
				perDay[dk]++
				perMonth[mk]++
				if b.DayDispatches != perDay[dk] || b.MonthDispatches != perMonth[mk] {
					rt.Fatalf("counts %d/%d, the model says %d/%d", b.DayDispatches, b.MonthDispatches, perDay[dk], perMonth[mk])
				}
				continue
			}
			var ref *usage.Refusal
			if !errors.As(err, &ref) || !errs.Has(err, errs.KeyQuotaExhausted) {
				rt.Fatalf("a refusal without its code: %v", err)
			}
			next := time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
			if perDay[dk] < lim.DispatchesPerDay {
				next = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
			}
			if now.Add(ref.RetryAfter()) != next {
				rt.Fatalf("retry after %s from %s, want until %s", ref.RetryAfter(), now, next)
			}
			if cur := b.At(now, lim); cur.DayDispatches != perDay[dk] || cur.MonthDispatches != perMonth[mk] {
				rt.Fatalf("a refusal changed the counts")
			}
		}
	})
}

func TestTheBucketAllowsAMinutesBurstThenOneRequestPerInterval(t *testing.T) {
	is := is.New(t)
	lim := usage.Limits{RequestsPerMinute: 6}
	var b usage.Budget
	for range 6 {
		is.NoErr(b.Admit(t0, lim, false))
	}
	err := b.Admit(t0, lim, false)
	var ref *usage.Refusal
	is.True(errors.As(err, &ref))
	is.True(errs.Has(err, errs.KeyRateLimited))
	is.Equal(ref.RetryAfter(), 10*time.Second) // 6 a minute: one every 10 s
	is.True(b.Admit(t0.Add(9*time.Second), lim, false) != nil)
	is.NoErr(b.Admit(t0.Add(10*time.Second), lim, false))
	is.NoErr(b.Admit(t0.Add(10*time.Second), lim, true)) // a continuation passes an empty bucket
	is.Equal(b.Tokens, 0.0)                              // and leaves it empty, not below
	// A quiet hour refills to the burst, no more.
	for range 6 {
		is.NoErr(b.Admit(t0.Add(time.Hour), lim, false))
	}
	is.True(b.Admit(t0.Add(time.Hour), lim, false) != nil)
	// A lowered limit caps a fuller bucket at once.
	var c usage.Budget
	is.NoErr(c.Admit(t0, usage.Limits{RequestsPerMinute: 100}, false))
	is.NoErr(c.Admit(t0, usage.Limits{RequestsPerMinute: 2}, false))
	is.NoErr(c.Admit(t0, usage.Limits{RequestsPerMinute: 2}, false))
	is.True(c.Admit(t0, usage.Limits{RequestsPerMinute: 2}, false) != nil)
}

func TestARefundGivesBackOnlyThatWindowsDispatch(t *testing.T) {
	is := is.New(t)
	var b usage.Budget
	is.NoErr(b.Admit(t0, usage.Limits{}, false))
	is.NoErr(b.Admit(t0, usage.Limits{}, false))
	b.Refund(t0)
	is.Equal(b.DayDispatches, 1)
	is.Equal(b.MonthDispatches, 1)
	tomorrow := t0.Add(3 * time.Hour) // 2026-01-31 01:00
	is.NoErr(b.Admit(tomorrow, usage.Limits{}, false))
	b.Refund(t0) // yesterday's dispatch: today's count is not touched, the month's is
	is.Equal(b.DayDispatches, 1)
	is.Equal(b.MonthDispatches, 1)
	is.Equal(b.At(t0.Add(4*24*time.Hour), usage.Limits{}).MonthDispatches, 0) // February
}

func TestALedgerRowAddsEntriesAndKeepsEstimatesApart(t *testing.T) {
	is := is.New(t)
	e := usage.Entry{At: t0, Slot: "a", API: usage.APIChat, Model: "m", Strategy: "s", Outcome: "ok", Dispatches: 1,
		QueryChars: usage.Chars("héllo"), OutputChars: 9, Duration: 1500 * time.Millisecond}
	r := usage.Row{Key: usage.KeyOf(e)}
	r.Add(e)
	e.Reported, e.PromptTokens, e.CompletionTokens = true, 3, 4
	r.Add(e)
	is.Equal(r.Key, usage.Key{Day: "2026-01-30", Slot: "a", API: "chat", Model: "m", Strategy: "s", Outcome: "ok"})
	is.Equal(r.Requests, int64(2))
	is.Equal(r.QueryChars, int64(10)) // characters, not bytes
	is.Equal(r.ReportedRequests, int64(1))
	is.Equal(r.ReportedPromptTokens, int64(3))
	is.Equal(r.EstimatedInputTokens, int64(4)) // ceil(5/3) per request
	is.Equal(r.EstimatedOutputTokens, int64(6))
	is.Equal(r.DurationMS, int64(3000))
	is.Equal(usage.Oldest(t0, 90), "2025-11-02")
}
