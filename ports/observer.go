package ports

import "context"

// Observer sees what the gateway did, never what it will do: the rows its
// machines applied and how upstream exchanges ended. Metrics, the control
// page's live list, the logs and the probe are observers; they subscribe to
// one fan-out (app.Observers), which is the only Observer the app and the
// adapters are given.
//
// Observe receives the event by value and the context of the request that
// caused it (a sweep's context otherwise), for the request id of a log
// record. It returns nothing: an observer cannot change an outcome. The
// fan-out calls each subscriber from a goroutine of its own, through a
// bounded queue, so that a slow or panicking subscriber neither delays nor
// fails the request that emitted the event; an event that finds a
// subscriber's queue full is dropped and counted.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// EventKind says what an Event reports.
type EventKind uint8

// Kinds of events.
const (
	// EventTransition: a request applied one row of a declared machine
	// (Machine, Row, From, To, Effect, Code, Slot).
	EventTransition EventKind = iota + 1
	// EventSweep: a sweep of a store applied Row (From, To) to Count records
	// of Machine at once.
	EventSweep
	// EventExchange: an upstream exchange ended (Exchange).
	EventExchange
)

// Event is one thing that happened. Every field is a value from a closed set
// (machine and row ids, states, effects, stable codes, strategies, slot ids)
// or a count: never content, an id of the client or upstream, or a secret.
// The only reference is Exchange.Evidence, which the fan-out copies deeply
// for each subscriber.
type Event struct {
	Kind EventKind
	// Machine is the declared machine of the row: "correlation" or
	// "conversation" (its spec/ name).
	Machine string
	// Row is the id of the applied row; From and To its states.
	Row, From, To string
	// Effect is the row's effect for the caller (EventTransition).
	Effect string
	// Code is the stable code the row answers with (correlation), or the
	// reason of a fresh conversation (conversation); "" when none.
	Code string
	// Count is how many records took the row at once (EventSweep; 1 for a
	// transition).
	Count int
	// Slot is the API key slot id of the request ("" for a sweep); never a key.
	Slot string
	// Exchange is set for EventExchange.
	Exchange Exchange
}

// Exchange is how one upstream exchange ended.
type Exchange struct {
	Strategy string
	// Outcome is OutcomeCompleted or the stable code of the failure.
	Outcome string
	// Rule and Row name the completion rule and the declared row that decided
	// the stream's outcome; both are "" when no stream was opened (Row alone
	// when the decoder failed internally).
	Rule, Row string
	// ChatType is the request's input.chatType: USER_QUERY or TOOL_RESPONSE
	// ("" when no stream was opened).
	ChatType string
	// Evidence is the stream's terminal evidence; only an upstream adapter
	// asked to collect it (the probe's) fills it in.
	Evidence *StreamEvidence
}

// OutcomeCompleted is Exchange.Outcome for a stream the completion machine
// proved complete.
const OutcomeCompleted = "completed"

// StreamEvidence describes, in shapes only, what one upstream stream sent.
type StreamEvidence struct {
	// EventTypes counts the data lines by event type (a closed set of names;
	// every other type counts as "unknown").
	EventTypes map[string]int
	// SawDoneMarker: an exact data: [DONE] line arrived. SawDoneEvent: a
	// {"eventType":"done"} event arrived. UsageAfterOutput: a usage event came
	// after the last output event. WholeFrames: the body reached EOF with no
	// partial frame buffered.
	SawDoneMarker, SawDoneEvent, UsageAfterOutput, WholeFrames bool
	// WouldComplete says, for each completion rule of the strategy, whether
	// that rule would have completed this same stream.
	WouldComplete map[string]bool
	// UsagePosition is where the stream's usage events sat: "none",
	// "before_output", "after_output", "around_output" (before and after)
	// or "no_output" (usage in a stream without output).
	UsagePosition string
	// UsageFields are the field names the usage events carried, sorted, from
	// a closed set (docs/UPSTREAM.md); any other name is "other".
	UsageFields []string
}
