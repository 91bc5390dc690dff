package app_test

import (
	"context"
	"log/slog"
	"sync/atomic"
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

// flakyLedger is the memory ledger whose next failAdd flushes and next
// failBudget budget calls fail as a database that is down would.
type flakyLedger struct {
	*memstore.Usage
	failAdd, failBudget atomic.Int32
}

func (l *flakyLedger) Add(ctx context.Context, rows []usage.Row) error {
	if l.failAdd.Add(-1) >= 0 {
		return errs.New(errs.CorrelationStoreUnavailable)
	}
	return l.Usage.Add(ctx, rows)
}

func (l *flakyLedger) Budget(ctx context.Context, slot string, fn func(*usage.Budget) error) error {
	if l.failBudget.Add(-1) >= 0 {
		return errs.New(errs.CorrelationStoreUnavailable)
	}
	return l.Usage.Budget(ctx, slot, fn)
}

func withFlakyUsage(r *rig) (*app.Usage, *flakyLedger) {
	l := &flakyLedger{Usage: memstore.NewUsage()}
	u := app.NewUsage(l, r.clock, slog.New(slog.DiscardHandler), 90)
	r.gw.WithUsage(u)
	return u, l
}

func dayDispatches(t *testing.T, l ports.UsageLedger) int {
	t.Helper()
	bs, err := l.Budgets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return bs[principal.Slot].DayDispatches
}

func entry(outcome string, dispatches int) usage.Entry {
	return usage.Entry{At: porttest.T0, Slot: "default", API: usage.APIChat, Model: "m", Strategy: "s", Outcome: outcome,
		Dispatches: dispatches, QueryChars: 9}
}

// A flush the store refused keeps its rows: they are added by the next one,
// merged with what was recorded in between.
func TestAFailedFlushKeepsItsRowsForTheNextFlush(t *testing.T) {
	is := is.New(t)
	r := newRig(t, nil)
	u, l := withFlakyUsage(r)
	u.Record(entry("ok", 1))
	u.Record(entry("key_quota_exhausted", 0))
	l.failAdd.Store(1)
	is.True(u.Flush(t.Context()) != nil) // the database is down
	rows, err := l.Rows(t.Context(), usage.Day(porttest.T0), usage.Day(porttest.T0))
	is.NoErr(err)
	is.Equal(len(rows), 0)   // nothing written
	u.Record(entry("ok", 1)) // while it is down
	is.NoErr(u.Flush(t.Context()))
	rows, err = l.Rows(t.Context(), usage.Day(porttest.T0), usage.Day(porttest.T0))
	is.NoErr(err)
	is.Equal(len(rows), 2)
	is.Equal(rows[0].Outcome, "key_quota_exhausted")
	is.Equal(rows[0].Requests, int64(1))
	is.Equal(rows[1].Outcome, "ok")
	is.Equal(rows[1].Requests, int64(2)) // the kept row and the new one, merged
	is.Equal(rows[1].Dispatches, int64(2))
	is.Equal(rows[1].QueryChars, int64(18))
	is.NoErr(u.Flush(t.Context()))
	rows, _ = l.Rows(t.Context(), usage.Day(porttest.T0), usage.Day(porttest.T0))
	is.Equal(rows[1].Requests, int64(2)) // and written once
}

// notAcceptedContinuation answers the first request with a tool call and
// refuses the next one before processing it (ErrNotAccepted), then answers.
func notAcceptedContinuation() func(ports.UpstreamRequest) porttest.Script {
	n := 0
	return func(req ports.UpstreamRequest) porttest.Script {
		n++
		switch {
		case req.Continuation == nil:
			return porttest.Script{Events: porttest.ToolCalls("conv-1", "g", "get_weather")}
		case n == 2:
			return porttest.Script{Err: crdberrors.Join(errs.New(errs.UpstreamRateLimited), ports.ErrNotAccepted)}
		}
		return porttest.Script{Events: porttest.Text("conv-1", "done")}
	}
}

// A continuation the upstream refused before processing it is given its
// dispatch back, as a fresh turn is.
func TestAContinuationTheUpstreamNeverAcceptedIsRefunded(t *testing.T) {
	is := is.New(t)
	r := newRig(t, notAcceptedContinuation())
	_, l := withFlakyUsage(r)
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, err := r.gw.Chat(t.Context(), principal, request(history...), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	is.Equal(dayDispatches(t, l), 1)
	cont := request(echo(history, ds, "r")...)
	_, err = r.gw.Chat(t.Context(), principal, cont, nil)
	is.True(errs.Has(err, errs.UpstreamRateLimited))
	is.Equal(app.SummaryOf(err).Dispatches, 0)
	is.Equal(dayDispatches(t, l), 1) // counted, then refunded
	turn, err = r.gw.Chat(t.Context(), principal, cont, nil)
	is.NoErr(err) // the retry
	_, err = drain(t, turn)
	is.NoErr(err)
	is.Equal(dayDispatches(t, l), 2)
}

// A continuation whose count failed (the ledger was unavailable) was never
// counted: its refund must not take back a dispatch counted for another
// request.
func TestAContinuationWhoseCountFailedIsNotRefunded(t *testing.T) {
	is := is.New(t)
	r := newRig(t, notAcceptedContinuation())
	_, l := withFlakyUsage(r)
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, err := r.gw.Chat(t.Context(), principal, request(history...), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	is.Equal(dayDispatches(t, l), 1)
	l.failBudget.Store(1) // the continuation's count fails; the ledger is back for anything after it
	_, err = r.gw.Chat(t.Context(), principal, request(echo(history, ds, "r")...), nil)
	is.True(err != nil)
	is.Equal(dayDispatches(t, l), 1) // the fresh turn's dispatch is still counted
}

// query_chars counts the content handed to the upstream: every message's
// text and the history's tool-call arguments.
func TestQueryCharsIncludeTheHistorysToolCallArguments(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script { return porttest.Script{Events: porttest.Text("c", "ok")} })
	withUsage(r)
	history := []chat.Message{
		{Role: chat.RoleUser, Content: str("go")},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"q":"Paris"}`}}},
		{Role: chat.RoleTool, ToolCallID: "call_1", Content: str("sunny")},
		{Role: chat.RoleUser, Content: str("thanks")},
	}
	turn, err := r.gw.Chat(t.Context(), principal, request(history...), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err)
	m := summaryOf(turn, nil)
	is.Equal(len(r.up.Requests()[0].Chat.Messages), 4) // the whole history was sent
	is.Equal(m.QueryChars, int64(len("go")+len(`{"q":"Paris"}`)+len("sunny")+len("thanks")))
	is.Equal(m.OutputChars, int64(len("ok")))
}

// A continued conversation sends only the new messages: query_chars counts
// those, not the history the upstream already holds.
func TestQueryCharsOfAContinuedConversationCountWhatWasSent(t *testing.T) {
	is := is.New(t)
	r := newConvRig(t, nil)
	withUsage(r.rig)
	msgs := []chat.Message{user("one")}
	a := r.turn(t, textRequest(msgs...))
	msgs = append(msgs, assistant(a), user("two"))
	turn, err := r.gw.Chat(t.Context(), principal, textRequest(msgs...), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err)
	m := summaryOf(turn, nil)
	is.Equal(r.last().ConversationID, "conv-1") // continued
	is.Equal(len(r.last().Chat.Messages), 1)    // with the new message only
	is.Equal(m.QueryChars, int64(len("two")))
	is.Equal(m.Dispatches, 1)
}

// output_chars counts what the upstream answered: text and the arguments of
// the tool calls received.
func TestOutputCharsIncludeTheToolCallArgumentsReceived(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		evs := append(porttest.Text("conv-1", "let me look"), porttest.ToolCalls("conv-1", "g", "get_weather", "get_time")[1:]...)
		return porttest.Script{Events: evs}
	})
	withUsage(r)
	turn, err := r.gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("go")}), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	m := summaryOf(turn, nil)
	is.Equal(ds[len(ds)-1].Finish, app.FinishToolCalls)
	is.Equal(m.OutputChars, int64(len("let me look")+len(`{"q":"v0"}`)+len(`{"q":"v1"}`)))
}

// The views read a slot's budget as of now: yesterday's count is not
// today's, last month's is not this month's.
func TestBudgetsReadPastWindowsAsZero(t *testing.T) {
	is := is.New(t)
	r := newRig(t, nil)
	u, l := withUsage(r)
	is.NoErr(l.Budget(t.Context(), "a", func(b *usage.Budget) error {
		*b = usage.Budget{Day: usage.Day(porttest.T0), DayDispatches: 2, Month: usage.Month(porttest.T0), MonthDispatches: 7}
		return nil
	}))
	bs, err := u.Budgets(t.Context())
	is.NoErr(err)
	is.Equal(bs["a"].DayDispatches, 2)
	is.Equal(bs["a"].MonthDispatches, 7)
	r.clock.Advance(24 * time.Hour) // 30 November: the next day of the same month
	bs, err = u.Budgets(t.Context())
	is.NoErr(err)
	is.Equal(bs["a"].DayDispatches, 0)
	is.Equal(bs["a"].MonthDispatches, 7)
	r.clock.Advance(24 * time.Hour) // 1 December
	bs, err = u.Budgets(t.Context())
	is.NoErr(err)
	is.Equal(bs["a"].DayDispatches, 0)
	is.Equal(bs["a"].MonthDispatches, 0)
}
