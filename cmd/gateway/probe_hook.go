package main

import (
	"context"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/ports"
)

// probeEvidence makes the probe's adapter collect every stream's evidence
// (event types, terminal evidence, which rules would have completed it), which
// the exchange events then carry to the probe's subscription.
func probeEvidence() []postman.Option { return []postman.Option{postman.WithStreamEvidence()} }

// subscribeProbe subscribes pu to the gateway's events, inline: it records
// the evidence of each stream on the dispatch that opened it, in the
// goroutine that ends the stream, so the evidence is there before the next
// dispatch opens and before the phase's dispatches are handed over.
func subscribeProbe(pu *probeUpstream, events *app.Observers) {
	events.SubscribeInline("probe", pu)
}

// Observe implements ports.Observer: the end of a stream whose evidence the
// adapter collected.
func (p *probeUpstream) Observe(_ context.Context, e ports.Event) {
	x := e.Exchange
	if e.Kind != ports.EventExchange || x.Evidence == nil {
		return // a refusal before any stream, or another event
	}
	ev := x.Evidence
	p.onStreamEnd(streamSummary{ChatType: x.ChatType, EventTypes: ev.EventTypes, SawDoneMarker: ev.SawDoneMarker,
		SawDoneEvent: ev.SawDoneEvent, UsageAfterOutput: ev.UsageAfterOutput, WholeFrames: ev.WholeFrames,
		Rule: x.Rule, Row: x.Row, Outcome: probeOutcome(x.Outcome), WouldComplete: ev.WouldComplete,
		UsagePosition: ev.UsagePosition, UsageFields: ev.UsageFields})
}

// probeOutcome is a dispatch's outcome in the report: outcomeComplete for a
// proven end, else the stable code.
func probeOutcome(exchange string) string {
	if exchange == ports.OutcomeCompleted {
		return outcomeComplete
	}
	return exchange
}
