package postman

import (
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// StreamSummary describes how one upstream stream ended, in shapes only: it
// never carries content, ids or secrets. A client built with
// WithStreamEvidence reports its evidence with every stream's exchange event
// (see WithObserver); the live probe uses it to record which terminal evidence
// the real service sends and which completion rules it satisfies.
type StreamSummary struct {
	// ChatType is the request's input.chatType: USER_QUERY or TOOL_RESPONSE.
	ChatType string
	// EventTypes counts the data lines by event type. Keys are the closed set
	// of names the decoder knows ("textChunk", "usage", "done", "[DONE]", …);
	// every other type, and a line that is not a JSON event, counts as
	// "unknown".
	EventTypes map[string]int
	// SawDoneMarker: an exact data: [DONE] line arrived.
	SawDoneMarker bool
	// SawDoneEvent: a {"eventType":"done"} event arrived.
	SawDoneEvent bool
	// UsageAfterOutput: output was seen and a usage event came after the last
	// output event.
	UsageAfterOutput bool
	// WholeFrames: the body reached EOF with no partial frame buffered.
	WholeFrames bool
	// Rule is the completion rule that judged the stream; Row the id of its
	// declared row that reached the outcome ("" when the decoder failed
	// internally).
	Rule, Row string
	// Outcome is "complete" or the stable error code of the stream.
	Outcome string
	// WouldComplete says, for each completion rule of the strategy
	// (legacy_done on access_token; explicit_only and usage_after_output_v1 on
	// web_session), whether that rule would have completed this same stream.
	WouldComplete map[string]bool
}

// evidence is the summary's part that the exchange event carries.
func (s StreamSummary) evidence() *ports.StreamEvidence {
	return &ports.StreamEvidence{EventTypes: s.EventTypes, SawDoneMarker: s.SawDoneMarker, SawDoneEvent: s.SawDoneEvent,
		UsageAfterOutput: s.UsageAfterOutput, WholeFrames: s.WholeFrames, WouldComplete: s.WouldComplete}
}

// OutcomeComplete is StreamSummary.Outcome for a proven completion.
const OutcomeComplete = "complete"

// evidence is what the decoder records for a StreamSummary. It exists only
// when a summary was asked for.
type evidence struct {
	types       map[string]int
	shadows     []*completion.Tracker // the strategy's other rules, fed the same events
	output      bool
	usageAfter  bool
	doneMarker  bool
	doneEvent   bool
	wholeFrames bool
	row         string // the row that reached the outcome
}

func newEvidence(main completion.Rule) *evidence {
	ev := &evidence{types: map[string]int{}}
	for _, r := range completion.RulesFor(main.Web()) {
		if r != main {
			ev.shadows = append(ev.shadows, completion.NewTracker(r))
		}
	}
	return ev
}

// countType records one data line's event type for the summary.
func (d *decoder) countType(t evType) {
	if d.ev == nil {
		return
	}
	if t == evNone {
		t = evUnknown
	}
	d.ev.types[t.String()]++
}

// summary builds the StreamSummary of a decoder whose outcome is known.
func (d *decoder) summary(chatType string) StreamSummary {
	s := StreamSummary{ChatType: chatType, Rule: string(d.cfg.rule)}
	o := d.tr.Outcome()
	switch {
	case o.Complete:
		s.Outcome = OutcomeComplete
	case d.final != nil:
		s.Outcome = string(errs.CodeOf(d.final))
	default:
		s.Outcome = string(o.Code)
	}
	s.WouldComplete = map[string]bool{string(d.cfg.rule): o.Complete}
	if ev := d.ev; ev != nil {
		s.EventTypes = make(map[string]int, len(ev.types))
		for k, v := range ev.types {
			s.EventTypes[k] = v
		}
		s.SawDoneMarker, s.SawDoneEvent = ev.doneMarker, ev.doneEvent
		s.UsageAfterOutput = ev.output && ev.usageAfter
		s.WholeFrames = ev.wholeFrames
		s.Row = ev.row
		for _, sh := range ev.shadows {
			s.WouldComplete[string(sh.Rule())] = sh.Outcome().Complete
		}
	}
	return s
}
