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
// a request (a fresh turn or a continuation: the rule has no exemption) is
// admitted exactly while both counts are under their limits, and a refusal's
// wait ends at the next window.
func TestAdmissionMatchesACountingModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		lim := usage.Limits{DispatchesPerDay: rapid.IntRange(1, 4).Draw(rt, "day"), DispatchesPerMonth: rapid.IntRange(1, 9).Draw(rt, "month")}
		var b usage.Budget
		perDay, perMonth := map[[3]int]int{}, map[[2]int]int{}
		now := t0
		for i := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 30*60).Draw(rt, "minutes")) * time.Minute)
			y, m, d := now.Date()
			dk, mk := [3]int{y, int(m), d}, [2]int{y, int(m)}
			err := b.Admit(now, lim)
			wantAdmit := perDay[dk] < lim.DispatchesPerDay && perMonth[mk] < lim.DispatchesPerMonth
			if (err == nil) != wantAdmit {
				rt.Fatalf("step %d at %s (day %d/%d, month %d/%d): %v", i, now, perDay[dk], lim.DispatchesPerDay,
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
		is.NoErr(b.Admit(t0, lim))
	}
	err := b.Admit(t0, lim)
	var ref *usage.Refusal
	is.True(errors.As(err, &ref))
	is.True(errs.Has(err, errs.KeyRateLimited))
	is.Equal(ref.RetryAfter(), 10*time.Second) // 6 a minute: one every 10 s
	is.True(b.Admit(t0.Add(9*time.Second), lim) != nil)
	is.NoErr(b.Admit(t0.Add(10*time.Second), lim))
	is.Equal(b.Tokens, 0.0) // the token taken leaves the bucket empty, not below
	// A quiet hour refills to the burst, no more.
	for range 6 {
		is.NoErr(b.Admit(t0.Add(time.Hour), lim))
	}
	is.True(b.Admit(t0.Add(time.Hour), lim) != nil)
	// A lowered limit caps a fuller bucket at once.
	var c usage.Budget
	is.NoErr(c.Admit(t0, usage.Limits{RequestsPerMinute: 100}))
	is.NoErr(c.Admit(t0, usage.Limits{RequestsPerMinute: 2}))
	is.NoErr(c.Admit(t0, usage.Limits{RequestsPerMinute: 2}))
	is.True(c.Admit(t0, usage.Limits{RequestsPerMinute: 2}) != nil)
}

func TestARefundGivesBackOnlyThatWindowsDispatch(t *testing.T) {
	is := is.New(t)
	var b usage.Budget
	is.NoErr(b.Admit(t0, usage.Limits{}))
	is.NoErr(b.Admit(t0, usage.Limits{}))
	b.Refund(t0)
	is.Equal(b.DayDispatches, 1)
	is.Equal(b.MonthDispatches, 1)
	tomorrow := t0.Add(3 * time.Hour) // 2026-01-31 01:00
	is.NoErr(b.Admit(tomorrow, usage.Limits{}))
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

// TestARefusalChangesNothingAndTheWindowsResetFreesIt: once the bucket or the day's quota is
// spent, the next request is refused whatever it is; the rule has no
// parameter that would let a tool loop's continuations through.
func TestARefusalChangesNothingAndTheWindowsResetFreesIt(t *testing.T) {
	is := is.New(t)
	lim := usage.Limits{RequestsPerMinute: 1, DispatchesPerDay: 1}
	var b usage.Budget
	is.NoErr(b.Admit(t0, lim))
	before := b
	for i := range 40 { // a tool loop answering at once, 50 ms apart
		err := b.Admit(t0.Add(time.Duration(i+1)*50*time.Millisecond), lim)
		is.True(errs.Has(err, errs.KeyRateLimited)) // the bucket is checked first
	}
	is.Equal(b, before) // refusals counted nothing
	err := b.Admit(t0.Add(time.Minute), lim)
	is.True(errs.Has(err, errs.KeyQuotaExhausted)) // a token again; the day is spent
	is.NoErr(b.Admit(t0.Add(2*time.Hour), lim))    // the next UTC day
	is.Equal(b.DayDispatches, 1)
}

// TestAClockBehindRefillsNothing: two replicas whose clocks differ by d
// admit alternately against one budget. The bucket refills by the real
// elapsed time plus d at most once (the first time the later clock is seen),
// never by d per alternation: a time before the one the budget has seen is
// taken as that time.
func TestAClockBehindRefillsNothing(t *testing.T) {
	is := is.New(t)
	lim := usage.Limits{RequestsPerMinute: 60} // one token a second, a burst of 60
	const d = 30 * time.Second                 // replica A runs 30 s ahead of B
	var b usage.Budget
	for range 60 { // the burst, spent through B
		is.NoErr(b.Admit(t0, lim))
	}
	admitted := 0
	for i := range 200 { // 2 s of real time, alternating B and A
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		if i%2 == 1 {
			at = at.Add(d)
		}
		if b.Admit(at, lim) == nil {
			admitted++
		}
	}
	is.True(admitted <= 30+2) // d once, and 2 s of refill; never d per alternation
	is.True(admitted >= 30)   // the later clock's time did pass for the budget
}

// TestAClockBehindReopensNoDay: replica A has passed midnight, replica B is
// still in the old day. The budget's day is the later one: B's admissions
// count in it, and neither replica resets the other's count.
func TestAClockBehindReopensNoDay(t *testing.T) {
	is := is.New(t)
	lim := usage.Limits{DispatchesPerDay: 1}
	midnight := time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)
	var b usage.Budget
	is.NoErr(b.Admit(midnight.Add(-time.Minute), lim))  // the old day's one dispatch
	is.NoErr(b.Admit(midnight.Add(5*time.Second), lim)) // A: the new day's one
	for i := range 6 {
		at := midnight.Add(-2*time.Second + time.Duration(i)*100*time.Millisecond) // B, 7 s behind
		if i%2 == 1 {
			at = at.Add(7 * time.Second) // A
		}
		err := b.Admit(at, lim)
		is.True(errs.Has(err, errs.KeyQuotaExhausted)) // the new day is spent, on both clocks
		var ref *usage.Refusal
		is.True(errors.As(err, &ref))
		is.True(ref.RetryAfter() <= 24*time.Hour) // until the end of the budget's day
	}
	is.Equal(b.Day, "2026-01-31")
	is.Equal(b.DayDispatches, 1)
	is.Equal(b.MonthDispatches, 2) // January's: the month did not turn
}

// TestANothingSentRequestGetsItsTokenBack: a request the gateway refused
// itself after admission (over the query limit, too many tools) takes no
// token of the bucket, and a returned token never overfills it.
func TestANothingSentRequestGetsItsTokenBack(t *testing.T) {
	is := is.New(t)
	lim := usage.Limits{RequestsPerMinute: 2}
	var b usage.Budget
	is.NoErr(b.Admit(t0, lim))
	is.NoErr(b.Admit(t0, lim))
	b.Refund(t0)
	b.ReturnToken(lim)
	is.Equal(b.DayDispatches, 1)
	is.NoErr(b.Admit(t0, lim)) // the returned token
	is.True(b.Admit(t0, lim) != nil)
	var full usage.Budget
	is.NoErr(full.Admit(t0, lim))
	full.ReturnToken(lim)
	full.ReturnToken(lim)
	is.Equal(full.Tokens, 2.0) // capped at the burst
	var unlimited usage.Budget
	is.NoErr(unlimited.Admit(t0, usage.Limits{}))
	unlimited.ReturnToken(usage.Limits{})
	is.Equal(unlimited.Tokens, 0.0) // no bucket, nothing to return
}
