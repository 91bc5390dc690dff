package conversation

import (
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/fsm"
)

// Event is a trigger of the anchor machine.
type Event string

// SafeValue marks events as safe for logs.
func (Event) SafeValue() {}

// Events of the anchor machine. Continue and the *Mismatch events are the
// classified lookup of an ACTIVE anchor by a fresh request (see Anchor.Claim);
// Lookup is that request meeting an anchor in any other state; the others are
// the outcome of the continued turn, the store's decisions and time.
const (
	Continue          Event = "Continue"
	ModelMismatch     Event = "ModelMismatch"
	ToolsMismatch     Event = "ToolsMismatch"
	WorkspaceMismatch Event = "WorkspaceMismatch"
	// InstructionsMismatch: the history matches, its system prompt or
	// developer messages do not (an agent's compaction request, an edited
	// system prompt).
	InstructionsMismatch Event = "InstructionsMismatch"
	// ContinueChanged: a fresh request whose whole transcript does not fit
	// one query, and whose history matches an ACTIVE anchor in everything but
	// its instructions or tools, claims it to continue it, disclosed
	// (Anchor.ContinueChanged).
	ContinueChanged  Event = "ContinueChanged"
	Lookup           Event = "Lookup"
	Complete         Event = "Complete"
	NotSent          Event = "NotSent"
	Ambiguous        Event = "Ambiguous"
	Deadline         Event = "Deadline"
	Drop             Event = "Drop"
	TombstoneElapsed Event = "TombstoneElapsed"
	// Resume: a fresh request whose whole transcript does not fit one query
	// claims a RESUMABLE anchor, or an ADVANCED one (an earlier point of a
	// conversation that moved on), to continue it, disclosed (Anchor.Resume).
	Resume Event = "Resume"
	// Lost: the service answered the continued (or resumed) turn with
	// CONVERSATION_NOT_FOUND; nothing can continue the conversation.
	Lost Event = "Lost"
)

// Effect is what a caller must do after a row was applied.
type Effect string

// SafeValue marks effects as safe for logs.
func (Effect) SafeValue() {}

// Effects of rows.
const (
	// EffectContinue: the claim was won; send only the new user messages, in
	// the anchor's upstream conversation.
	EffectContinue Effect = "continue"
	// EffectFresh: start a fresh upstream conversation with the whole
	// transcript, for the row's Reason; the anchor did not change.
	EffectFresh Effect = "fresh"
	// EffectTransition: the anchor's state changed.
	EffectTransition Effect = "transition"
	// EffectKeep: nothing changed (a claimed anchor is never dropped; the newer
	// anchor is not recorded instead).
	EffectKeep Effect = "keep"
)

// Reason says why a fresh request did not continue an upstream conversation.
// Reasons are logged; they never carry an id.
type Reason string

// SafeValue marks reasons as safe for logs.
func (Reason) SafeValue() {}

// Reasons of a fresh conversation.
const (
	// ReasonNoAnchor: nothing to continue — the request has no assistant answer
	// before its trailing user messages (a first turn).
	ReasonNoAnchor Reason = "no_anchor"
	// ReasonHistoryChanged: the history before the new user messages matches no
	// anchor of this principal: edited, truncated or re-ordered messages, a
	// changed system prompt — or an anchor this gateway no longer holds
	// (removed after its tombstone TTL, dropped for capacity, or never
	// recorded).
	ReasonHistoryChanged   Reason = "history_changed"
	ReasonModelChanged     Reason = "model_changed"
	ReasonToolsChanged     Reason = "tools_changed"
	ReasonWorkspaceChanged Reason = "workspace_changed"
	// ReasonInstructionsChanged: the history matches, the system prompt or
	// the developer messages before it do not.
	ReasonInstructionsChanged Reason = "instructions_changed"
	// ReasonExpired: the anchor outlived CONVERSATION_TTL_MS.
	ReasonExpired Reason = "expired"
	// ReasonRaced: another request is continuing the same anchor right now.
	ReasonRaced Reason = "raced"
	// ReasonAlreadyContinued: the anchor was continued before, with other new
	// messages (a regenerated or edited last user message): the upstream
	// conversation has moved past the history the client sent.
	ReasonAlreadyContinued Reason = "already_continued"
	// ReasonRetired: an earlier continuation of the anchor may have reached the
	// upstream without an answer the client saw.
	ReasonRetired Reason = "retired"
	// ReasonAfterFailure: the anchor's last continuation failed after it was
	// sent; the whole transcript fits one query, so it starts fresh.
	ReasonAfterFailure Reason = "after_failure"
	// ReasonStoreUnavailable: the anchor store could not be asked; starting
	// fresh is always correct.
	ReasonStoreUnavailable Reason = "store_unavailable"
)

type row struct {
	id     string
	from   State
	on     Event
	to     State
	effect Effect
	reason Reason
	result string
}

// rows is the one declaration of the anchor machine. The stateless machine,
// the spec, the audit and the exhaustive test's row lookup derive from it.
var rows = []row{
	{"A01", Active, Continue, Claimed, EffectContinue, "", "store a random claim id and the claim's hard deadline; send only the new user messages with the stored conversation id"},
	{"A02", Active, ModelMismatch, Active, EffectFresh, ReasonModelChanged, "fresh conversation with the whole transcript; anchor unchanged"},
	{"A03", Active, ToolsMismatch, Active, EffectFresh, ReasonToolsChanged, "fresh conversation with the whole transcript; anchor unchanged"},
	{"A04", Active, WorkspaceMismatch, Active, EffectFresh, ReasonWorkspaceChanged, "fresh conversation with the whole transcript; anchor unchanged"},
	{"A05", Active, Deadline, Expired, EffectTransition, "", "CONVERSATION_TTL_MS passed; tombstone retained"},
	{"A06", Active, Drop, Removed, EffectTransition, "", "superseded by a newer anchor of the same transcript, or the oldest ACTIVE anchor dropped for capacity"},
	{"A07", Claimed, Lookup, Claimed, EffectFresh, ReasonRaced, "another request holds the claim: fresh conversation (correct, only costlier)"},
	{"A08", Claimed, Complete, Advanced, EffectTransition, "", "the continued turn was proven complete; its extended transcript gets a new anchor"},
	{"A09", Claimed, NotSent, Active, EffectTransition, "", "the transport proved nothing was sent: claim cleared, the anchor may be continued again"},
	{"A10", Claimed, Ambiguous, Resumable, EffectTransition, "", "sent, outcome unknown: the upstream conversation may hold an unanswered message; resumed (disclosed) only by a turn whose whole transcript does not fit a fresh query"},
	{"A11", Claimed, Deadline, Resumable, EffectTransition, "", "the claim's hard deadline passed (the replica died mid-turn): resumable as after A10"},
	{"A12", Claimed, Drop, Claimed, EffectKeep, "", "a claimed anchor is never dropped; the newer anchor is not recorded"},
	{"A13", Advanced, Lookup, Advanced, EffectFresh, ReasonAlreadyContinued, "fresh conversation: the upstream conversation has moved past this history (a turn whose whole transcript does not fit resumes instead, A27)"},
	{"A14", Advanced, TombstoneElapsed, Removed, EffectTransition, "", "record removed"},
	{"A15", Advanced, Drop, Removed, EffectTransition, "", "tombstone superseded or dropped for capacity"},
	{"A16", Retired, Lookup, Retired, EffectFresh, ReasonRetired, "fresh conversation (a record of an earlier build)"},
	{"A17", Retired, TombstoneElapsed, Removed, EffectTransition, "", "record removed"},
	{"A18", Retired, Drop, Removed, EffectTransition, "", "tombstone superseded or dropped for capacity"},
	{"A19", Expired, Lookup, Expired, EffectFresh, ReasonExpired, "fresh conversation"},
	{"A20", Expired, TombstoneElapsed, Removed, EffectTransition, "", "record removed"},
	{"A21", Expired, Drop, Removed, EffectTransition, "", "tombstone superseded or dropped for capacity"},
	{"A22", Removed, Lookup, Removed, EffectFresh, ReasonHistoryChanged, "no anchor for this history: fresh conversation"},
	{"A23", Resumable, Lookup, Resumable, EffectFresh, ReasonAfterFailure, "fresh conversation when the whole transcript fits one query: the upstream then holds exactly the client's history"},
	{"A24", Resumable, Resume, Resuming, EffectContinue, "", "the whole transcript does not fit: store a claim; send only the new user messages in the stored conversation, disclosed `continued-after-failure`"},
	{"A25", Resumable, TombstoneElapsed, Removed, EffectTransition, "", "record removed"},
	{"A26", Resumable, Drop, Removed, EffectTransition, "", "tombstone superseded or dropped for capacity"},
	{"A27", Advanced, Resume, Resuming, EffectContinue, "", "the whole transcript does not fit: store a claim; continue from this earlier point with only the new user messages, disclosed `continued-from-earlier-point`"},
	{"A28", Resuming, Lookup, Resuming, EffectFresh, ReasonRaced, "another request is resuming it right now: fresh conversation"},
	{"A29", Resuming, Complete, Advanced, EffectTransition, "", "the resumed turn was proven complete; its extended transcript gets a new anchor"},
	{"A30", Resuming, NotSent, Resumable, EffectTransition, "", "nothing was sent: resumable again"},
	{"A31", Resuming, Ambiguous, Resumable, EffectTransition, "", "sent, outcome unknown: resumable again"},
	{"A32", Resuming, Deadline, Resumable, EffectTransition, "", "the claim's hard deadline passed: resumable again"},
	{"A33", Resuming, Drop, Resuming, EffectKeep, "", "a claimed anchor is never dropped; the newer anchor is not recorded"},
	{"A34", Claimed, Lost, Retired, EffectTransition, "", "the service no longer knows the conversation: never continued or resumed again"},
	{"A35", Resuming, Lost, Retired, EffectTransition, "", "the service no longer knows the conversation: never resumed again"},
	{"A36", Active, InstructionsMismatch, Active, EffectFresh, ReasonInstructionsChanged, "fresh conversation with the whole transcript when it fits one query; anchor unchanged (a transcript that does not fit continues instead, A37)"},
	{"A37", Active, ContinueChanged, Claimed, EffectContinue, "", "the whole transcript does not fit and only the instructions or the tools changed (an agent's compaction): store a claim; send the new user messages, with the changed instructions, in the stored conversation, disclosed `continued-with-changed-instructions`"},
}

// States lists every state in declaration order.
var States = []State{Active, Claimed, Advanced, Retired, Expired, Resumable, Resuming, Removed}

// Events lists every event in declaration order.
var Events = []Event{Continue, ModelMismatch, ToolsMismatch, WorkspaceMismatch, Lookup, Complete, NotSent,
	Ambiguous, Deadline, Drop, TombstoneElapsed, Resume, Lost, InstructionsMismatch, ContinueChanged}

// MachineName is the name of the anchor machine in spec/ and the audit.
const MachineName = "conversation"

// Table returns the neutral declaration of the anchor machine.
func Table() fsm.Table {
	t := fsm.Table{
		Name:     MachineName,
		Title:    "Conversation anchor machine",
		Initial:  string(Active),
		Terminal: []string{string(Advanced), string(Retired), string(Expired), string(Resumable), string(Removed)},
		Notes: []string{
			"An anchor is recorded ACTIVE after a proven completion with a known upstream conversation id (a text answer, or the final answer of a tool loop), keyed by (principal, canonical hash of the transcript as the client will echo it).",
			"`REMOVED` is a pseudo-state: the record does not exist (never recorded, removed after the terminal TTL, or dropped). It is never stored; a lookup that finds nothing is answered from it.",
			"A fresh request is looked up only when its messages are a history ending in an assistant answer followed by one or more `user` messages (`system` messages among or after them belong to the new turn: Claude Code's environment update); a request without such a history starts fresh with `no_anchor` and applies no row.",
			"Lookups are classified by `Anchor.Claim`: first an overdue time event is applied (ACTIVE past its TTL → `A05`, CLAIMED past its hard deadline → `A11`, a tombstone past the terminal TTL → removed), then an ACTIVE anchor is checked for workspace, model, instructions (the leading system and developer messages, which are not part of the transcript hash) and tools in that order (`Continue` when all match); every other state takes `Lookup`.",
			"A pair (state, event) without a row is an illegal transition: the machine returns an error marked `conversation.ErrIllegalTransition` and changes nothing.",
			"Every transition runs inside the store's update closure on a copy; the copy is written only when the closure succeeds.",
		},
	}
	for _, s := range States {
		t.States = append(t.States, string(s))
	}
	for _, r := range rows {
		res := string(r.effect)
		if r.reason != "" {
			res += " `" + string(r.reason) + "`"
		}
		res += ": " + r.result
		t.Rows = append(t.Rows, fsm.Row{ID: r.id, From: string(r.from), On: string(r.on), To: string(r.to), Result: res, Ref: "docs/CONVERSATIONS.md"})
	}
	return t
}

// ErrIllegalTransition marks an event that has no row in the anchor's state.
var ErrIllegalTransition = errors.New("conversation: illegal transition")

// Policy holds the TTLs the machine applies when it enters a state.
type Policy struct {
	TTL         time.Duration // lifetime of an ACTIVE anchor (CONVERSATION_TTL_MS)
	ClaimTTL    time.Duration // hard deadline of a claim (request timeout + margin)
	TerminalTTL time.Duration // tombstone retention
}

// Decision is the outcome of applying one row.
type Decision struct {
	Row    string
	From   State
	To     State
	Event  Event
	Effect Effect
	// Reason is set on EffectFresh rows.
	Reason Reason
	// Via is the row of the time event applied first by the same lookup
	// (expiry, a claim's deadline, tombstone removal), or "".
	Via string
}

// input is the argument of one firing: what the entry actions need besides
// the anchor.
type input struct {
	now     time.Time
	policy  Policy
	claimID string
	sent    Sent
}

// machine is built once from rows and shared (see fsm.Machine): concurrent
// use on different anchors is safe.
var machine = fsm.NewMachine(fsm.Spec[Anchor, State, Event, input]{
	Table: Table(),
	State: func(a *Anchor) *State { return &a.State },
	Entry: []fsm.Entry[Anchor, State, Event, input]{
		{Do: recordClaim, From: Continue, In: []State{Claimed}},
		{Do: recordClaim, From: ContinueChanged, In: []State{Claimed}},
		{Do: recordClaim, From: Resume, In: []State{Resuming}},
		{Do: clearClaim, From: NotSent, In: []State{Active}},
		{Do: startTombstone, In: []State{Advanced, Retired, Expired, Resumable}},
		{Do: keepSent, From: Ambiguous, In: []State{Resumable}},
		{Do: keepSent, From: Deadline, In: []State{Resumable}},
	},
	Unhandled: fsm.Illegal[State, Event](MachineName, ErrIllegalTransition, "the anchor is not in a state that accepts this event"),
})

func recordClaim(a *Anchor, in input) {
	a.ClaimID = in.claimID
	a.ClaimExpiresAt = in.now.Add(in.policy.ClaimTTL)
	a.ClaimSent = in.sent
}

// keepSent remembers what a claim that failed after it may have been sent
// sent (Anchor.Unsent); a claim that provably sent nothing leaves it.
func keepSent(a *Anchor, _ input) {
	a.Sent = a.ClaimSent
}

func clearClaim(a *Anchor, _ input) {
	a.ClaimID = ""
	a.ClaimExpiresAt = time.Time{}
}

func startTombstone(a *Anchor, in input) {
	a.TerminalExpiresAt = in.now.Add(in.policy.TerminalTTL)
	a.ClaimExpiresAt = time.Time{}
}

// fire fires ev on a and returns the decision of the applied row.
func (a *Anchor) fire(ev Event, in input) (Decision, error) {
	from := a.State
	i, err := machine.Fire(a, ev, in)
	if err != nil {
		return Decision{}, err
	}
	r := &rows[i]
	return Decision{Row: r.id, From: from, To: a.State, Event: ev, Effect: r.effect, Reason: r.reason}, nil
}

// Graph returns the DOT rendering of the anchor machine, from stateless.
func Graph() string { return machine.Graph() }

// Request is what a fresh request brings to the anchor it found: the
// settings it must share with the anchored turn.
type Request struct {
	WorkspaceID      string
	Model            string
	ToolsHash        string
	InstructionsHash string
	// Sent is what the request sends after the history if it wins the
	// claim (SentOf its new user messages); kept as the claim's ClaimSent.
	Sent Sent
}

// Claim classifies one lookup of a by a fresh request and applies the row:
// an overdue time event first, then Continue (the claim is won under claimID),
// a mismatch, or Lookup in any state but ACTIVE.
func (a *Anchor) Claim(now time.Time, p Policy, req Request, claimID string) (Decision, error) {
	via, err := a.applyDue(now, p)
	if err != nil {
		return Decision{}, err
	}
	ev := Lookup
	if a.State == Active {
		switch {
		case req.WorkspaceID != a.WorkspaceID:
			ev = WorkspaceMismatch
		case req.Model != a.Model:
			ev = ModelMismatch
		case req.InstructionsHash != a.InstructionsHash:
			ev = InstructionsMismatch
		case req.ToolsHash != a.ToolsHash:
			ev = ToolsMismatch
		default:
			ev = Continue
		}
	}
	d, err := a.fire(ev, input{now: now, policy: p, claimID: claimID, sent: req.Sent})
	d.Via = via
	return d, err
}

// ContinueChanged claims an ACTIVE anchor under claimID for a fresh request
// whose whole transcript does not fit one query and that shares the anchor's
// workspace and model but not its instructions or tools (row A37; an overdue
// time event is applied first, as by Claim). Any other state, a changed
// workspace or model, or nothing changed refuses it as an illegal transition
// and changes nothing but that time event.
func (a *Anchor) ContinueChanged(now time.Time, p Policy, req Request, claimID string) (Decision, error) {
	via, err := a.applyDue(now, p)
	if err != nil {
		return Decision{}, err
	}
	if a.State == Active && (req.WorkspaceID != a.WorkspaceID || req.Model != a.Model ||
		(req.InstructionsHash == a.InstructionsHash && req.ToolsHash == a.ToolsHash)) {
		return Decision{}, errors.Mark(errors.New("conversation: only a changed system prompt or tool set continues this way"), ErrIllegalTransition)
	}
	d, err := a.fire(ContinueChanged, input{now: now, policy: p, claimID: claimID, sent: req.Sent})
	d.Via = via
	return d, err
}

// Resume claims a RESUMABLE anchor, or an ADVANCED one, under claimID for a
// fresh request whose whole transcript does not fit one query; sent is
// SentOf all of its new messages, whether Unsent leaves some out or not. An
// overdue time event is applied first, as by Claim. Any other state refuses
// it as an illegal transition and changes nothing but that time event.
func (a *Anchor) Resume(now time.Time, p Policy, claimID string, sent Sent) (Decision, error) {
	via, err := a.applyDue(now, p)
	if err != nil {
		return Decision{}, err
	}
	d, err := a.fire(Resume, input{now: now, policy: p, claimID: claimID, sent: sent})
	d.Via = via
	return d, err
}

// applyDue applies the time event due at now, if any, before a lookup's own
// row, and returns its row ("" when none was due).
func (a *Anchor) applyDue(now time.Time, p Policy) (string, error) {
	ev, due := a.Due(now)
	if !due {
		return "", nil
	}
	d, err := a.fire(ev, input{now: now, policy: p})
	return d.Row, err
}

// LookupMissing answers a lookup that found no anchor: the REMOVED row.
func LookupMissing() Decision {
	a := Anchor{State: Removed}
	d, err := a.fire(Lookup, input{})
	if err != nil {
		panic(err) // the row is declared; failing here is mis-wiring
	}
	return d
}

// ErrStaleClaim marks a settlement by a request whose claim is no longer the
// anchor's (its deadline passed and the anchor moved on).
var ErrStaleClaim = errors.New("conversation: the claim is no longer held")

// Settle fires the outcome ev of the continued turn of claimID: Complete at
// its proven end, NotSent when a failure proves nothing reached the upstream,
// Lost when the service no longer knows the conversation, Ambiguous when it
// may have been sent. Any other event is not a settlement
// and is refused like an illegal transition.
func (a *Anchor) Settle(ev Event, claimID string, now time.Time, p Policy) (Decision, error) {
	switch {
	case ev != Complete && ev != NotSent && ev != Ambiguous && ev != Lost:
		return Decision{}, errors.Mark(errors.Newf("conversation: %s does not settle a claim", ev), ErrIllegalTransition)
	case (a.State == Claimed || a.State == Resuming) && a.ClaimID != claimID:
		return Decision{}, errors.Mark(errors.New("conversation: settled by another claim"), ErrStaleClaim)
	}
	return a.fire(ev, input{now: now, policy: p})
}

// Drop removes the anchor to make room or because a newer anchor of the same
// transcript supersedes it; a claimed anchor stays (EffectKeep).
func (a *Anchor) Drop(now time.Time, p Policy) (Decision, error) {
	return a.fire(Drop, input{now: now, policy: p})
}

// Due reports which time event, if any, is due for a at now.
func (a Anchor) Due(now time.Time) (Event, bool) {
	switch {
	case a.State == Active && !now.Before(a.ExpiresAt):
		return Deadline, true
	case (a.State == Claimed || a.State == Resuming) && !a.ClaimExpiresAt.IsZero() && !now.Before(a.ClaimExpiresAt):
		return Deadline, true
	case a.State.Terminal() && !now.Before(a.TerminalExpiresAt):
		return TombstoneElapsed, true
	}
	return "", false
}

// Tick applies the time event due at now, if any. ok is false when nothing was due.
func (a *Anchor) Tick(now time.Time, p Policy) (d Decision, ok bool, err error) {
	ev, due := a.Due(now)
	if !due {
		return Decision{}, false, nil
	}
	d, err = a.fire(ev, input{now: now, policy: p})
	return d, err == nil, err
}
