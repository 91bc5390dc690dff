// Package usage is the pure model of the owner's budget (docs/USAGE.md): a key
// slot's limits, the budget record that enforces them (a token bucket for
// requests per minute, upstream dispatches per UTC day and per calendar
// month), and the usage ledger's aggregated rows.
//
// Stores hold the records and run Budget.Admit inside their atomic section (a
// mutex, or a PostgreSQL transaction with the slot's row locked), so every
// replica decides by the same rule on the same counts. Time is always an
// argument.
package usage

import (
	"math"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/errs"
)

// Bounds of a limit.
const (
	MaxRequestsPerMinute = 100_000
	MaxDispatchesPerDay  = 10_000_000
	MaxDispatchesPerMon  = 100_000_000
)

// Limits are a key slot's limits; 0 means unlimited.
type Limits struct {
	RequestsPerMinute  int
	DispatchesPerDay   int
	DispatchesPerMonth int
}

// None reports whether no limit is set.
func (l Limits) None() bool { return l == Limits{} }

// Burst is the capacity of the requests-per-minute bucket: a whole minute's
// worth, so that a client idle for a minute may send that many at once.
func (l Limits) Burst() float64 { return float64(l.RequestsPerMinute) }

// Day is the UTC day of t as "2006-01-02"; Month its month as "2006-01".
func Day(t time.Time) string   { return t.UTC().Format(time.DateOnly) }
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// Budget is one slot's counters, shared by every replica. Day and Month name
// the window the counts belong to; a count of another window is zero.
type Budget struct {
	Day             string // "2006-01-02" (UTC) of DayDispatches
	DayDispatches   int
	Month           string // "2006-01" (UTC) of MonthDispatches
	MonthDispatches int
	// Tokens is the requests-per-minute bucket at TokensAt; a zero TokensAt
	// is a full bucket.
	Tokens   float64
	TokensAt time.Time
}

// At returns the budget's counts as of now: counts of a past day or month are
// zero, the bucket is refilled. Time never runs backwards for a budget: a now
// before what the budget has already seen (the clock of a replica behind the
// one that admitted last) is taken as that latest time (see Latest), so a
// clock difference between replicas refills nothing and reopens no window.
func (b Budget) At(now time.Time, l Limits) Budget {
	now = b.Latest(now)
	if d := Day(now); b.Day != d {
		b.Day, b.DayDispatches = d, 0
	}
	if m := Month(now); b.Month != m {
		b.Month, b.MonthDispatches = m, 0
	}
	if l.RequestsPerMinute > 0 {
		if b.TokensAt.IsZero() {
			b.Tokens = l.Burst()
		} else if el := now.Sub(b.TokensAt); el > 0 {
			b.Tokens = math.Min(l.Burst(), b.Tokens+el.Seconds()*float64(l.RequestsPerMinute)/60)
		}
		b.Tokens = math.Min(b.Tokens, l.Burst()) // a lowered limit caps a fuller bucket
		b.TokensAt = now
	}
	return b
}

// Latest returns the later of now (in UTC) and the latest time the budget
// has seen: its bucket's time and the starts of its day and month. Every
// decision is taken at that time, so the budget's time only moves forward.
func (b Budget) Latest(now time.Time) time.Time {
	now = now.UTC()
	if b.TokensAt.After(now) {
		now = b.TokensAt
	}
	if d, err := time.Parse(time.DateOnly, b.Day); err == nil && d.After(now) {
		now = d
	}
	if m, err := time.Parse("2006-01", b.Month); err == nil && m.After(now) {
		now = m
	}
	return now
}

// Refusal is a refused admission: its code (key_rate_limited or
// key_quota_exhausted) and how long until the window frees.
type Refusal struct {
	Code   errs.Code
	Window string // "minute", "day" or "month"
	After  time.Duration
}

func (r *Refusal) Error() string { return string(r.Code) + ": the " + r.Window + " limit is reached" }

// RetryAfter is the wait until the window frees (the ingress's Retry-After).
func (r *Refusal) RetryAfter() time.Duration { return r.After }

// Admit decides one request at now and counts it: a request that will send
// one upstream dispatch, a fresh turn or a continuation (the tool results of
// a group issued earlier) alike. It is refused while the bucket is empty or
// the day's or month's dispatches reached their limit, with the time until
// the window frees; a refusal changes nothing. A continuation gets no
// exemption: a tool loop would otherwise dispatch without bound past the
// limits, and its refused results can be sent again once the window frees
// (the gateway leaves their group pending).
//
// Errors: a *Refusal marked key_rate_limited or key_quota_exhausted.
func (b *Budget) Admit(now time.Time, l Limits) error {
	now = b.Latest(now)
	next := b.At(now, l)
	if err := next.check(now, l); err != nil {
		return err
	}
	if l.RequestsPerMinute > 0 {
		next.Tokens = math.Max(next.Tokens-1, 0)
	}
	next.DayDispatches++
	next.MonthDispatches++
	*b = next
	return nil
}

func (b Budget) check(now time.Time, l Limits) error {
	now = now.UTC()
	if l.RequestsPerMinute > 0 && b.Tokens < 1 {
		wait := time.Duration((1 - b.Tokens) * 60 / float64(l.RequestsPerMinute) * float64(time.Second))
		return refuse(errs.KeyRateLimited, "minute", wait)
	}
	if l.DispatchesPerDay > 0 && b.DayDispatches >= l.DispatchesPerDay {
		y, m, d := now.Date()
		return refuse(errs.KeyQuotaExhausted, "day", time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC).Sub(now))
	}
	if l.DispatchesPerMonth > 0 && b.MonthDispatches >= l.DispatchesPerMonth {
		y, m, _ := now.Date()
		return refuse(errs.KeyQuotaExhausted, "month", time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC).Sub(now))
	}
	return nil
}

func refuse(c errs.Code, window string, after time.Duration) error {
	return errors.Mark(&Refusal{Code: c, Window: window, After: after}, errs.Sentinel(c))
}

// Refund gives back the dispatch Admit counted at admitted for a request that
// provably never reached the upstream (nothing sent, or refused before any
// processing). A count of another window than admitted's stays as it is.
func (b *Budget) Refund(admitted time.Time) {
	if b.Day == Day(admitted) && b.DayDispatches > 0 {
		b.DayDispatches--
	}
	if b.Month == Month(admitted) && b.MonthDispatches > 0 {
		b.MonthDispatches--
	}
}

// ReturnToken gives back the bucket's token Admit took for a request of
// which nothing was sent (the gateway refused it itself, or no connection
// was made): only requests that reach the upstream spend the rate limit.
// The bucket never holds more than its burst.
func (b *Budget) ReturnToken(l Limits) {
	if l.RequestsPerMinute > 0 && !b.TokensAt.IsZero() {
		b.Tokens = math.Min(b.Tokens+1, l.Burst())
	}
}
