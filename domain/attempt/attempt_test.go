package attempt_test

import (
	"os"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/attempt"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/internal/audit"
)

func TestMain(m *testing.M) {
	os.Exit(audit.Main(m, attempt.Table()))
}

// record notes, for `make audit`, that test exercised the decision's row.
func record(test string, d attempt.Decision) {
	if d.Row != "" {
		audit.Record(attempt.MachineName, d.Row, test)
	}
}

// model is the hand-written answer of the machine to an event in a state,
// from docs/USAGE.md ("Retries never spend twice"), sharing no code with the
// table: the next state, the effect and the code; ok is false for an illegal
// pair.
func model(s attempt.State, e attempt.Event) (attempt.State, attempt.Effect, errs.Code, bool) {
	inFlight := s == attempt.InFlight || s == attempt.Awaited
	finished := s == attempt.Answered || s == attempt.Failed || s == attempt.Unknown
	switch {
	case s == attempt.Absent && (e == attempt.Question || e == attempt.Retry || e == attempt.Repeat):
		return attempt.InFlight, attempt.EffectDispatch, "", true // dispatched once, recorded
	case inFlight && e == attempt.Retry:
		return attempt.Awaited, attempt.EffectWait, "", true // the retry waits for the first attempt
	case inFlight && e == attempt.Repeat:
		return s, attempt.EffectReject, errs.IdempotencyKeyInUse, true
	case inFlight && e == attempt.Question:
		return s, attempt.EffectPass, "", true // a new question, unrecorded
	case s == attempt.InFlight && e == attempt.Await:
		return attempt.Awaited, attempt.EffectTransition, "", true
	case inFlight && e == attempt.Succeed:
		return attempt.Answered, attempt.EffectTransition, "", true
	case inFlight && e == attempt.Fail:
		return attempt.Failed, attempt.EffectTransition, "", true
	case inFlight && e == attempt.Abandon:
		return attempt.Absent, attempt.EffectTransition, "", true
	case inFlight && e == attempt.Lapse:
		return attempt.Unknown, attempt.EffectTransition, "", true
	case (s == attempt.Answered || s == attempt.Failed) && (e == attempt.Retry || e == attempt.Repeat):
		return s, attempt.EffectReplay, "", true // the recorded outcome, never dispatched
	case s == attempt.Unknown && (e == attempt.Retry || e == attempt.Repeat):
		return s, attempt.EffectReject, errs.RetryOutcomeUnknown, true
	case s != attempt.Absent && e == attempt.KeyReused:
		return s, attempt.EffectReject, errs.IdempotencyKeyReused, true
	case finished && e == attempt.Expire:
		return attempt.Absent, attempt.EffectTransition, "", true
	}
	return s, "", "", false
}

func TestEveryStateAndEventMatchesTheModel(t *testing.T) {
	declared := 0
	for _, s := range attempt.States {
		for _, e := range attempt.Events {
			t.Run(string(s)+"/"+string(e), func(t *testing.T) {
				is := is.New(t)
				d, err := attempt.Fire(s, e)
				to, effect, code, ok := model(s, e)
				if !ok {
					is.True(errors.Is(err, attempt.ErrIllegalTransition)) // undeclared pairs are illegal
					return
				}
				declared++
				is.NoErr(err)
				is.Equal(d.To, to)
				is.Equal(d.Effect, effect)
				is.Equal(d.Code, code)
				record(t.Name(), d)
			})
		}
	}
	if declared != len(attempt.Table().Rows) {
		t.Fatalf("model declares %d pairs, table has %d rows", declared, len(attempt.Table().Rows))
	}
}

func TestTheTableIsWellFormed(t *testing.T) {
	is := is.New(t)
	is.NoErr(attempt.Table().Validate())
}

func TestGraphMatchesGoldenDOT(t *testing.T) {
	is := is.New(t)
	want, err := os.ReadFile("../../spec/attempt.dot") // the one copy, written by `make spec`
	is.NoErr(err)
	is.Equal(attempt.Graph(), string(want)) // run `make spec` after changing rows
}

// A record's state is read from its fields: in flight until finished, unknown
// once its deadline passed unfinished or when no answer was kept.
func TestTheStateIsReadFromTheRecord(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	for _, c := range []struct {
		f    attempt.Fields
		want attempt.State
	}{
		{attempt.Fields{}, attempt.Absent},
		{attempt.Fields{Exists: true, Deadline: later}, attempt.InFlight},
		{attempt.Fields{Exists: true, Awaited: true, Deadline: later}, attempt.Awaited},
		{attempt.Fields{Exists: true, Deadline: now}, attempt.Unknown}, // its owner is gone
		{attempt.Fields{Exists: true, Done: true, Answered: true, Deadline: now}, attempt.Answered},
		{attempt.Fields{Exists: true, Done: true, Code: "upstream_failure", Deadline: later}, attempt.Failed},
		{attempt.Fields{Exists: true, Done: true, Deadline: later}, attempt.Unknown}, // the answer was not kept
	} {
		is.Equal(attempt.Of(c.f, now), c.want)
	}
}

// recordMachine drives one record through random requests and changes with a
// plain model: at most one dispatch is ever recorded per record's life in
// flight, a repeat is never dispatched while a live record answers it, and
// a failure is never replayed as a success.
type recordMachine struct {
	state      attempt.State
	dispatches int // dispatches of the record's request since it was last absent
	failed     bool
}

func (m *recordMachine) fire(t *rapid.T, e attempt.Event) attempt.Decision {
	d, err := attempt.Fire(m.state, e)
	to, effect, code, ok := model(m.state, e)
	if !ok {
		if !errors.Is(err, attempt.ErrIllegalTransition) {
			t.Fatalf("%s in %s: got (%+v, %v) vs expected an illegal transition", e, m.state, d, err)
		}
		return d
	}
	if err != nil || d.To != to || d.Effect != effect || d.Code != code {
		t.Fatalf("%s in %s: got (%+v, %v) vs expected (%s, %s, %q)", e, m.state, d, err, to, effect, code)
	}
	record("TestARecordDispatchesItsRequestOnce", d)
	if d.Effect == attempt.EffectDispatch {
		m.dispatches++
		if m.dispatches > 1 {
			t.Fatalf("a second dispatch of a recorded request (%s)", d.Row)
		}
	}
	if d.Effect == attempt.EffectReplay && m.failed != (d.From == attempt.Failed) {
		t.Fatalf("replayed from %s while the attempt failed=%v", d.From, m.failed)
	}
	switch e {
	case attempt.Fail:
		m.failed = true
	case attempt.Succeed:
		m.failed = false
	}
	if d.To == attempt.Absent {
		m.dispatches, m.failed = 0, false // removed: the next request is a first one
	}
	m.state = d.To
	return d
}

func TestARecordDispatchesItsRequestOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &recordMachine{state: attempt.Absent}
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			m.fire(t, rapid.SampledFrom(attempt.Events).Draw(t, "event"))
		}
	})
}
