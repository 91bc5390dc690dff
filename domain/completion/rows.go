package completion

import "github.com/pmgate/pmgate/domain/errs"

// row is one declared transition. For each rule, each non-terminal state and
// each event there is exactly one row; terminal states have none (they absorb).
// There are no guards and no actions: a row with From == To is a self-loop that
// only confirms the event was legal.
type row struct {
	ID    string
	Rules []Rule
	From  State
	On    Event
	To    State
	// Code is the stable code of the outcome a terminal row reaches. It is empty
	// for non-terminal rows, for completions, and for FAILED rows fired by
	// Failure, whose code is the one the Failure event carries.
	Code errs.Code
	Ref  string // why the row exists (the rule it implements, docs/COMPLETION.md)
}

// Rule sets used by the rows.
var (
	all    = []Rule{RuleLegacyDone, RuleExplicitOnly, RuleUsageAfterOutput}
	web    = []Rule{RuleExplicitOnly, RuleUsageAfterOutput}
	legacy = []Rule{RuleLegacyDone}
)

// Why each row is there, in a few words (docs/COMPLETION.md has the rules).
const (
	refFacts      = "an observed fact, not an end"
	refLegacy     = "access_token: EOF before [DONE] is an incomplete stream"
	refLegacyDone = "an exact [DONE] is an explicit end once a clean EOF follows"
	refAfterDone  = "nothing may follow [DONE]; DONE_SEEN waits for a clean EOF"
	refRule1      = "a failure event at any point fails the stream, whatever came before"
	refRule4      = "EOF inside a frame is a truncated stream"
	refRule5      = "EOF after output without an explicit end is ambiguous"
	refRule6      = "EOF with no output at all is an empty stream"
	refRule7      = "an abort, a timeout or a read error is never a completion"
	refUsageRule  = "POSTMAN_WEB_SESSION_TERMINAL_RULE=usage_after_output_v1: a clean EOF after output and a later usage completes"
	refDoneEvent  = "done event: an explicit end on web_session after output (docs/UPSTREAM.md); data after it is data after the end"
	refDoneEmpty  = "done event before any output: the stream ended with nothing (docs/UPSTREAM.md)"
	refDoneBare   = "[DONE] before any output: the stream ended with nothing; a terminal is no proof of content, on any rule (docs/UPSTREAM.md)"
	refDoneLegacy = "done event on access_token: a known event that does not end the stream; only [DONE] does (docs/UPSTREAM.md)"
	refRule5Web   = "EOF after output without an explicit end is ambiguous; without a usage after the last output, under either web rule"
	refGate       = "loop-approval gate before any output: generation stopped; only metadata and an end may follow"
	refGateEnd    = "the gate, then a clean end: the service paused the tool loop (the continuation's results were accepted)"
	refGateMixed  = "a gate together with output: no source describes it, so it is refused"
	refGateLegacy = "access_token: the gate's stream still needs [DONE]; EOF first is an incomplete stream"
	refGateDone   = "after the gate, [DONE] (or on web_session a done event) is the end; a clean EOF must follow"
)

// rows is the one declaration of the machine, for every rule.
var rows = []row{
	// AWAITING: nothing valid yet.
	{"K01", all, Awaiting, Metadata, MetadataSeen, "", refFacts},
	{"K02", all, Awaiting, Output, OutputSeen, "", refFacts},
	{"K03", all, Awaiting, Usage, MetadataSeen, "", refFacts + "; usage before output is no proof"},
	{"K04", all, Awaiting, Failure, Failed, "", refRule1},
	{"K05", all, Awaiting, Done, IncompleteEmpty, errs.UpstreamEmptyStream, refDoneBare},
	{"K06", legacy, Awaiting, EOF, IncompleteTruncated, errs.UpstreamIncompleteStream, refLegacy},
	{"K07", web, Awaiting, EOF, IncompleteEmpty, errs.UpstreamEmptyStream, refRule6},
	{"K08", all, Awaiting, EOFPartial, IncompleteTruncated, errs.UpstreamIncompleteStream, refRule4},
	{"K09", all, Awaiting, Abort, Aborted, errs.ClientCancelled, refRule7},
	{"K10", all, Awaiting, Timeout, TimedOut, errs.UpstreamTimeout, refRule7},
	{"K11", all, Awaiting, ReadError, Failed, errs.UpstreamConnectionLost, refRule7},

	// METADATA: valid events, no output.
	{"K12", all, MetadataSeen, Metadata, MetadataSeen, "", refFacts},
	{"K13", all, MetadataSeen, Output, OutputSeen, "", refFacts},
	{"K14", all, MetadataSeen, Usage, MetadataSeen, "", refFacts + "; usage before output is no proof"},
	{"K15", all, MetadataSeen, Failure, Failed, "", refRule1},
	{"K16", all, MetadataSeen, Done, IncompleteEmpty, errs.UpstreamEmptyStream, refDoneBare},
	{"K17", legacy, MetadataSeen, EOF, IncompleteTruncated, errs.UpstreamIncompleteStream, refLegacy},
	{"K18", web, MetadataSeen, EOF, IncompleteEmpty, errs.UpstreamEmptyStream, refRule6},
	{"K19", all, MetadataSeen, EOFPartial, IncompleteTruncated, errs.UpstreamIncompleteStream, refRule4},
	{"K20", all, MetadataSeen, Abort, Aborted, errs.ClientCancelled, refRule7},
	{"K21", all, MetadataSeen, Timeout, TimedOut, errs.UpstreamTimeout, refRule7},
	{"K22", all, MetadataSeen, ReadError, Failed, errs.UpstreamConnectionLost, refRule7},

	// OUTPUT: output seen, no usage after the last output.
	{"K23", all, OutputSeen, Metadata, OutputSeen, "", refFacts},
	{"K24", all, OutputSeen, Output, OutputSeen, "", refFacts},
	{"K25", all, OutputSeen, Usage, OutputUsage, "", refFacts},
	{"K26", all, OutputSeen, Failure, Failed, "", refRule1},
	{"K27", all, OutputSeen, Done, DoneSeen, "", refLegacyDone},
	{"K28", legacy, OutputSeen, EOF, IncompleteTruncated, errs.UpstreamIncompleteStream, refLegacy},
	{"K29", web, OutputSeen, EOF, AmbiguousEOF, errs.UpstreamCompletionAmbiguous, refRule5Web},
	{"K30", all, OutputSeen, EOFPartial, IncompleteTruncated, errs.UpstreamIncompleteStream, refRule4},
	{"K31", all, OutputSeen, Abort, Aborted, errs.ClientCancelled, refRule7},
	{"K32", all, OutputSeen, Timeout, TimedOut, errs.UpstreamTimeout, refRule7},
	{"K33", all, OutputSeen, ReadError, Failed, errs.UpstreamConnectionLost, refRule7},

	// OUTPUT_USAGE: a usage event after the last output.
	{"K34", all, OutputUsage, Metadata, OutputUsage, "", refFacts},
	{"K35", all, OutputUsage, Output, OutputSeen, "", refFacts + "; new output needs a new usage"},
	{"K36", all, OutputUsage, Usage, OutputUsage, "", refFacts},
	{"K37", all, OutputUsage, Failure, Failed, "", refRule1},
	{"K38", all, OutputUsage, Done, DoneSeen, "", refLegacyDone},
	{"K39", legacy, OutputUsage, EOF, IncompleteTruncated, errs.UpstreamIncompleteStream, refLegacy},
	{"K40", []Rule{RuleExplicitOnly}, OutputUsage, EOF, AmbiguousEOF, errs.UpstreamCompletionAmbiguous, refRule5},
	{"K41", []Rule{RuleUsageAfterOutput}, OutputUsage, EOF, CompleteUsageAfterOutput, "", refUsageRule},
	{"K42", all, OutputUsage, EOFPartial, IncompleteTruncated, errs.UpstreamIncompleteStream, refRule4},
	{"K43", all, OutputUsage, Abort, Aborted, errs.ClientCancelled, refRule7},
	{"K44", all, OutputUsage, Timeout, TimedOut, errs.UpstreamTimeout, refRule7},
	{"K45", all, OutputUsage, ReadError, Failed, errs.UpstreamConnectionLost, refRule7},

	// DONE_SEEN: exact [DONE] seen; only a clean EOF completes.
	{"K46", all, DoneSeen, Metadata, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K47", all, DoneSeen, Output, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K48", all, DoneSeen, Usage, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K49", all, DoneSeen, Failure, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K50", all, DoneSeen, Done, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K51", all, DoneSeen, EOF, CompleteExplicit, "", refLegacyDone},
	{"K52", all, DoneSeen, EOFPartial, Failed, errs.UpstreamDataAfterDone, refAfterDone + "; a partial frame after [DONE] is data after the end"},
	{"K53", all, DoneSeen, Abort, Aborted, errs.ClientCancelled, refRule7},
	{"K54", all, DoneSeen, Timeout, TimedOut, errs.UpstreamTimeout, refRule7},
	{"K55", all, DoneSeen, ReadError, Failed, errs.UpstreamConnectionLost, refRule7},

	// The {"eventType":"done"} event.
	{"K56", legacy, Awaiting, DoneEvent, MetadataSeen, "", refDoneLegacy},
	{"K57", legacy, MetadataSeen, DoneEvent, MetadataSeen, "", refDoneLegacy},
	{"K58", legacy, OutputSeen, DoneEvent, OutputSeen, "", refDoneLegacy},
	{"K59", legacy, OutputUsage, DoneEvent, OutputUsage, "", refDoneLegacy},
	{"K60", all, DoneSeen, DoneEvent, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K61", web, Awaiting, DoneEvent, IncompleteEmpty, errs.UpstreamEmptyStream, refDoneEmpty},
	{"K62", web, MetadataSeen, DoneEvent, IncompleteEmpty, errs.UpstreamEmptyStream, refDoneEmpty},
	{"K63", web, OutputSeen, DoneEvent, DoneSeen, "", refDoneEvent},
	{"K64", web, OutputUsage, DoneEvent, DoneSeen, "", refDoneEvent},

	// The loop-approval gate (a loopApprovalChunk) from the states that had one of
	// their own events before it existed.
	{"K65", all, Awaiting, LoopApproval, GateSeen, "", refGate},
	{"K66", all, MetadataSeen, LoopApproval, GateSeen, "", refGate},
	{"K67", all, OutputSeen, LoopApproval, Failed, errs.UpstreamUnsupportedEvent, refGateMixed},
	{"K68", all, OutputUsage, LoopApproval, Failed, errs.UpstreamUnsupportedEvent, refGateMixed},
	{"K69", all, DoneSeen, LoopApproval, Failed, errs.UpstreamDataAfterDone, refAfterDone},

	// GATE: the gate seen, no output; waiting for the end.
	{"K70", all, GateSeen, Metadata, GateSeen, "", refFacts},
	{"K71", all, GateSeen, Output, Failed, errs.UpstreamUnsupportedEvent, refGateMixed},
	{"K72", all, GateSeen, Usage, GateSeen, "", refFacts},
	{"K73", all, GateSeen, Failure, Failed, "", refRule1},
	{"K74", all, GateSeen, Done, GateDone, "", refGateDone},
	{"K75", legacy, GateSeen, EOF, IncompleteTruncated, errs.UpstreamIncompleteStream, refGateLegacy},
	{"K76", web, GateSeen, EOF, LoopApprovalGated, errs.UpstreamLoopApproval, refGateEnd},
	{"K77", all, GateSeen, EOFPartial, IncompleteTruncated, errs.UpstreamIncompleteStream, refRule4},
	{"K78", all, GateSeen, Abort, Aborted, errs.ClientCancelled, refRule7},
	{"K79", all, GateSeen, Timeout, TimedOut, errs.UpstreamTimeout, refRule7},
	{"K80", all, GateSeen, ReadError, Failed, errs.UpstreamConnectionLost, refRule7},
	{"K81", legacy, GateSeen, DoneEvent, GateSeen, "", refDoneLegacy},
	{"K82", web, GateSeen, DoneEvent, GateDone, "", refGateDone},
	{"K83", all, GateSeen, LoopApproval, GateSeen, "", refGate + "; a repeated gate changes nothing"},

	// GATE_DONE: the gate, then an explicit end; only a clean EOF ends it.
	{"K84", all, GateDone, Metadata, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K85", all, GateDone, Output, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K86", all, GateDone, Usage, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K87", all, GateDone, Failure, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K88", all, GateDone, Done, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K89", all, GateDone, EOF, LoopApprovalGated, errs.UpstreamLoopApproval, refGateEnd},
	{"K90", all, GateDone, EOFPartial, Failed, errs.UpstreamDataAfterDone, refAfterDone + "; a partial frame after [DONE] is data after the end"},
	{"K91", all, GateDone, Abort, Aborted, errs.ClientCancelled, refRule7},
	{"K92", all, GateDone, Timeout, TimedOut, errs.UpstreamTimeout, refRule7},
	{"K93", all, GateDone, ReadError, Failed, errs.UpstreamConnectionLost, refRule7},
	{"K94", all, GateDone, DoneEvent, Failed, errs.UpstreamDataAfterDone, refAfterDone},
	{"K95", all, GateDone, LoopApproval, Failed, errs.UpstreamDataAfterDone, refAfterDone},
}
