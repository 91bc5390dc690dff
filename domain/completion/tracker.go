package completion

import (
	"errors"

	"github.com/pmgate/pmgate/domain/errs"
)

// Sentinels of the errors a Tracker returns. Both also carry errs.InternalError:
// they mean the decoder fed an event it should not have.
var (
	// ErrEventAfterOutcome is returned for any event after a terminal outcome.
	ErrEventAfterOutcome = errors.New("completion: event after terminal outcome")
	// ErrUndeclaredEvent is returned for an event no row declares; the package's
	// start-up checks make it unreachable.
	ErrUndeclaredEvent = errors.New("completion: undeclared event")
)

// Tracker follows one upstream stream from its first event to its outcome. Every
// method returns the id of the declared row that applied, or an error (and then
// nothing changed). It is not safe for concurrent use: one Tracker per stream.
type Tracker struct {
	c    *compiled
	st   State
	si   int // st.index()
	code errs.Code
	row  string   // the id of the last row that changed the state
	m    *binding // the tracker's stateless machine; nil once an outcome is reached
}

// NewTracker returns a tracker in AWAITING for rule, with its stateless machine:
// one per tracker, configured from the rows once and reused from a per-rule pool
// after earlier trackers reached their outcome. It panics on an unknown rule
// (use ParseRule first).
func NewTracker(rule Rule) *Tracker {
	t := &Tracker{c: compiledFor(rule), st: Awaiting}
	t.m = t.c.acquire(t)
	return t
}

// Rule returns the tracker's rule.
func (t *Tracker) Rule() Rule { return t.c.rule }

// State returns the current state.
func (t *Tracker) State() State { return t.st }

// Outcome returns the outcome so far; it is only meaningful once Terminal.
func (t *Tracker) Outcome() Outcome {
	return Outcome{State: t.st, Complete: t.st.Complete(), Code: t.code}
}

// OutcomeRow returns the id of the row that led to the current state (the row
// that decided the outcome once Terminal), or "" before any state change.
func (t *Tracker) OutcomeRow() string { return t.row }

// Metadata records a valid, known, non-output event.
func (t *Tracker) Metadata() (string, error) { return t.fire(Metadata, "") }

// Output records a text or tool-call chunk.
func (t *Tracker) Output() (string, error) { return t.fire(Output, "") }

// Usage records a usage event.
func (t *Tracker) Usage() (string, error) { return t.fire(Usage, "") }

// Failure records a failure with its stable code: an upstream failure event or a
// decoding failure (malformed, oversized or unknown event…). An empty code means
// errs.UpstreamFailure; a code outside the catalog is recorded as
// errs.InternalError.
func (t *Tracker) Failure(code errs.Code) (string, error) {
	if code == "" {
		code = errs.UpstreamFailure
	} else if _, ok := errs.Lookup(code); !ok {
		code = errs.InternalError
	}
	return t.fire(Failure, code)
}

// Done records the exact [DONE] payload.
func (t *Tracker) Done() (string, error) { return t.fire(Done, "") }

// DoneEvent records a {"eventType":"done"} event.
func (t *Tracker) DoneEvent() (string, error) { return t.fire(DoneEvent, "") }

// EOF records the end of the body. partial says a partial SSE frame, UTF-8
// sequence or JSON payload was still buffered.
func (t *Tracker) EOF(partial bool) (string, error) {
	if partial {
		return t.fire(EOFPartial, "")
	}
	return t.fire(EOF, "")
}

// Abort records that the client cancelled.
func (t *Tracker) Abort() (string, error) { return t.fire(Abort, "") }

// Timeout records that the request timeout expired.
func (t *Tracker) Timeout() (string, error) { return t.fire(Timeout, "") }

// ReadError records a socket or reader error.
func (t *Tracker) ReadError() (string, error) { return t.fire(ReadError, "") }

// fire applies one event. A declared self-loop is answered from the index; any
// other event fires the stateless machine, whose result must agree with the row.
func (t *Tracker) fire(e Event, code errs.Code) (string, error) {
	var r *row
	if t.si < numNonTerminal {
		r = t.c.index[t.si][e.index()]
		if r != nil && r.From == r.To {
			return r.ID, nil
		}
	}
	if err := t.fireMachine(e, code); err != nil {
		return "", err
	}
	if r == nil || t.st != r.To {
		// Unreachable: the machine and the index come from the same rows, and a
		// test checks that they agree everywhere.
		return "", errs.Newf(errs.InternalError, "completion %s: machine and index disagree on %s", t.c.rule, e)
	}
	t.code, t.row = r.Code, r.ID
	if r.To == Failed && r.Code == "" {
		t.code = code
	}
	return r.ID, nil
}

// fireMachine fires the stateless machine without the fast path. Once the
// tracker has an outcome its machine is back in the pool; an event then borrows
// one just long enough to be refused.
func (t *Tracker) fireMachine(e Event, code errs.Code) error {
	m := t.m
	if m == nil {
		m = t.c.acquire(t)
	}
	var err error
	if e == Failure {
		err = m.sm.Fire(boxedEvents[e.index()], code)
	} else {
		err = m.sm.Fire(boxedEvents[e.index()])
	}
	if t.st.Terminal() {
		t.m = nil
		t.c.release(m)
	}
	return err
}
