package correlation

import "github.com/pmgate/pmgate/domain/errs"

// row is one declared transition of the group machine: in state from, event on
// leads to state to with the given effect (and the stable code that answers the
// observing request, if any). A row whose from equals its to is a self-loop: the
// event is legal there and changes nothing but what its effect says.
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

// rows is the one declaration of the group machine (docs/CORRELATION.md explains
// it; the last column says in a few words why each row is there).
// Everything else — the stateless machine, the spec, the audit and the
// exhaustive test's row lookup — is derived from it.
var rows = []row{
	{"C01", Pending, SubmitValid, Inflight, EffectDispatch, "", "store acceptedResultsHash and a random dispatchAttemptId, then exactly one upstream dispatch", "a valid submission claims the group: its one dispatch"},
	{"C02", Pending, SubmitIncomplete, Pending, EffectReject, errs.ToolResultIncomplete, "400, no mutation", "results are missing for some calls of the group"},
	{"C03", Pending, SubmitGroupMismatch, Pending, EffectReject, errs.ToolResultGroupMismatch, "400, no mutation", "duplicate, extra or misplaced results, or ids of several groups"},
	{"C04", Pending, SubmitHistoryMismatch, Pending, EffectReject, errs.ContinuationHistoryMismatch, "409, no mutation", "the echoed transcript is not the one the calls were issued in"},
	{"C05", Pending, SubmitModelMismatch, Pending, EffectReject, errs.ContinuationModelMismatch, "409, no mutation", "another model than the one that issued the calls"},
	{"C06", Pending, SubmitToolsMismatch, Pending, EffectReject, errs.ContinuationToolsMismatch, "409, no mutation", "other tools than the ones the calls were issued with"},
	{"C07", Pending, SubmitWorkspaceMismatch, Pending, EffectReject, errs.ContinuationWorkspaceMismatch, "409, no mutation", "another workspace than the one the calls were issued in"},
	{"C08", Pending, SubmitUnknownID, Pending, EffectReject, errs.UnknownToolCall, "404, no mutation, no information leak", "an id this principal was never issued"},
	{"C09", Pending, Deadline, Expired, EffectTransition, errs.ToolCallExpired, "410 to the observing request; tombstone retained", "the pending TTL passed (checked on lookup, admission and sweep)"},
	{"C10", Pending, CapacityPressure, Pending, EffectKeep, errs.CorrelationCapacityExceeded, "never evicted; the newer group's admission is refused", "capacity: a pending group is never evicted for a newer one"},
	{"C11", Pending, Cancel, Cancelled, EffectTransition, "", "tombstone retained; later submissions get 409", "shutdown of a store private to the process: nobody could continue the group"},
	{"C28", Pending, MovedPast, Cancelled, EffectTransition, "", "tombstone retained, capacity freed at once; later submissions get 409", "the client's next turn of the same conversation went on without these results"},
	{"C12", Inflight, SubmitSame, Inflight, EffectReject, errs.ContinuationInflight, "409, never dispatched again", "a retry of the accepted results while their dispatch runs"},
	{"C13", Inflight, SubmitDifferent, Inflight, EffectReject, errs.ContinuationConflict, "409, never dispatched", "other results while the accepted ones are being dispatched"},
	{"C14", Inflight, Complete, Consumed, EffectTransition, "", "terminal response cached within the budget for idempotent replay", "the dispatched continuation ended provably"},
	{"C15", Inflight, NotSent, Pending, EffectTransition, "", "claim cleared: nothing was sent", "nothing was sent (the key's limits refused it, or the transport proved it), or the upstream refused before processing"},
	{"C16", Inflight, Ambiguous, Uncertain, EffectTransition, errs.ContinuationOutcomeUncertain, "never retried automatically", "a timeout, disconnect, abort or ambiguous failure after it may have been sent"},
	{"C17", Inflight, Deadline, Uncertain, EffectTransition, errs.ContinuationOutcomeUncertain, "the claim's hard deadline passed; never retried", "the claim's hard deadline (request timeout plus margin) passed"},
	{"C18", Consumed, SubmitSame, Consumed, EffectReplay, errs.ToolCallAlreadyConsumed, "cached response when retained, else 409; never dispatched", "an idempotent retry of the accepted results after the end"},
	{"C19", Consumed, SubmitDifferent, Consumed, EffectReject, errs.ContinuationConflict, "409, never dispatched", "other results after the end"},
	{"C20", Expired, SubmitAny, Expired, EffectReject, errs.ToolCallExpired, "410", "a tombstone answers every later submission"},
	{"C21", Cancelled, SubmitAny, Cancelled, EffectReject, errs.ToolCallCancelled, "409", "a tombstone answers every later submission"},
	{"C22", Uncertain, SubmitAny, Uncertain, EffectReject, errs.ContinuationOutcomeUncertain, "502; operator reconciliation, no duplicate side effect", "a tombstone answers every later submission"},
	{"C23", Consumed, TombstoneElapsed, Removed, EffectTransition, "", "record removed", "the tombstone TTL passed"},
	{"C24", Expired, TombstoneElapsed, Removed, EffectTransition, "", "record removed", "the tombstone TTL passed"},
	{"C25", Cancelled, TombstoneElapsed, Removed, EffectTransition, "", "record removed", "the tombstone TTL passed"},
	{"C26", Uncertain, TombstoneElapsed, Removed, EffectTransition, "", "record removed", "the tombstone TTL passed"},
	{"C27", Removed, SubmitAny, Removed, EffectReject, errs.UnknownToolCall, "generic 404, as for an id never issued", "a removed group is answered as an id never issued, so nothing leaks"},
	{"C29", Consumed, SubmitHistory, Consumed, EffectResume, "", "the results are never sent again: only the new user content goes up, in the group's conversation (disclosed) unless the whole transcript fits a fresh one", "the client goes on after the round's answer was lost or refused (a gate), or compacts: the accepted results are history"},
	{"C30", Uncertain, SubmitHistory, Uncertain, EffectResume, "", "the results are never sent again: only the new user content goes up, in the group's conversation (disclosed) unless the whole transcript fits a fresh one", "the client goes on after a round that failed after dispatch: the accepted results are history"},
	{"C31", Inflight, SubmitHistory, Inflight, EffectReject, errs.ContinuationInflight, "409, never dispatched", "new user content while the accepted results are being dispatched"},
	{"C32", Inflight, Gated, Consumed, EffectTransition, errs.UpstreamLoopApproval, "results delivered, no answer cached (the terminal response digest names the gate); the same results again get the gate's answer (C33), never a second dispatch", "the service paused the tool loop (loop-approval gate, then a clean end): it accepted the results"},
	{"C33", Consumed, SubmitSameGated, Consumed, EffectReject, errs.UpstreamLoopApproval, "the gate's answer again (send a new message to continue), never dispatched", "a retry of the results the gate took, with or without the same tools (Claude Code's 400 recovery)"},
}
