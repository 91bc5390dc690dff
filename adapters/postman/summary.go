package postman

import (
	"sort"

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
	// UsagePosition is where the usage events sat relative to the output:
	// UsageNone, UsageBeforeOutput, UsageAfterOutput, UsageAroundOutput or
	// UsageNoOutput. The traces put usage before the output; the projects'
	// fixtures disagree (docs/UPSTREAM.md), so the probe records it.
	UsagePosition string
	// UsageFields are the usage events' field names, sorted: those of
	// usageFieldNames, and "other" for any other.
	UsageFields []string
}

// The values of StreamSummary.UsagePosition.
const (
	UsageNone         = "none"
	UsageBeforeOutput = "before_output"
	UsageAfterOutput  = "after_output"
	UsageAroundOutput = "around_output"
	UsageNoOutput     = "no_output"
)

// usageFieldNames is the closed set of usage field names a summary names:
// the full event of ps2Api's fixture (internal/provider/ossfunc_test.go:37)
// and the token fields the decoder reads.
var usageFieldNames = map[string]bool{
	"userType": true, "usageState": true, "limit": true, "usage": true, "overage": true, "spillage": true,
	"allowOverage": true, "warningThresholds": true, "usageCycle": true, "isTeamPooled": true,
	"promptTokens": true, "prompt_tokens": true, "inputTokens": true, "input_tokens": true,
	"completionTokens": true, "completion_tokens": true, "outputTokens": true, "output_tokens": true,
	"totalTokens": true, "total_tokens": true,
}

// UsageFieldNames lists the closed set of StreamSummary.UsageFields, "other"
// included, sorted.
func UsageFieldNames() []string {
	out := []string{"other"}
	for k := range usageFieldNames {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// evidence is the summary's part that the exchange event carries.
func (s StreamSummary) evidence() *ports.StreamEvidence {
	return &ports.StreamEvidence{EventTypes: s.EventTypes, SawDoneMarker: s.SawDoneMarker, SawDoneEvent: s.SawDoneEvent,
		UsageAfterOutput: s.UsageAfterOutput, WholeFrames: s.WholeFrames, WouldComplete: s.WouldComplete,
		UsagePosition: s.UsagePosition, UsageFields: s.UsageFields}
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
	usageBefore bool            // a usage event before any output
	usageFields map[string]bool // the usage events' field names (usageFieldNames, else "other")
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
		s.UsagePosition = usagePosition(ev)
		s.UsageFields = []string{}
		for k := range ev.usageFields {
			s.UsageFields = append(s.UsageFields, k)
		}
		sort.Strings(s.UsageFields)
		s.WholeFrames = ev.wholeFrames
		s.Row = ev.row
		for _, sh := range ev.shadows {
			s.WouldComplete[string(sh.Rule())] = sh.Outcome().Complete
		}
	}
	return s
}

// usagePosition says where a stream's usage events sat.
func usagePosition(ev *evidence) string {
	switch {
	case ev.types[evUsage.String()] == 0:
		return UsageNone
	case !ev.output:
		return UsageNoOutput
	case ev.usageBefore && ev.usageAfter:
		return UsageAroundOutput
	case ev.usageBefore:
		return UsageBeforeOutput
	}
	return UsageAfterOutput
}

// recordUsageFields notes the field names of a usage event's data object.
func (d *decoder) recordUsageFields() {
	if d.ev == nil {
		return
	}
	if d.ev.usageFields == nil {
		d.ev.usageFields = map[string]bool{}
	}
	for i := range d.data {
		m := &d.data[i]
		k := m.key
		if m.keyEsc {
			d.kbuf = unquote(m.key, true, d.kbuf)
			k = d.kbuf
		}
		name := "other"
		if usageFieldNames[string(k)] {
			name = string(k)
		}
		d.ev.usageFields[name] = true
	}
}
