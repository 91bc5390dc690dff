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

// rows is the one declaration of the group machine (design CORRELATION §7 and
// the INFLIGHT deadline of §8). Everything else — the stateless machine, the
// spec, the audit and the exhaustive test's row lookup — is derived from it.
var rows = []row{
	{"C01", Pending, SubmitValid, Inflight, EffectDispatch, "", "store acceptedResultsHash and a random dispatchAttemptId, then exactly one upstream dispatch", "§7 row 1"},
	{"C02", Pending, SubmitIncomplete, Pending, EffectReject, errs.ToolResultIncomplete, "400, no mutation", "§7 row 2 (partial), §5 step 5"},
	{"C03", Pending, SubmitGroupMismatch, Pending, EffectReject, errs.ToolResultGroupMismatch, "400, no mutation", "§7 row 2 (duplicate/extra/mixed), §5 steps 4, 5, 7"},
	{"C04", Pending, SubmitHistoryMismatch, Pending, EffectReject, errs.ContinuationHistoryMismatch, "409, no mutation", "§7 row 3, §5 step 6"},
	{"C05", Pending, SubmitModelMismatch, Pending, EffectReject, errs.ContinuationModelMismatch, "409, no mutation", "§7 row 3, §5 step 8"},
	{"C06", Pending, SubmitToolsMismatch, Pending, EffectReject, errs.ContinuationToolsMismatch, "409, no mutation", "§7 row 3, §5 step 9"},
	{"C07", Pending, SubmitWorkspaceMismatch, Pending, EffectReject, errs.ContinuationWorkspaceMismatch, "409, no mutation", "§7 row 3, §5 step 9"},
	{"C08", Pending, SubmitUnknownID, Pending, EffectReject, errs.UnknownToolCall, "404, no mutation, no information leak", "§7 row 4"},
	{"C09", Pending, Deadline, Expired, EffectTransition, errs.ToolCallExpired, "410 to the observing request; tombstone retained", "§7 row 5, §8"},
	{"C10", Pending, CapacityPressure, Pending, EffectKeep, errs.CorrelationCapacityExceeded, "never evicted; the newer group's admission is refused", "§7 row 6, §8"},
	{"C11", Pending, Cancel, Cancelled, EffectTransition, "", "tombstone retained; later submissions get 409", "§7 row 7, §9"},
	{"C12", Inflight, SubmitSame, Inflight, EffectReject, errs.ContinuationInflight, "409, never dispatched again", "§7 row 8"},
	{"C13", Inflight, SubmitDifferent, Inflight, EffectReject, errs.ContinuationConflict, "409, never dispatched", "§7 row 9"},
	{"C14", Inflight, Complete, Consumed, EffectTransition, "", "terminal response cached within the budget for idempotent replay", "§7 row 10"},
	{"C15", Inflight, NotSent, Pending, EffectTransition, "", "claim cleared: the transport proved nothing was sent", "§7 row 11"},
	{"C16", Inflight, Ambiguous, Uncertain, EffectTransition, errs.ContinuationOutcomeUncertain, "never retried automatically", "§7 row 12"},
	{"C17", Inflight, Deadline, Uncertain, EffectTransition, errs.ContinuationOutcomeUncertain, "the claim's hard deadline passed; never retried", "§8 (INFLIGHT timeout becomes UNCERTAIN)"},
	{"C18", Consumed, SubmitSame, Consumed, EffectReplay, errs.ToolCallAlreadyConsumed, "cached response when retained, else 409; never dispatched", "§7 row 13"},
	{"C19", Consumed, SubmitDifferent, Consumed, EffectReject, errs.ContinuationConflict, "409, never dispatched", "§7 row 14"},
	{"C20", Expired, SubmitAny, Expired, EffectReject, errs.ToolCallExpired, "410", "§7 row 15"},
	{"C21", Cancelled, SubmitAny, Cancelled, EffectReject, errs.ToolCallCancelled, "409", "§7 row 16"},
	{"C22", Uncertain, SubmitAny, Uncertain, EffectReject, errs.ContinuationOutcomeUncertain, "502; operator reconciliation, no duplicate side effect", "§7 row 17"},
	{"C23", Consumed, TombstoneElapsed, Removed, EffectTransition, "", "record removed", "§7 row 18"},
	{"C24", Expired, TombstoneElapsed, Removed, EffectTransition, "", "record removed", "§7 row 18"},
	{"C25", Cancelled, TombstoneElapsed, Removed, EffectTransition, "", "record removed", "§7 row 18"},
	{"C26", Uncertain, TombstoneElapsed, Removed, EffectTransition, "", "record removed", "§7 row 18"},
	{"C27", Removed, SubmitAny, Removed, EffectReject, errs.UnknownToolCall, "generic 404, as for an id never issued", "§7 row 18, §3"},
}
