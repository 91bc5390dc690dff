package correlation

import (
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/fsm"
)

// Event is a trigger of the group machine.
type Event string

// SafeValue marks events as safe for logs.
func (Event) SafeValue() {}

// Events of the group machine. Submit* events are the classified outcome of one
// continuation request against one group (see Classify); the others are server
// decisions and the passing of time.
const (
	SubmitValid             Event = "SubmitValid"
	SubmitIncomplete        Event = "SubmitIncomplete"
	SubmitGroupMismatch     Event = "SubmitGroupMismatch"
	SubmitHistoryMismatch   Event = "SubmitHistoryMismatch"
	SubmitModelMismatch     Event = "SubmitModelMismatch"
	SubmitToolsMismatch     Event = "SubmitToolsMismatch"
	SubmitWorkspaceMismatch Event = "SubmitWorkspaceMismatch"
	SubmitUnknownID         Event = "SubmitUnknownID"
	SubmitSame              Event = "SubmitSame"
	SubmitDifferent         Event = "SubmitDifferent"
	SubmitAny               Event = "SubmitAny"
	// SubmitHistory: the results the group accepted, followed by new user
	// content (text after them, or user messages): history and a new turn.
	SubmitHistory    Event = "SubmitHistory"
	Deadline         Event = "Deadline"
	CapacityPressure Event = "CapacityPressure"
	Cancel           Event = "Cancel"
	MovedPast        Event = "MovedPast"
	Complete         Event = "Complete"
	NotSent          Event = "NotSent"
	Ambiguous        Event = "Ambiguous"
	Gated            Event = "Gated"
	TombstoneElapsed Event = "TombstoneElapsed"
	// SubmitSameGated: the results the loop-approval gate took, sent again
	// (the tools may differ: Claude Code's 400 recovery re-sends them without
	// a placeholder tool).
	SubmitSameGated Event = "SubmitSameGated"
)

// GateDigest is the TerminalResponseDigest of a group whose dispatch the
// service's loop-approval gate answered: its terminal response was the gate,
// so a retry of its results gets the gate's answer again (row C33).
const GateDigest = "loop-approval-gate"

// Effect is what a caller must do after a row was applied.
type Effect string

// SafeValue marks effects as safe for logs.
func (Effect) SafeValue() {}

// Effects of rows.
const (
	// EffectDispatch: the claim was won; send exactly one upstream TOOL_RESPONSE.
	EffectDispatch Effect = "dispatch"
	// EffectReject: answer the request with the row's code; nothing changed.
	EffectReject Effect = "reject"
	// EffectReplay: return the cached terminal response, or the row's code when
	// none is retained; nothing changed.
	EffectReplay Effect = "replay"
	// EffectResume: the results are history; send only the request's new user
	// content as the next USER_QUERY of the group's conversation (when the
	// whole transcript does not fit a fresh one), disclosed; nothing changed.
	EffectResume Effect = "resume"
	// EffectTransition: the state changed; when the row has a code, a request
	// that observed the change is answered with it.
	EffectTransition Effect = "transition"
	// EffectKeep: nothing changed and nothing is answered on behalf of this group
	// (capacity pressure refuses the newer group instead).
	EffectKeep Effect = "keep"
)

// States lists every state in declaration order.
var States = []State{Pending, Inflight, Consumed, Expired, Cancelled, Uncertain, Removed}

// Events lists every event in declaration order.
var Events = []Event{SubmitValid, SubmitIncomplete, SubmitGroupMismatch, SubmitHistoryMismatch,
	SubmitModelMismatch, SubmitToolsMismatch, SubmitWorkspaceMismatch, SubmitUnknownID, SubmitSame,
	SubmitDifferent, SubmitAny, SubmitHistory, Deadline, CapacityPressure, Cancel, MovedPast, Complete, NotSent, Ambiguous, Gated, TombstoneElapsed, SubmitSameGated}

// MachineName is the name of the group machine in spec/ and the audit.
const MachineName = "correlation"

// Table returns the neutral declaration of the group machine.
func Table() fsm.Table {
	t := fsm.Table{
		Name:     MachineName,
		Title:    "Correlation group machine (docs/CORRELATION.md)",
		Initial:  string(Pending),
		Terminal: []string{string(Consumed), string(Expired), string(Cancelled), string(Uncertain), string(Removed)},
		Notes: []string{
			"`REMOVED` is a pseudo-state: the record no longer exists (tombstone TTL elapsed, or never issued, or issued to another principal). It is never stored; a lookup that finds nothing is answered as from `REMOVED`.",
			"Submissions are classified by `Classify` in this order: observed deadline; then for `PENDING` the validation steps (unresolved id → mixed groups → duplicates/extras, then missing results → misplaced results → history → model → workspace, tools); for `INFLIGHT`/`CONSUMED` a submission is `SubmitSame` only when it passes every step and its results hash equals the accepted one, otherwise `SubmitDifferent`; terminal states take `SubmitAny`.",
			"A pair (state, event) without a row is an illegal transition: the machine returns an error marked `correlation.ErrIllegalTransition` and changes nothing.",
			"Every transition runs inside the store's update closure on a copy; the copy is written only when the closure succeeds.",
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

// ErrIllegalTransition marks an event that has no row in the group's state.
var ErrIllegalTransition = errors.New("correlation: illegal transition")

// Policy holds the TTLs the machine applies when it enters a state.
type Policy struct {
	PendingTTL  time.Duration
	InflightTTL time.Duration // hard deadline of a claim (request timeout + margin)
	TerminalTTL time.Duration // tombstone retention
}

// Decision is the outcome of applying one row.
type Decision struct {
	Row    string
	From   State
	To     State
	Event  Event
	Effect Effect
	// Code is the stable code to answer the observing request with, if any.
	Code errs.Code
	// Replay is the cached terminal response for EffectReplay, when retained.
	Replay []byte
}

// Err returns the decision's client-facing error, or nil.
func (d Decision) Err() error {
	if d.Code == "" || d.Effect == EffectKeep {
		return nil
	}
	return errs.New(d.Code)
}

// input is the argument of one firing: what the entry actions need besides
// the group.
type input struct {
	now         time.Time
	policy      Policy
	attemptID   string
	resultsHash string
	response    []byte
	digest      string
}

// machine is built once from rows and shared (see fsm.Machine): concurrent use
// on different groups is safe.
var machine = fsm.NewMachine(fsm.Spec[Group, State, Event, input]{
	Table: Table(),
	State: func(g *Group) *State { return &g.State },
	Entry: []fsm.Entry[Group, State, Event, input]{
		{Do: recordClaim, From: SubmitValid, In: []State{Inflight}},
		{Do: clearClaim, From: NotSent, In: []State{Pending}},
		{Do: recordResponse, From: Complete, In: []State{Consumed}},
		{Do: recordGate, From: Gated, In: []State{Consumed}},
		{Do: startTombstone, In: []State{Consumed, Expired, Cancelled, Uncertain}},
	},
	Unhandled: fsm.Illegal[State, Event](MachineName, ErrIllegalTransition, "the group is not in a state that accepts this event"),
})

func recordClaim(g *Group, in input) {
	g.AcceptedResultsHash = in.resultsHash
	g.DispatchAttemptID = in.attemptID
	g.InflightExpiresAt = in.now.Add(in.policy.InflightTTL)
}

func clearClaim(g *Group, _ input) {
	g.AcceptedResultsHash = ""
	g.DispatchAttemptID = ""
	g.InflightExpiresAt = time.Time{}
}

func recordResponse(g *Group, in input) {
	g.TerminalResponseDigest = in.digest
	if in.response != nil {
		g.CachedResponse = append(make([]byte, 0, len(in.response)), in.response...)
	}
}

func recordGate(g *Group, _ input) {
	g.TerminalResponseDigest = GateDigest
}

func startTombstone(g *Group, in input) {
	g.TerminalExpiresAt = in.now.Add(in.policy.TerminalTTL)
	g.InflightExpiresAt = time.Time{}
}

// fire fires ev on g and returns the decision of the applied row.
func (g *Group) fire(ev Event, in input) (Decision, error) {
	from := g.State
	i, err := machine.Fire(g, ev, in)
	if err != nil {
		return Decision{}, err
	}
	r := &rows[i]
	d := Decision{Row: r.id, From: from, To: g.State, Event: ev, Effect: r.effect, Code: r.code}
	if r.effect == EffectReplay && g.CachedResponse != nil {
		d.Replay = append(make([]byte, 0, len(g.CachedResponse)), g.CachedResponse...)
		d.Code = ""
	}
	return d, nil
}

// Graph returns the DOT rendering of the group machine, from stateless.
func Graph() string { return machine.Graph() }

// Submit classifies one continuation submission against g and applies the row.
// attemptID is the random dispatch attempt id stored when the claim is won.
//
// Expiry is checked on lookup: an overdue PENDING group expires (410), an
// overdue INFLIGHT group becomes UNCERTAIN, and an overdue tombstone is removed
// and the submission answered as for an id that does not exist.
func (g *Group) Submit(now time.Time, p Policy, sub Submission, attemptID string) (Decision, error) {
	if ev, due := g.Due(now); due && ev == TombstoneElapsed {
		if _, err := g.fire(TombstoneElapsed, input{now: now, policy: p}); err != nil {
			return Decision{}, err
		}
		return g.fire(SubmitAny, input{now: now, policy: p})
	}
	ev, resultsHash := Classify(*g, sub, now)
	return g.fire(ev, input{now: now, policy: p, attemptID: attemptID, resultsHash: resultsHash})
}

// ErrNotHistory marks a submission that does not carry the group's accepted
// results before new user content (Resume changed nothing).
var ErrNotHistory = errors.New("correlation: the results are not history")

// Resume classifies a request that answers the group's calls and then adds a
// new user turn (chat completions, Responses: user messages after the
// results): when the results are the ones the group accepted and dispatched,
// it fires SubmitHistory (the results are history); otherwise it changes
// nothing and returns ErrNotHistory, and the request goes the way it would
// have gone without this rule.
func (g *Group) Resume(now time.Time, p Policy, sub Submission) (Decision, error) {
	if ev, _ := Classify(*g, sub, now); ev != SubmitHistory {
		return Decision{}, ErrNotHistory
	}
	return g.fire(SubmitHistory, input{now: now, policy: p})
}

// SubmitUnknown answers a submission none of whose ids resolve: the REMOVED row.
func SubmitUnknown() Decision {
	g := Group{State: Removed}
	d, err := g.fire(SubmitAny, input{})
	if err != nil {
		panic(err) // the row is declared; failing here is mis-wiring
	}
	return d
}

// Complete records the proven end of the dispatched continuation. response is
// the terminal response to cache (nil when it is not retained) and digest its
// digest.
func (g *Group) Complete(now time.Time, p Policy, response []byte, digest string) (Decision, error) {
	return g.fire(Complete, input{now: now, policy: p, response: response, digest: digest})
}

// NotSent fires NotSent: a claimed group returns to PENDING after a refusal
// by the key's limits before sending, or after a failure
// that proves nothing reached the upstream.
func (g *Group) NotSent(now time.Time, p Policy) (Decision, error) {
	return g.fire(NotSent, input{now: now, policy: p})
}

// Ambiguous fires Ambiguous: a timeout, disconnect, abort or ambiguous failure
// after the continuation may have been sent makes the group UNCERTAIN.
func (g *Group) Ambiguous(now time.Time, p Policy) (Decision, error) {
	return g.fire(Ambiguous, input{now: now, policy: p})
}

// Gated fires Gated: the dispatched continuation was answered by the
// service's loop-approval gate (a clean end, no answer). The results were
// accepted, so the group is CONSUMED like a completion, but with no cached
// answer: the gate is answered once, with its own code, and a re-sent copy of
// the same results is tool_call_already_consumed — never a second dispatch.
func (g *Group) Gated(now time.Time, p Policy) (Decision, error) {
	return g.fire(Gated, input{now: now, policy: p})
}

// Cancel cancels a pending group by explicit server decision (shutdown).
func (g *Group) Cancel(now time.Time, p Policy) (Decision, error) {
	return g.fire(Cancel, input{now: now, policy: p})
}

// MovedPast fires MovedPast when a request whose unanswered calls
// (Unanswered) are unanswered moved past g (MovedPastBy): its own
// conversation went on without its results, so nobody will continue it; a
// PENDING group is cancelled (row C28) and frees its capacity at once (one
// already overdue expires instead, as on any lookup). In any
// other state it is an illegal transition, and a request that did not move
// past g is ErrNotMovedPast; neither changes anything.
func (g *Group) MovedPast(now time.Time, p Policy, unanswered map[string]bool) (Decision, error) {
	if !MovedPastBy(*g, unanswered) {
		return Decision{}, ErrNotMovedPast
	}
	if ev, due := g.Due(now); due && ev == Deadline && g.State == Pending {
		return g.fire(Deadline, input{now: now, policy: p}) // already overdue: it expires, as on any lookup
	}
	return g.fire(MovedPast, input{now: now, policy: p})
}

// ErrNotMovedPast marks a request that did not move past a group (MovedPast).
var ErrNotMovedPast = errors.New("correlation: the request did not move past the group")

// NoteCapacityPressure records that a newer group was refused while g stayed
// pending; g never changes.
func (g *Group) NoteCapacityPressure() (Decision, error) {
	return g.fire(CapacityPressure, input{})
}

// Due reports which time event, if any, is due for g at now: Deadline for an
// overdue PENDING or INFLIGHT group, TombstoneElapsed for an old tombstone.
func (g Group) Due(now time.Time) (Event, bool) {
	switch {
	case g.State == Pending && !now.Before(g.PendingExpiresAt):
		return Deadline, true
	case g.State == Inflight && !g.InflightExpiresAt.IsZero() && !now.Before(g.InflightExpiresAt):
		return Deadline, true
	case g.State.Terminal() && !now.Before(g.TerminalExpiresAt):
		return TombstoneElapsed, true
	}
	return "", false
}

// Tick applies the time event due at now, if any. ok is false when nothing was due.
func (g *Group) Tick(now time.Time, p Policy) (d Decision, ok bool, err error) {
	ev, due := g.Due(now)
	if !due {
		return Decision{}, false, nil
	}
	d, err = g.fire(ev, input{now: now, policy: p})
	return d, err == nil, err
}
