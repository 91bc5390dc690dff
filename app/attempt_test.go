package app_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	crdberrors "github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/budget"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// attemptRig is a gateway that recognises repeats, over a fake upstream.
func attemptRig(t *testing.T, respond func(ports.UpstreamRequest) porttest.Script) (*app.Gateway, *porttest.Upstream, *memstore.Attempts) {
	t.Helper()
	up := &porttest.Upstream{Respond: respond}
	att := memstore.NewAttempts(1 << 20)
	gw := app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy}, up,
		memstore.New(correlation.Limits{MaxGroups: 100, MaxCalls: 400, ResponseCacheBytes: 1 << 20}, policy),
		porttest.NewClock(porttest.T0), &porttest.IDs{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	gw.WithAttempts(att, app.AttemptPolicy{TTL: time.Minute, Grace: 30 * time.Second, Poll: time.Millisecond})
	return gw, up, att
}

func answer(ports.UpstreamRequest) porttest.Script {
	return porttest.Script{Events: porttest.Text("conv-1", "the ", "answer")}
}

var question = chat.Request{Model: "m", Messages: []chat.Message{{Role: "user", Content: str("what?")}}}

// sdk is a request of an official SDK: its body and its retry count.
func sdk(count int, body string) *app.Repeat {
	return &app.Repeat{Route: "POST /v1/chat/completions", Body: []byte(body), RetryCount: count}
}

func keyed(key, body string) *app.Repeat {
	return &app.Repeat{Route: "POST /v1/chat/completions", Body: []byte(body), RetryCount: -1, IdempotencyKey: key}
}

func text(t *testing.T, turn app.Turn, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	ds, err := drain(t, turn)
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	s := ""
	for _, d := range ds {
		s += d.Text
	}
	return s
}

func replayed(turn app.Turn) bool {
	r, ok := turn.(app.Replayed)
	return ok && r.Replayed()
}

func TestAMarkedRetryOfAnAnsweredRequestGetsItsAnswerWithoutADispatch(t *testing.T) {
	is := is.New(t)
	gw, up, _ := attemptRig(t, answer)
	first, err := gw.Chat(context.Background(), principal, question, sdk(0, `{"q":1}`))
	is.Equal(text(t, first, err), "the answer")
	is.Equal(summaryOf(first, nil).Dispatches, 1)
	retry, err := gw.Chat(context.Background(), principal, question, sdk(1, `{"q":1}`))
	is.NoErr(err)
	is.True(replayed(retry))
	is.Equal(text(t, retry, nil), "the answer")
	is.Equal(summaryOf(retry, nil).Dispatches, 0) // the ledger counts a request without a dispatch
	is.Equal(len(up.Requests()), 1)               // one dispatch for the question

	other, err := gw.Chat(context.Background(), principal, question, sdk(1, `{"q":2}`)) // another body: its own question
	is.True(!replayed(other))
	is.Equal(text(t, other, err), "the answer")
	again, err := gw.Chat(context.Background(), principal, question, sdk(0, `{"q":1}`)) // asked again, not a retry
	is.True(!replayed(again))
	is.Equal(text(t, again, err), "the answer")
	is.Equal(len(up.Requests()), 3)
	stranger, err := gw.Chat(context.Background(), app.Principal{Slot: "other", ID: "principal-2"}, question, sdk(1, `{"q":1}`))
	is.True(!replayed(stranger)) // another key's record is never seen
	is.Equal(text(t, stranger, err), "the answer")
	is.Equal(len(up.Requests()), 4)
}

func TestARetryWhileTheFirstAttemptIsAnsweredWaitsForItsAnswer(t *testing.T) {
	is := is.New(t)
	gw, up, _ := attemptRig(t, answer)
	first, err := gw.Chat(context.Background(), principal, question, sdk(0, `{"q":1}`))
	is.NoErr(err)
	type result struct {
		turn app.Turn
		err  error
	}
	got := make(chan result, 1)
	go func() {
		t, err := gw.Chat(context.Background(), principal, question, sdk(1, `{"q":1}`))
		got <- result{t, err}
	}()
	select {
	case <-got:
		t.Fatal("the retry did not wait for the first attempt")
	case <-time.After(50 * time.Millisecond):
	}
	is.Equal(text(t, first, nil), "the answer")
	r := <-got
	is.NoErr(r.err)
	is.True(replayed(r.turn))
	is.Equal(text(t, r.turn, nil), "the answer")
	is.Equal(len(up.Requests()), 1)
}

func TestAFirstAttemptWhoseClientLeftIsReadToItsEndForItsRetry(t *testing.T) {
	is := is.New(t)
	gw, up, _ := attemptRig(t, answer)
	ctx, cancel := context.WithCancel(context.Background())
	first, err := gw.Chat(ctx, principal, question, sdk(0, `{"q":1}`))
	is.NoErr(err)
	_, err = first.Next(ctx)
	is.NoErr(err)
	cancel()      // the SDK's timeout closed the connection
	first.Close() // the ingress closes the turn when its client is gone
	rctx, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	retry, err := gw.Chat(rctx, principal, question, sdk(1, `{"q":1}`))
	is.NoErr(err)
	is.True(replayed(retry))
	is.Equal(text(t, retry, nil), "the answer") // the whole answer, read after the client left
	is.Equal(len(up.Requests()), 1)
}

func TestAnAttemptThatDispatchedNothingDoesNotHoldItsRetryBack(t *testing.T) {
	is := is.New(t)
	n := 0
	gw, up, _ := attemptRig(t, func(r ports.UpstreamRequest) porttest.Script {
		if n++; n == 1 {
			return porttest.Script{Err: crdberrors.Mark(errs.New(errs.UpstreamOverloaded), ports.ErrNotSent)}
		}
		return answer(r)
	})
	_, err := gw.Chat(context.Background(), principal, question, sdk(0, `{"q":1}`))
	is.True(errs.Has(err, errs.UpstreamOverloaded))
	retry, err := gw.Chat(context.Background(), principal, question, sdk(1, `{"q":1}`))
	is.True(!replayed(retry))
	is.Equal(text(t, retry, err), "the answer") // dispatched: the first never was
	is.Equal(len(up.Requests()), 2)
}

func TestAFailedAttemptIsReplayedAsItsFailureNeverAsASuccess(t *testing.T) {
	is := is.New(t)
	gw, up, _ := attemptRig(t, func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.Text("conv-1", "half"), End: errs.New(errs.UpstreamIncompleteStream)}
	})
	first, err := gw.Chat(context.Background(), principal, question, sdk(0, `{"q":1}`))
	is.NoErr(err)
	_, err = drain(t, first)
	is.True(errs.Has(err, errs.UpstreamIncompleteStream))
	_, err = gw.Chat(context.Background(), principal, question, sdk(1, `{"q":1}`))
	is.True(errs.Has(err, errs.UpstreamIncompleteStream)) // the first attempt's outcome
	is.True(crdberrors.Is(err, app.ErrReplayed))
	is.Equal(len(up.Requests()), 1) // may have reached the upstream: not sent again
}

// The service lost the conversation a turn continued: it processed nothing,
// so Claude Code's re-send of that turn is dispatched (and starts a fresh
// conversation), never answered with the recorded 410 again.
func TestARetryAfterALostConversationIsDispatchedAgain(t *testing.T) {
	is := is.New(t)
	n := 0
	gw, up, _ := attemptRig(t, func(ports.UpstreamRequest) porttest.Script {
		n++
		if n == 1 {
			return porttest.Script{End: errs.New(errs.UpstreamConversationLost)}
		}
		return answer(ports.UpstreamRequest{})
	})
	cc := question
	cc.Client = budget.ClientClaudeCode
	first, err := gw.Chat(context.Background(), principal, cc, sdk(0, `{"q":1}`))
	if err == nil {
		_, err = drain(t, first)
	}
	is.True(errs.Has(err, errs.UpstreamConversationLost))
	again, err := gw.Chat(context.Background(), principal, cc, sdk(0, `{"q":1}`))
	is.Equal(text(t, again, err), "the answer") // dispatched again …
	is.True(!replayed(again))                   // … not the recorded 410
	is.Equal(len(up.Requests()), 2)
}

func TestAnIdempotencyKeyGetsTheRecordedOutcomeOrAConflict(t *testing.T) {
	is := is.New(t)
	gw, up, _ := attemptRig(t, answer)
	first, err := gw.Chat(context.Background(), principal, question, keyed("k-1", `{"q":1}`))
	is.NoErr(err)
	_, err = gw.Chat(context.Background(), principal, question, keyed("k-1", `{"q":1}`))
	is.True(errs.Has(err, errs.IdempotencyKeyInUse)) // in flight
	_, err = gw.Chat(context.Background(), principal, question, keyed("k-1", `{"q":2}`))
	is.True(errs.Has(err, errs.IdempotencyKeyReused)) // another body
	is.Equal(text(t, first, nil), "the answer")
	again, err := gw.Chat(context.Background(), principal, question, keyed("k-1", `{"q":1}`))
	is.NoErr(err)
	is.True(replayed(again))
	is.Equal(text(t, again, nil), "the answer")
	_, err = gw.Chat(context.Background(), principal, question, keyed("k-1", `{"q":2}`))
	is.True(errs.Has(err, errs.IdempotencyKeyReused))
	other, err := gw.Chat(context.Background(), principal, question, keyed("k-2", `{"q":1}`))
	is.True(!replayed(other)) // another key: another request
	is.Equal(text(t, other, err), "the answer")
	is.Equal(len(up.Requests()), 2)
}

func TestClaudeCodesOwnRetriesAreRecognisedByTheirBody(t *testing.T) {
	is := is.New(t)
	gw, up, _ := attemptRig(t, answer)
	cc := question
	cc.Client = budget.ClientClaudeCode
	first, err := gw.Chat(context.Background(), principal, cc, sdk(0, `{"q":1}`))
	is.Equal(text(t, first, err), "the answer")
	retry, err := gw.Chat(context.Background(), principal, cc, sdk(0, `{"q":1}`)) // its own loop: count 0 again
	is.NoErr(err)
	is.True(replayed(retry))
	is.Equal(len(up.Requests()), 1)
}

func TestUnmarkedRequestsAndContinuationsAreNotRecorded(t *testing.T) {
	is := is.New(t)
	gw, up, att := attemptRig(t, answer)
	for range 2 {
		turn, err := gw.Chat(context.Background(), principal, question, nil)
		is.Equal(text(t, turn, err), "the answer")
	}
	is.Equal(len(up.Requests()), 2) // no marker: each is its own question
	cont := chat.Request{Model: "m", Messages: []chat.Message{{Role: "user", Content: str("q")},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_pmn_x", Name: "get_time", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "call_pmn_x", Content: str("r")}}}
	_, err := gw.Chat(context.Background(), principal, cont, sdk(1, `{"cont":1}`))
	is.True(errs.Has(err, errs.UnknownToolCall)) // the continuation path, not a record
	_, ok, _ := att.Get(context.Background(), "any", porttest.T0)
	is.True(!ok)
}

// silentUpstream answers with a stream that sends nothing until its context
// ends (a slow service).
type silentUpstream struct{ dispatches atomic.Int32 }

func (u *silentUpstream) Chat(context.Context, ports.UpstreamRequest) (ports.Stream, error) {
	u.dispatches.Add(1)
	return silentStream{}, nil
}

type silentStream struct{}

func (silentStream) Next(ctx context.Context) (chat.Event, error) {
	<-ctx.Done()
	return chat.Event{}, errs.New(errs.ClientCancelled)
}

func (silentStream) Close() error { return nil }

func TestAnAttemptWhoseClientLeftWithoutARetryIsReleasedAndNeverSentAgain(t *testing.T) {
	is := is.New(t)
	up := &silentUpstream{}
	gw := app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy}, up,
		memstore.New(correlation.Limits{MaxGroups: 100, MaxCalls: 400, ResponseCacheBytes: 1 << 20}, policy),
		porttest.NewClock(porttest.T0), &porttest.IDs{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	gw.WithAttempts(memstore.NewAttempts(1<<20), app.AttemptPolicy{TTL: time.Minute, Grace: 30 * time.Second, Poll: time.Millisecond, AbortGrace: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	first, err := gw.Chat(ctx, principal, question, sdk(0, `{"q":1}`))
	is.NoErr(err)
	cancel() // the user aborted; no retry comes
	closed := make(chan struct{})
	go func() { first.Close(); close(closed) }()
	select {
	case <-closed: // released after the grace, not at the request's deadline
	case <-time.After(5 * time.Second):
		t.Fatal("the attempt was not released after its client left")
	}
	_, err = gw.Chat(context.Background(), principal, question, sdk(1, `{"q":1}`))
	is.True(errs.Has(err, errs.RetryOutcomeUnknown)) // sent, its outcome unknown: not sent again
	is.Equal(up.dispatches.Load(), int32(1))
}
