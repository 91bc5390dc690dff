package app_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	crdberrors "github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func withUsage(r *rig) (*app.Usage, *memstore.Usage) {
	l := memstore.NewUsage()
	u := app.NewUsage(l, r.clock, slog.New(slog.NewTextHandler(io.Discard, nil)), 90)
	r.gw.WithUsage(u)
	return u, l
}

// TestAToolLoopStopsAtTheKeysLimitsAndItsGroupWaits: a key of one request a
// minute and one dispatch a day runs a tool loop whose model calls a tool
// after every result. Its continuations are refused before dispatch (the
// bucket, then the day), however often the client sends them, and their
// group stays PENDING; the same results sent after the reset are dispatched
// once, and a retry after that is a replay, not a dispatch.
func TestAToolLoopStopsAtTheKeysLimitsAndItsGroupWaits(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(5))
	_, ledger := withUsage(r)
	p := principal
	p.Limits = usage.Limits{RequestsPerMinute: 1, DispatchesPerDay: 1}
	r.clock.Advance(11*time.Hour + 55*time.Minute) // 23:55 UTC: the day frees within the pending TTL
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, err := r.gw.Chat(t.Context(), p, request(history...), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err) // the day's one dispatch issues a tool group
	history = echo(history, ds, "r")
	pending := func() {
		t.Helper()
		c, err := r.store.Counts(t.Context())
		is.NoErr(err)
		is.Equal(c.ByState[correlation.Pending], 1) // the group waits, unclaimed
		is.Equal(c.ByState[correlation.Inflight], 0)
		is.Equal(c.ByState[correlation.Uncertain], 0)
	}
	var ra interface{ RetryAfter() time.Duration }
	for range 40 { // the client answers at once, again and again
		_, err = r.gw.Chat(t.Context(), p, request(history...), nil)
		is.True(errs.Has(err, errs.KeyRateLimited)) // the bucket is empty
		is.True(asRetryAfter(err, &ra))
		is.True(ra.RetryAfter() > 57*time.Second && ra.RetryAfter() <= time.Minute) // the wait for one token
		r.clock.Advance(50 * time.Millisecond)
	}
	is.Equal(len(r.up.Requests()), 1) // nothing more reached the upstream
	pending()
	r.clock.Advance(time.Minute) // a token again; the day is spent
	_, err = r.gw.Chat(t.Context(), p, request(history...), nil)
	is.True(errs.Has(err, errs.KeyQuotaExhausted))
	is.True(asRetryAfter(err, &ra))
	is.True(ra.RetryAfter() > 0 && ra.RetryAfter() <= 4*time.Minute) // until 00:00 UTC
	is.Equal(len(r.up.Requests()), 1)
	pending()
	bs, _ := ledger.Budgets(t.Context())
	is.Equal(bs["default"].DayDispatches, 1) // refusals count nothing
	r.clock.Advance(ra.RetryAfter())         // the next UTC day
	turn, err = r.gw.Chat(t.Context(), p, request(history...), nil)
	is.NoErr(err) // the same results, dispatched now
	ds, err = drain(t, turn)
	is.NoErr(err)
	is.Equal(ds[len(ds)-1].Finish, app.FinishToolCalls) // the loop goes on: the next group
	is.Equal(r.up.Continuations(), 1)
	replay, err := r.gw.Chat(t.Context(), p, request(history...), nil) // a retry of those results
	is.NoErr(err)                                                      // answered from the cache,
	_, err = drain(t, replay)
	is.NoErr(err)
	is.Equal(r.up.Continuations(), 1) // never dispatched again
	bs, _ = ledger.Budgets(t.Context())
	is.Equal(bs["default"].DayDispatches, 1) // the new day's one dispatch
	_, err = r.gw.Chat(t.Context(), p, request(echo(history, ds, "r2")...), nil)
	is.True(errs.Has(err, errs.KeyRateLimited)) // the next round waits for its window too
	is.Equal(len(r.up.Requests()), 2)
}

// failingLedger is a usage ledger whose budget cannot be read.
type failingLedger struct{ *memstore.Usage }

func (failingLedger) Budget(context.Context, string, func(*usage.Budget) error) error {
	return errs.New(errs.CorrelationStoreUnavailable)
}

// TestAContinuationWhoseBudgetCannotBeReadIsRefusedAndItsGroupWaits: an
// unknown budget is not a green light for a continuation either; its group
// goes back to PENDING, and the same results are dispatched once the budget
// can be read.
func TestAContinuationWhoseBudgetCannotBeReadIsRefusedAndItsGroupWaits(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(1))
	_, ledger := withUsage(r)
	p := principal
	p.Limits = usage.Limits{DispatchesPerDay: 10}
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, err := r.gw.Chat(t.Context(), p, request(history...), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	history = echo(history, ds, "r")
	r.gw.WithUsage(app.NewUsage(failingLedger{ledger}, r.clock, slog.New(slog.NewTextHandler(io.Discard, nil)), 90))
	_, err = r.gw.Chat(t.Context(), p, request(history...), nil)
	is.True(errs.Has(err, errs.CorrelationStoreUnavailable)) // refused, not dispatched
	is.Equal(r.up.Continuations(), 0)
	c, err := r.store.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.ByState[correlation.Pending], 1) // released
	r.gw.WithUsage(app.NewUsage(ledger, r.clock, slog.New(slog.NewTextHandler(io.Discard, nil)), 90))
	turn, err = r.gw.Chat(t.Context(), p, request(history...), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err)
	is.Equal(r.up.Continuations(), 1)
}

func TestARateLimitRefusesWithTheWaitForOneToken(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script { return porttest.Script{Events: porttest.Text("c", "hi")} })
	withUsage(r)
	p := principal
	p.Limits = usage.Limits{RequestsPerMinute: 3}
	for range 3 { // the burst
		_, err := r.gw.Chat(t.Context(), p, chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: str("x")}}}, nil)
		is.NoErr(err)
	}
	_, err := r.gw.Chat(t.Context(), p, chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: str("x")}}}, nil)
	is.True(errs.Has(err, errs.KeyRateLimited))
	var ra interface{ RetryAfter() time.Duration }
	is.True(asRetryAfter(err, &ra))
	is.Equal(ra.RetryAfter(), 20*time.Second) // 3 per minute: one token every 20 s
	is.Equal(len(r.up.Requests()), 3)
}

func TestARequestTheUpstreamNeverAcceptedIsRefundedAndTheLedgerCountsEveryRequest(t *testing.T) {
	is := is.New(t)
	n := 0
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		n++
		if n == 1 {
			return porttest.Script{Err: crdberrors.Mark(errs.New(errs.UpstreamUnavailable), ports.ErrNotSent)}
		}
		return porttest.Script{Events: porttest.Text("c", "héllo")}
	})
	u, ledger := withUsage(r)
	p := principal
	p.Limits = usage.Limits{DispatchesPerDay: 1}
	req := chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: str("four")}}}
	_, err := r.gw.Chat(t.Context(), p, req, nil)
	is.True(err != nil)
	is.Equal(app.SummaryOf(err).Dispatches, 0)
	turn, err := r.gw.Chat(t.Context(), p, req, nil) // the refund left the quota's one dispatch
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err)
	m := summaryOf(turn, nil)
	is.Equal(m, app.Summary{Dispatches: 1, QueryChars: 4, OutputChars: 5})
	bs, _ := ledger.Budgets(t.Context())
	is.Equal(bs["default"].DayDispatches, 1)
	u.Record(usage.Entry{At: porttest.T0, Slot: "default", API: usage.APIChat, Model: "m", Strategy: "s", Outcome: "ok",
		Dispatches: m.Dispatches, QueryChars: m.QueryChars, OutputChars: m.OutputChars, Duration: 30 * time.Millisecond})
	u.Record(usage.Entry{At: porttest.T0, Slot: "default", API: usage.APIChat, Model: "m", Strategy: "s", Outcome: "ok", Dispatches: 1})
	rows, err := u.Report(t.Context(), usage.Day(porttest.T0), usage.Day(porttest.T0))
	is.NoErr(err)
	is.Equal(len(rows), 1)
	is.Equal(rows[0].Requests, int64(2))
	is.Equal(rows[0].Dispatches, int64(2))
	is.Equal(rows[0].EstimatedInputTokens, int64(2)) // ceil(4/3): the one estimate formula
}

// summaryOf is what the request of turn, or of its refusal err, did.
func summaryOf(turn app.Turn, err error) app.Summary {
	if err != nil {
		return app.SummaryOf(err)
	}
	if s, ok := turn.(app.Summarized); ok {
		return s.Summary()
	}
	return app.Summary{}
}

func asRetryAfter(err error, target *interface{ RetryAfter() time.Duration }) bool {
	return crdberrors.As(err, target)
}

// TestARequestTheGatewayRefusedItselfTakesNoToken: a request refused after
// admission with nothing sent (over the query limit, too many tools) gives
// back its token as well as its dispatch; one the upstream refused (it was
// sent) gives back the dispatch only.
func TestARequestTheGatewayRefusedItselfTakesNoToken(t *testing.T) {
	is := is.New(t)
	var answer []error
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		if len(answer) > 0 {
			e := answer[0]
			answer = answer[1:]
			return porttest.Script{Err: e}
		}
		return porttest.Script{Events: porttest.Text("c", "ok")}
	})
	_, ledger := withUsage(r)
	p := principal
	p.Limits = usage.Limits{RequestsPerMinute: 1}
	req := chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: str("x")}}}
	tooLong := crdberrors.Mark(errs.New(errs.UpstreamQueryTooLong), ports.ErrNotSent)
	tooMany := crdberrors.Mark(errs.New(errs.UnsupportedParameter), ports.ErrNotSent)
	answer = []error{tooLong, tooMany}
	for _, want := range []errs.Code{errs.UpstreamQueryTooLong, errs.UnsupportedParameter} {
		_, err := r.gw.Chat(t.Context(), p, req, nil)
		is.True(errs.Has(err, want)) // the gateway's own refusal, not key_rate_limited
	}
	turn, err := r.gw.Chat(t.Context(), p, req, nil)
	is.NoErr(err) // the minute's one request is still there
	_, err = drain(t, turn)
	is.NoErr(err)
	bs, _ := ledger.Budgets(t.Context())
	is.Equal(bs["default"].DayDispatches, 1)
	r.clock.Advance(time.Minute)
	answer = []error{crdberrors.Mark(errs.New(errs.UpstreamRateLimited), ports.ErrNotAccepted)}
	_, err = r.gw.Chat(t.Context(), p, req, nil)
	is.True(errs.Has(err, errs.UpstreamRateLimited)) // sent, refused by the upstream
	_, err = r.gw.Chat(t.Context(), p, req, nil)
	is.True(errs.Has(err, errs.KeyRateLimited)) // it spent the minute's token
}
