// Package completion is the completion-outcome machine of an upstream chat stream
// (docs/COMPLETION.md): the decoder feeds it the facts it observes, one event at
// a time, and it answers whether the stream ended in a proven completion or in
// which stable error.
//
// The machine is declared once, as the rows in rows.go. From them come, per rule,
// the neutral fsm.Table for the generated spec and the fsm.Machine every
// Tracker of the rule fires (its index answers each event; the stateless
// machine built from the same rows draws the DOT graph).
//
// The package is pure: no I/O, no clock, no goroutines.
package completion

import (
	"github.com/pmgate/pmgate/domain/errs"
)

// Rule is a completion rule: which evidence turns the end of a stream into a
// completion. Rules print unredacted.
type Rule string

// SafeValue marks rules as safe for logs.
func (Rule) SafeValue() {}

// The rules.
const (
	// RuleLegacyDone is the access_token rule: an exact [DONE]
	// completes, EOF first is upstream_incomplete_stream, data after [DONE] is
	// upstream_data_after_done.
	RuleLegacyDone Rule = "legacy_done"
	// RuleExplicitOnly is the strict web_session rule: only [DONE] completes; EOF is
	// ambiguous after output and empty without.
	RuleExplicitOnly Rule = "explicit_only"
	// RuleUsageAfterOutput is the web_session default
	// (POSTMAN_WEB_SESSION_TERMINAL_RULE): in addition to [DONE], a clean EOF
	// completes when the last frame is whole, output was seen, a usage event came
	// after the last output event and no failure was seen.
	RuleUsageAfterOutput Rule = "usage_after_output_v1"
)

// DefaultWebRule is the web_session rule used when none is configured.
const DefaultWebRule = RuleUsageAfterOutput

// rules lists every rule in documentation order.
var rules = [...]Rule{RuleLegacyDone, RuleExplicitOnly, RuleUsageAfterOutput}

// Rules returns every rule in documentation order.
func Rules() []Rule { return append([]Rule(nil), rules[:]...) }

// ParseRule parses a rule name: "legacy_done", "explicit_only" or
// "usage_after_output_v1". Anything else, including the empty string, is a
// config_invalid error; defaulting is the configuration layer's job.
func ParseRule(s string) (Rule, error) {
	for _, r := range rules {
		if string(r) == s {
			return r, nil
		}
	}
	return "", errs.Newf(errs.ConfigInvalid, "unknown completion rule %q", s)
}

// Web reports whether r is one of the web_session rules.
func (r Rule) Web() bool { return r == RuleExplicitOnly || r == RuleUsageAfterOutput }

func (r Rule) index() int {
	switch r {
	case RuleLegacyDone:
		return 0
	case RuleExplicitOnly:
		return 1
	case RuleUsageAfterOutput:
		return 2
	}
	return -1
}

// State is a state of the completion machine. States print unredacted.
type State string

// SafeValue marks states as safe for logs.
func (State) SafeValue() {}

// The states. The first seven are non-terminal; the rest are terminal outcomes
// (docs/COMPLETION.md), which absorb every later event.
const (
	Awaiting     State = "AWAITING"     // nothing valid yet
	MetadataSeen State = "METADATA"     // valid events, no output
	OutputSeen   State = "OUTPUT"       // output seen, no usage after the last output
	OutputUsage  State = "OUTPUT_USAGE" // a usage event after the last output
	DoneSeen     State = "DONE_SEEN"    // exact [DONE] (or, on web_session, a done event after output) seen; waiting for a clean EOF
	GateSeen     State = "GATE"         // a loop-approval gate seen, no output: waiting for the end
	GateDone     State = "GATE_DONE"    // the gate, then an explicit end: waiting for a clean EOF

	CompleteExplicit         State = "COMPLETE_EXPLICIT"
	CompleteUsageAfterOutput State = "COMPLETE_USAGE_AFTER_OUTPUT"
	IncompleteTruncated      State = "INCOMPLETE_TRUNCATED" // upstream_incomplete_stream
	AmbiguousEOF             State = "AMBIGUOUS_EOF"        // upstream_completion_ambiguous
	IncompleteEmpty          State = "INCOMPLETE_EMPTY"     // upstream_empty_stream
	Failed                   State = "FAILED"               // the failure's code
	Aborted                  State = "ABORTED"              // client_cancelled
	TimedOut                 State = "TIMED_OUT"            // upstream_timeout
	// LoopApprovalGated is the service's loop-approval gate followed by a
	// clean end (upstream_loop_approval): no answer, the continuation's tool
	// results were accepted, the user decides how to go on.
	LoopApprovalGated State = "LOOP_APPROVAL"
)

// states lists every state; the index of a state in it is its internal number.
var states = [...]State{
	Awaiting, MetadataSeen, OutputSeen, OutputUsage, DoneSeen, GateSeen, GateDone,
	CompleteExplicit, CompleteUsageAfterOutput, IncompleteTruncated, AmbiguousEOF,
	IncompleteEmpty, Failed, Aborted, TimedOut, LoopApprovalGated,
}

const (
	numStates      = len(states)
	numNonTerminal = 7
)

func (s State) index() int {
	switch s {
	case Awaiting:
		return 0
	case MetadataSeen:
		return 1
	case OutputSeen:
		return 2
	case OutputUsage:
		return 3
	case DoneSeen:
		return 4
	case GateSeen:
		return 5
	case GateDone:
		return 6
	case CompleteExplicit:
		return 7
	case CompleteUsageAfterOutput:
		return 8
	case IncompleteTruncated:
		return 9
	case AmbiguousEOF:
		return 10
	case IncompleteEmpty:
		return 11
	case Failed:
		return 12
	case Aborted:
		return 13
	case TimedOut:
		return 14
	case LoopApprovalGated:
		return 15
	}
	return -1
}

// Terminal reports whether s is an outcome.
func (s State) Terminal() bool { return s.index() >= numNonTerminal }

// Complete reports whether s is a completion outcome.
func (s State) Complete() bool { return s == CompleteExplicit || s == CompleteUsageAfterOutput }

// Event is one fact the decoder observed (docs/COMPLETION.md). Events print unredacted.
type Event string

// SafeValue marks events as safe for logs.
func (Event) SafeValue() {}

// The events.
const (
	Metadata Event = "Metadata" // a valid, known, non-output event: conversation, thinking, ping, info…
	Output   Event = "Output"   // a text or tool-call chunk
	Usage    Event = "Usage"    // a usage event
	Failure  Event = "Failure"  // a failure; carries an errs.Code
	Done     Event = "Done"     // the exact [DONE] payload
	// DoneEvent is a {"eventType":"done"} event. On web_session, after output,
	// it is an explicit end: like [DONE] it then waits for a clean EOF. Before
	// output it ends the stream as empty. On access_token it is a known event
	// that does not end the stream (only [DONE] does).
	DoneEvent  Event = "DoneEvent"
	EOF        Event = "EOF"        // clean EOF: no partial frame, UTF-8 or JSON buffered
	EOFPartial Event = "EOFPartial" // EOF with a partial frame
	Abort      Event = "Abort"      // the client cancelled
	Timeout    Event = "Timeout"    // the request timeout expired
	ReadError  Event = "ReadError"  // a socket or reader error
	// LoopApproval is the service's loop-approval gate (a loopApprovalChunk):
	// after several consecutive tool rounds generation stops and only usage
	// and the gate arrive. Before any output, followed by a clean end, it is
	// the outcome LOOP_APPROVAL; after output, or followed by output, it is
	// upstream_unsupported_event (no source describes the mix).
	LoopApproval Event = "LoopApproval"
)

// events lists every event; the index of an event in it is its internal number.
var events = [...]Event{Metadata, Output, Usage, Failure, Done, EOF, EOFPartial, Abort, Timeout, ReadError, DoneEvent, LoopApproval}

const numEvents = len(events)

func (e Event) index() int {
	switch e {
	case Metadata:
		return 0
	case Output:
		return 1
	case Usage:
		return 2
	case Failure:
		return 3
	case Done:
		return 4
	case EOF:
		return 5
	case EOFPartial:
		return 6
	case Abort:
		return 7
	case Timeout:
		return 8
	case ReadError:
		return 9
	case DoneEvent:
		return 10
	case LoopApproval:
		return 11
	}
	return -1
}

// Outcome is what a stream ended in. It is only meaningful once Terminal.
type Outcome struct {
	State    State
	Complete bool      // true only for COMPLETE_* states
	Code     errs.Code // empty for completions and non-terminal states; the stable code otherwise
}

// Terminal reports whether the stream has an outcome.
func (o Outcome) Terminal() bool { return o.State.Terminal() }
