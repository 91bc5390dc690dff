// Package attempt is the declared machine of a recorded request: a fresh
// request a client may send again (an SDK's automatic retry, Claude Code's
// own retry, or an explicit Idempotency-Key), whose outcome a repeat gets
// instead of a second upstream dispatch (docs/USAGE.md, "Retries never spend
// twice"). The record lives in an attempt store (ports.AttemptStore) as plain
// fields; Of reads its state from them, and every answer to a repeat and
// every change of the record is a row of this table. Time is an argument;
// nothing here reads a clock or performs I/O.
package attempt

import (
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/fsm"
)

// State is what a record says of its request.
type State string

// SafeValue marks states as safe for logs.
func (State) SafeValue() {}

// States of a record. Absent is a pseudo-state: no live record (never
// recorded, abandoned because nothing was dispatched, or expired).
const (
	Absent   State = "ABSENT"
	InFlight State = "IN_FLIGHT"
	// Awaited: in flight, and a repeat waits for it: its owner reads the
	// upstream exchange to its end even when its own client went away.
	Awaited  State = "AWAITED"
	Answered State = "ANSWERED"
	Failed   State = "FAILED"
	// Unknown: its owner's deadline passed before it finished (a stopped
	// replica, a released exchange), or it finished without a kept answer.
	Unknown State = "UNKNOWN"
)

// Event is a trigger of the machine.
type Event string

// SafeValue marks events as safe for logs.
func (Event) SafeValue() {}

// Events: the kinds of a request that finds a record (or none), and the
// changes its owner or time makes.
const (
	// Retry: a marked retry (x-stainless-retry-count ≥ 1), or an identical
	// body of Claude Code, of the recorded request.
	Retry Event = "Retry"
	// Repeat: the same Idempotency-Key with the same body.
	Repeat Event = "Repeat"
	// KeyReused: the same Idempotency-Key with another body.
	KeyReused Event = "KeyReused"
	// Question: a request its client may retry, not marked as a retry
	// (count 0): a new question, even when identical to a recorded one.
	Question Event = "Question"
	Await    Event = "Await"
	Succeed  Event = "Succeed"
	Fail     Event = "Fail"
	// Abandon: the attempt provably dispatched nothing, or the service
	// proved it processed nothing (it lost the conversation).
	Abandon Event = "Abandon"
	// Lapse: the owner's deadline passed before it finished.
	Lapse Event = "Lapse"
	// Expire: the record's time to live passed.
	Expire Event = "Expire"
)

// Effect is what the caller does after a row.
type Effect string

// SafeValue marks effects as safe for logs.
func (Effect) SafeValue() {}

const (
	// EffectDispatch: record the request in flight and dispatch it.
	EffectDispatch Effect = "dispatch"
	// EffectPass: dispatch the request unrecorded (a new question while an
	// identical one is in flight).
	EffectPass Effect = "pass"
	// EffectWait: mark the record awaited, wait for its end, and look again.
	EffectWait Effect = "wait"
	// EffectReplay: answer with the recorded outcome: the answer replayed,
	// or the failure's own code; never dispatched.
	EffectReplay Effect = "replay"
	// EffectReject: answer with the row's code; never dispatched.
	EffectReject Effect = "reject"
	// EffectTransition: the record changed.
	EffectTransition Effect = "transition"
)

type row struct {
	id     string
	from   State
	on     Event
	to     State
	effect Effect
	code   errs.Code
	result string
	ref    string
}

// live are the states of a record that exists.
var live = []State{InFlight, Awaited, Answered, Failed, Unknown}

// rows is the one declaration of the machine (docs/USAGE.md explains it);
// the ids are numbered in declaration order.
var rows = func() []row {
	rs := []row{
		{"", Absent, Question, InFlight, EffectDispatch, "", "recorded in flight (a finished record of the same request is replaced), then dispatched", "a request its client may retry: marked with a retry count of 0, or with an Idempotency-Key"},
		{"", Absent, Retry, InFlight, EffectDispatch, "", "recorded in flight, then dispatched as a first attempt", "no record: the first attempt dispatched nothing, expired, or was never recorded"},
		{"", Absent, Repeat, InFlight, EffectDispatch, "", "recorded in flight, then dispatched as a first attempt", "no record of the key: a first request, or its record expired"},
		{"", InFlight, Retry, Awaited, EffectWait, "", "marked awaited; the retry waits for the first attempt's end, then takes its outcome", "an SDK retries while its first attempt is still answered (it timed out first)"},
		{"", Awaited, Retry, Awaited, EffectWait, "", "the retry waits for the first attempt's end, then takes its outcome", "a further retry while the first attempt is still answered"},
		{"", InFlight, Repeat, InFlight, EffectReject, errs.IdempotencyKeyInUse, "409, never dispatched", "the IETF draft: a key whose first request is still being answered"},
		{"", Awaited, Repeat, Awaited, EffectReject, errs.IdempotencyKeyInUse, "409, never dispatched", "the IETF draft: a key whose first request is still being answered"},
		{"", InFlight, Question, InFlight, EffectPass, "", "dispatched unrecorded", "the same question again, not marked as a retry, while the first is answered: a new question"},
		{"", Awaited, Question, Awaited, EffectPass, "", "dispatched unrecorded", "the same question again, not marked as a retry, while the first is answered: a new question"},
		{"", InFlight, Await, Awaited, EffectTransition, "", "the owner reads its exchange to the end even when its client left", "a retry waits for it"},
		{"", InFlight, Succeed, Answered, EffectTransition, "", "the answer kept within the byte budget (UNKNOWN when it does not fit)", "the attempt's answer was proven complete"},
		{"", Awaited, Succeed, Answered, EffectTransition, "", "the answer kept within the byte budget (UNKNOWN when it does not fit)", "the attempt's answer was proven complete"},
		{"", InFlight, Fail, Failed, EffectTransition, "", "the failure's code kept (a released exchange: retry_outcome_unknown)", "the attempt failed after it dispatched"},
		{"", Awaited, Fail, Failed, EffectTransition, "", "the failure's code kept", "the attempt failed after it dispatched"},
		{"", InFlight, Abandon, Absent, EffectTransition, "", "record removed: a retry is dispatched as a first attempt", "the attempt provably dispatched nothing, or the service processed nothing (it lost the conversation)"},
		{"", Awaited, Abandon, Absent, EffectTransition, "", "record removed: the waiting retry is dispatched as a first attempt", "the attempt provably dispatched nothing, or the service processed nothing (it lost the conversation)"},
		{"", InFlight, Lapse, Unknown, EffectTransition, "", "its outcome is unknown", "its owner's deadline passed (a stopped replica)"},
		{"", Awaited, Lapse, Unknown, EffectTransition, "", "its outcome is unknown", "its owner's deadline passed (a stopped replica)"},
		{"", Answered, Retry, Answered, EffectReplay, "", "the answer replayed (JSON, or the stream rendered again), disclosed x-pmgate-replayed", "a retry after the first attempt's end"},
		{"", Answered, Repeat, Answered, EffectReplay, "", "the answer replayed, disclosed x-pmgate-replayed", "the IETF draft: the key's recorded outcome"},
		{"", Failed, Retry, Failed, EffectReplay, "", "the failure's own code, disclosed; never a success", "a retry after the first attempt failed after dispatch"},
		{"", Failed, Repeat, Failed, EffectReplay, "", "the failure's own code, disclosed; never a success", "the IETF draft: the key's recorded outcome"},
		{"", Unknown, Retry, Unknown, EffectReject, errs.RetryOutcomeUnknown, "502, never dispatched", "the first attempt may have reached the upstream and its outcome is not known"},
		{"", Unknown, Repeat, Unknown, EffectReject, errs.RetryOutcomeUnknown, "502, never dispatched", "the first attempt may have reached the upstream and its outcome is not known"},
	}
	for _, s := range live {
		rs = append(rs, row{"", s, KeyReused, s, EffectReject, errs.IdempotencyKeyReused, "422, never dispatched", "the IETF draft: a key sent again with another body"})
	}
	for _, s := range []State{Answered, Failed, Unknown} {
		rs = append(rs, row{"", s, Expire, Absent, EffectTransition, "", "record removed", "the record's time to live passed"})
	}
	for i := range rs {
		rs[i].id = id(i + 1)
	}
	return rs
}()

func id(n int) string { return fmt.Sprintf("R%02d", n) }

// States lists every state in declaration order.
var States = []State{Absent, InFlight, Awaited, Answered, Failed, Unknown}

// Events lists every event in declaration order.
var Events = []Event{Question, Retry, Repeat, KeyReused, Await, Succeed, Fail, Abandon, Lapse, Expire}

// MachineName is the machine's name in spec/ and the audit.
const MachineName = "attempt"

// Table returns the neutral declaration of the machine.
func Table() fsm.Table {
	t := fsm.Table{
		Name:     MachineName,
		Title:    "Recorded request machine (docs/USAGE.md, \"Retries never spend twice\")",
		Initial:  string(Absent),
		Terminal: []string{},
		Notes: []string{
			"`ABSENT` is a pseudo-state: no live record of the request (never recorded, removed because nothing was dispatched, or expired). It is never stored.",
			"A record's state is read from its fields by `Of`: in flight until its owner finishes it, `UNKNOWN` once its deadline passed unfinished or when it finished without a kept answer.",
			"Only fresh requests carry `Retry` and `Question`; a continuation (tool results) is dispatched at most once by its group. An explicit key (`Repeat`, `KeyReused`) is honoured on both.",
			"A pair (state, event) without a row is an illegal transition: an error, and nothing changes.",
		},
	}
	for _, s := range States {
		t.States = append(t.States, string(s))
	}
	for _, r := range rows {
		res := string(r.effect)
		if r.code != "" {
			res += " `" + string(r.code) + "`"
		}
		res += ": " + r.result
		t.Rows = append(t.Rows, fsm.Row{ID: r.id, From: string(r.from), On: string(r.on), To: string(r.to), Result: res, Ref: r.ref})
	}
	return t
}

// ErrIllegalTransition marks an event that has no row in the record's state.
var ErrIllegalTransition = errors.New("attempt: illegal transition")

// Record is what the machine sees of a stored record.
type Record struct {
	State State
}

var machine = fsm.NewMachine(fsm.Spec[Record, State, Event, struct{}]{
	Table:     Table(),
	State:     func(r *Record) *State { return &r.State },
	Unhandled: fsm.Illegal[State, Event](MachineName, ErrIllegalTransition, "the record is not in a state that accepts this event"),
})

// Graph returns the DOT rendering of the machine, from stateless.
func Graph() string { return machine.Graph() }

// Decision is the outcome of one row.
type Decision struct {
	Row    string
	From   State
	To     State
	Event  Event
	Effect Effect
	// Code answers the request, for EffectReject.
	Code errs.Code
}

// Err returns the decision's client-facing error, or nil.
func (d Decision) Err() error {
	if d.Code == "" {
		return nil
	}
	return errs.New(d.Code)
}

// Fire applies ev to a record in state s.
func Fire(s State, ev Event) (Decision, error) {
	r := Record{State: s}
	i, err := machine.Fire(&r, ev, struct{}{})
	if err != nil {
		return Decision{}, err
	}
	row := &rows[i]
	return Decision{Row: row.id, From: s, To: r.State, Event: ev, Effect: row.effect, Code: row.code}, nil
}

// Fields are the stored fields a record's state is read from.
type Fields struct {
	Exists   bool // a live record holds the key
	Done     bool
	Awaited  bool
	Code     string // the failure's code; "" for a success
	Answered bool   // an answer is kept
	Deadline time.Time
}

// Of reads the state of a record at now.
func Of(f Fields, now time.Time) State {
	switch {
	case !f.Exists:
		return Absent
	case !f.Done && !now.Before(f.Deadline):
		return Unknown
	case !f.Done && f.Awaited:
		return Awaited
	case !f.Done:
		return InFlight
	case f.Code != "":
		return Failed
	case f.Answered:
		return Answered
	}
	return Unknown
}
