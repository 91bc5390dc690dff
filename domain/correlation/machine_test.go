package correlation_test

import (
	"os"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

// model is the hand-written reference for the group machine of
// docs/CORRELATION.md (and its INFLIGHT deadline). It is deliberately not
// derived from the rows.
func model(s correlation.State, e correlation.Event) (correlation.State, errs.Code, bool) {
	type C = correlation.State
	switch s {
	case correlation.Pending:
		switch e {
		case correlation.SubmitValid:
			return correlation.Inflight, "", true
		case correlation.SubmitIncomplete:
			return s, errs.ToolResultIncomplete, true
		case correlation.SubmitGroupMismatch:
			return s, errs.ToolResultGroupMismatch, true
		case correlation.SubmitHistoryMismatch:
			return s, errs.ContinuationHistoryMismatch, true
		case correlation.SubmitModelMismatch:
			return s, errs.ContinuationModelMismatch, true
		case correlation.SubmitToolsMismatch:
			return s, errs.ContinuationToolsMismatch, true
		case correlation.SubmitWorkspaceMismatch:
			return s, errs.ContinuationWorkspaceMismatch, true
		case correlation.SubmitUnknownID:
			return s, errs.UnknownToolCall, true
		case correlation.Deadline:
			return correlation.Expired, errs.ToolCallExpired, true
		case correlation.CapacityPressure:
			return s, errs.CorrelationCapacityExceeded, true
		case correlation.Cancel, correlation.MovedPast:
			return correlation.Cancelled, "", true
		}
	case correlation.Inflight:
		switch e {
		case correlation.SubmitSame:
			return s, errs.ContinuationInflight, true
		case correlation.SubmitDifferent:
			return s, errs.ContinuationConflict, true
		case correlation.SubmitHistory:
			return s, errs.ContinuationInflight, true
		case correlation.Complete:
			return correlation.Consumed, "", true
		case correlation.NotSent:
			return correlation.Pending, "", true
		case correlation.Ambiguous, correlation.Deadline:
			return correlation.Uncertain, errs.ContinuationOutcomeUncertain, true
		case correlation.Gated:
			return correlation.Consumed, errs.UpstreamLoopApproval, true
		}
	case correlation.Consumed:
		switch e {
		case correlation.SubmitSame:
			return s, errs.ToolCallAlreadyConsumed, true
		case correlation.SubmitSameGated: // the gate's results again: the gate's answer again
			return s, errs.UpstreamLoopApproval, true
		case correlation.SubmitDifferent:
			return s, errs.ContinuationConflict, true
		case correlation.SubmitHistory:
			return s, "", true
		case correlation.TombstoneElapsed:
			return correlation.Removed, "", true
		}
	case correlation.Expired, correlation.Cancelled, correlation.Uncertain:
		if s == correlation.Uncertain && e == correlation.SubmitHistory {
			return s, "", true
		}
		switch e {
		case correlation.SubmitAny:
			return s, map[C]errs.Code{correlation.Expired: errs.ToolCallExpired, correlation.Cancelled: errs.ToolCallCancelled,
				correlation.Uncertain: errs.ContinuationOutcomeUncertain}[s], true
		case correlation.TombstoneElapsed:
			return correlation.Removed, "", true
		}
	case correlation.Removed:
		if e == correlation.SubmitAny {
			return s, errs.UnknownToolCall, true
		}
	}
	return s, "", false
}

func TestEveryStateAndEventMatchesTheDesignTable(t *testing.T) {
	declared := 0
	for _, s := range correlation.States {
		for _, e := range correlation.Events {
			t.Run(string(s)+"/"+string(e), func(t *testing.T) {
				is := is.New(t)
				g := correlation.Group{Key: "k", State: s, PendingExpiresAt: t0, InflightExpiresAt: t0, TerminalExpiresAt: t0}
				d, err := g.Fire(e, t0, policy)
				to, code, ok := model(s, e)
				if !ok {
					is.True(errors.Is(err, correlation.ErrIllegalTransition)) // undeclared pairs are illegal transitions
					is.Equal(g.State, s)                                      // and change nothing
					return
				}
				declared++
				is.NoErr(err)          // declared pairs fire
				is.Equal(d.To, to)     // next state as the table says
				is.Equal(g.State, to)  // the record holds the new state
				is.Equal(d.Code, code) // stable code as the table says
				record(t.Name(), d)
			})
		}
	}
	if declared != len(correlation.Table().Rows) {
		t.Fatalf("model declares %d pairs, table has %d rows", declared, len(correlation.Table().Rows))
	}
}

func TestTheTableIsWellFormed(t *testing.T) {
	is := is.New(t)
	is.NoErr(correlation.Table().Validate()) // unique ids, one row per (state, event), declared states
}

func TestGraphMatchesGoldenDOT(t *testing.T) {
	is := is.New(t)
	got := correlation.Graph()
	want, err := os.ReadFile("../../spec/correlation.dot") // the one copy, written by `make spec`
	is.NoErr(err)
	is.Equal(got, string(want))        // DOT from stateless is stable; run `make spec` after changing rows
	is.Equal(correlation.Graph(), got) // and deterministic
}

func TestAValidSubmissionClaimsTheGroupOnce(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a", "call_pmn_b")
	g := f.group
	d, err := g.Submit(t0.Add(time.Minute), policy, f.submission("r1", "r2"), "attempt-1")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Effect, correlation.EffectDispatch)                               // the first valid submission dispatches
	is.Equal(g.State, correlation.Inflight)                                      // and claims the group
	is.Equal(g.DispatchAttemptID, "attempt-1")                                   // with the attempt id
	is.True(g.AcceptedResultsHash != "")                                         // and the accepted results
	is.True(g.InflightExpiresAt.Equal(t0.Add(time.Minute + policy.InflightTTL))) // hard deadline set

	d, err = g.Submit(t0.Add(2*time.Minute), policy, f.submission("r1", "r2"), "attempt-2")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Code, errs.ContinuationInflight) // the retry is told it is in flight
	is.Equal(g.DispatchAttemptID, "attempt-1")  // and never re-claims

	d, err = g.Submit(t0.Add(2*time.Minute), policy, f.submission("r1", "other"), "attempt-3")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Code, errs.ContinuationConflict) // different results conflict
}

func TestResultsInAnotherOrderAreTheSameSubmission(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a", "call_pmn_b")
	g := f.group
	_, err := g.Submit(t0, policy, f.submission("r1", "r2"), "a1")
	is.NoErr(err)
	sub := f.submission("r1", "r2")
	r := sub.Continuation.Results
	r[0], r[1] = r[1], r[0]
	d, err := g.Submit(t0, policy, sub, "a2")
	is.NoErr(err)
	is.Equal(d.Code, errs.ContinuationInflight) // reordered results are a retry, not a conflict
}

func TestAConsumedGroupReplaysItsCachedResponse(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	g := f.group
	_, err := g.Submit(t0, policy, f.submission("r1"), "a1")
	is.NoErr(err)
	d, err := g.Complete(t0, policy, []byte(`{"answer":1}`), "sha256:x")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(g.State, correlation.Consumed)                        // a proven end consumes
	is.True(g.TerminalExpiresAt.Equal(t0.Add(policy.TerminalTTL))) // tombstone TTL starts

	d, err = g.Submit(t0, policy, f.submission("r1"), "a2")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Effect, correlation.EffectReplay) // same results replay
	is.Equal(string(d.Replay), `{"answer":1}`)   // the cached body
	is.Equal(d.Err(), nil)                       // with no error

	g.CachedResponse = nil
	d, err = g.Submit(t0, policy, f.submission("r1"), "a3")
	is.NoErr(err)
	is.Equal(d.Code, errs.ToolCallAlreadyConsumed) // without a cached body: already consumed
	is.True(errs.Has(d.Err(), errs.ToolCallAlreadyConsumed))
}

func TestAPendingGroupPastItsDeadlineExpiresOnLookup(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	g := f.group
	d, err := g.Submit(g.PendingExpiresAt, policy, f.submission("r1"), "a1")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Code, errs.ToolCallExpired) // exactly at the deadline is too late
	is.Equal(g.State, correlation.Expired) // and the tombstone is kept
	d, err = g.Submit(g.PendingExpiresAt, policy, f.submission("r1"), "a1")
	is.NoErr(err)
	is.Equal(d.Code, errs.ToolCallExpired) // later submissions see the tombstone
}

func TestANotSentFailureReturnsTheGroupToPending(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	g := f.group
	_, err := g.Submit(t0, policy, f.submission("r1"), "a1")
	is.NoErr(err)
	d, err := g.NotSent(t0, policy)
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(g.State, correlation.Pending) // proven not sent: pending again
	is.Equal(g.DispatchAttemptID, "")      // the claim is cleared
	is.Equal(g.AcceptedResultsHash, "")    // so different results may be sent
	d, err = g.Submit(t0, policy, f.submission("other"), "a2")
	is.NoErr(err)
	is.Equal(d.Effect, correlation.EffectDispatch) // and a new claim can win
}

func TestAnAmbiguousFailureIsUncertainForever(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	g := f.group
	_, err := g.Submit(t0, policy, f.submission("r1"), "a1")
	is.NoErr(err)
	d, err := g.Ambiguous(t0, policy)
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Code, errs.ContinuationOutcomeUncertain) // reported as uncertain
	_, err = g.NotSent(t0, policy)
	is.True(errors.Is(err, correlation.ErrIllegalTransition)) // can never go back to pending
	d, err = g.Submit(t0, policy, f.submission("r1"), "a2")
	is.NoErr(err)
	is.Equal(d.Code, errs.ContinuationOutcomeUncertain) // and is never dispatched again
}

func TestALoopApprovalGateConsumesTheResultsAndNeverDispatchesThemAgain(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	g := f.group
	_, err := g.Submit(t0, policy, f.submission("r1"), "a1")
	is.NoErr(err)
	d, err := g.Gated(t0, policy)
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.To, correlation.Consumed)        // the results were delivered: consumed, not uncertain
	is.Equal(d.Code, errs.UpstreamLoopApproval) // answered with the gate's own code
	is.Equal(g.CachedResponse, []byte(nil))     // nothing is cached: the gate is no answer to replay
	is.True(!g.TerminalExpiresAt.IsZero())      // the tombstone is kept
	d, err = g.Submit(t0, policy, f.submission("r1"), "a2")
	is.NoErr(err)
	record(t.Name(), d)
	is.True(d.Effect != correlation.EffectDispatch) // the same results are never dispatched again
	is.Equal(d.Row, "C33")
	is.Equal(d.Code, errs.UpstreamLoopApproval) // and get the gate's answer again, not "already consumed"
	retooled := f.submission("r1")
	retooled.ToolsHash = "sha256:without-a-placeholder"
	d, err = g.Submit(t0, policy, retooled, "a3")
	is.NoErr(err)
	is.Equal(d.Code, errs.UpstreamLoopApproval) // with other tools too (Claude Code's 400 recovery)
	d, err = g.Submit(t0, policy, f.submission("r2"), "a4")
	is.NoErr(err)
	is.Equal(d.Code, errs.ContinuationConflict) // other results stay a conflict
}

func TestAnIllegalTransitionChangesNothing(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	g := f.group
	before := g.Clone()
	_, err := g.Complete(t0, policy, nil, "")
	is.True(errors.Is(err, correlation.ErrIllegalTransition)) // Complete needs INFLIGHT
	is.Equal(g.State, before.State)                           // state unchanged
	is.True(!errs.Has(err, errs.InternalError))               // not an internal code either
	is.True(len(errs.Redact(err)) > 0)                        // and renders for logs
}
