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

// Tracker follows one upstream stream from its first event to its outcome:
// Fire returns the id of the declared row that applied, or an error (and then
// nothing changed). It is not safe for concurrent use: one Tracker per stream.
type Tracker struct {
	c    *compiled
	st   State
	num  int // st.index(), kept by the machine
	code errs.Code
	row  string // the id of the last row that changed the state
}

// NewTracker returns a tracker in AWAITING for rule, fired by the rule's
// machine (built once from the rows and shared). It panics on an unknown rule
// (use ParseRule first).
func NewTracker(rule Rule) *Tracker {
	return &Tracker{c: compiledFor(rule), st: Awaiting, num: Awaiting.index()}
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

// Fire applies one observed event (docs/COMPLETION.md) and returns the id of
// the row that applied. code is the stable code a Failure carries — an
// upstream failure event or a decoding failure (malformed, oversized or
// unknown event…); empty means errs.UpstreamFailure and a code outside the
// catalog is recorded as errs.InternalError. Every other event carries none: a
// code with one is the decoder's mistake, an internal_error that changes
// nothing.
func (t *Tracker) Fire(e Event, code errs.Code) (string, error) {
	if e == Failure {
		if code == "" {
			code = errs.UpstreamFailure
		} else if _, ok := errs.Lookup(code); !ok {
			code = errs.InternalError
		}
	} else if code != "" {
		return "", errs.Newf(errs.InternalError, "completion %s: %s carries no code", t.c.rule, e)
	}
	from := t.num
	i, err := t.c.machine.Fire(t, e, struct{}{})
	if err != nil {
		return "", err
	}
	r := t.c.rows[i]
	if t.num == from { // a self-loop
		return r.ID, nil
	}
	t.code, t.row = r.Code, r.ID
	if r.To == Failed && r.Code == "" {
		t.code = code
	}
	return r.ID, nil
}
