package app_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	crdberrors "github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
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

func TestAQuotaRefusesAFreshTurnBeforeSendingAndNeverAContinuation(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(2))
	_, ledger := withUsage(r)
	p := principal
	p.Limits = usage.Limits{DispatchesPerDay: 1}
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, err := r.gw.Chat(t.Context(), p, request(history...))
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err) // the quota's one dispatch: a tool group is issued
	// The quota is now spent, but the group was issued while it was fine:
	// both continuations of the loop are dispatched.
	for range 2 {
		history = echo(history, ds, "r")
		turn, err = r.gw.Chat(t.Context(), p, request(history...))
		is.NoErr(err)
		ds, err = drain(t, turn)
		is.NoErr(err)
	}
	is.Equal(ds[len(ds)-1].Finish, app.FinishStop)
	is.Equal(len(r.up.Requests()), 3)
	// A new conversation is refused before anything is sent.
	_, err = r.gw.Chat(t.Context(), p, request(chat.Message{Role: chat.RoleUser, Content: str("again")}))
	is.True(errs.Has(err, errs.KeyQuotaExhausted))
	var ra interface{ RetryAfter() time.Duration }
	is.True(asRetryAfter(err, &ra))
	is.Equal(ra.RetryAfter(), 12*time.Hour) // T0 is noon UTC: the day frees at midnight
	is.Equal(len(r.up.Requests()), 3)       // nothing sent
	bs, _ := ledger.Budgets(t.Context())
	is.Equal(bs["default"].DayDispatches, 3) // the continuations are counted
	// The next UTC day frees the quota.
	r.clock.Advance(12 * time.Hour)
	_, err = r.gw.Chat(t.Context(), p, request(chat.Message{Role: chat.RoleUser, Content: str("tomorrow")}))
	is.NoErr(err)
}

func TestARateLimitRefusesWithTheWaitForOneToken(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script { return porttest.Script{Events: porttest.Text("c", "hi")} })
	withUsage(r)
	p := principal
	p.Limits = usage.Limits{RequestsPerMinute: 3}
	for range 3 { // the burst
		_, err := r.gw.Chat(t.Context(), p, chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: str("x")}}})
		is.NoErr(err)
	}
	_, err := r.gw.Chat(t.Context(), p, chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: str("x")}}})
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
	ctx, m := app.WithMeter(t.Context())
	_, err := r.gw.Chat(ctx, p, req)
	is.True(err != nil)
	is.Equal(m.Dispatches, 0)
	ctx, m = app.WithMeter(t.Context())
	turn, err := r.gw.Chat(ctx, p, req) // the refund left the quota's one dispatch
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err)
	is.Equal(*m, app.Meter{Dispatches: 1, QueryChars: 4, OutputChars: 5})
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

func asRetryAfter(err error, target *interface{ RetryAfter() time.Duration }) bool {
	return crdberrors.As(err, target)
}
