package main

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/chat"
	dcompletion "github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// streamSummary is what the adapter reports about one upstream stream when it
// ends (its exchange event and the event's ports.StreamEvidence): the upstream event types with
// counts, which terminal evidence arrived, the rule, row and outcome that ended
// it, and which rules would have completed it.
type streamSummary struct {
	ChatType                                                   string
	EventTypes                                                 map[string]int
	SawDoneMarker, SawDoneEvent, UsageAfterOutput, WholeFrames bool
	Rule, Row, Outcome                                         string
	WouldComplete                                              map[string]bool
	UsagePosition                                              string
	UsageFields                                                []string
}

// probeUpstream wraps the gateway's ports.Upstream for `gateway probe`: it
// counts every dispatch, refuses the one beyond the phase's budget before it
// is sent, and records each dispatch's request shape and stream evidence
// (never content or ids). The probe drives one request at a time.
type probeUpstream struct {
	next ports.Upstream
	cfg  pmconfig.Config

	mu         sync.Mutex
	budget     int
	dispatched int
	refused    int
	pending    []*reportDispatch // dispatches since the last take
	last       *reportDispatch   // the dispatch whose stream is open
}

// errProbeBudget refuses a dispatch beyond the phase's budget; it is marked
// not sent (nothing was).
var errProbeBudget = errors.Join(errs.Newf(errs.UpstreamUnavailable, "the probe's upstream dispatch budget is exhausted; nothing was sent"), ports.ErrNotSent)

// begin starts a phase with a dispatch budget.
func (p *probeUpstream) begin(budget int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.budget, p.dispatched, p.refused, p.pending, p.last = budget, 0, 0, nil, nil
}

// counts returns the phase's dispatched and refused counts.
func (p *probeUpstream) counts() (dispatched, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dispatched, p.refused
}

// take returns the dispatches recorded since the last take.
func (p *probeUpstream) take() []reportDispatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]reportDispatch, len(p.pending))
	for i, d := range p.pending {
		out[i] = *d
	}
	p.pending = nil
	return out
}

func (p *probeUpstream) rule() string {
	r, _ := p.cfg.Rule() // "" for a configuration no client could be built from
	return string(r)
}

// Chat implements ports.Upstream.
func (p *probeUpstream) Chat(ctx context.Context, req ports.UpstreamRequest) (ports.Stream, error) {
	d := &reportDispatch{ChatType: "USER_QUERY", Rule: p.rule(), EventTypes: map[string]int{},
		TerminalEvidence: []string{}, WouldComplete: map[string]bool{}, UsageFields: []string{}}
	d.ConversationIDPresent = req.ConversationID != "" // a fresh turn continuing a conversation
	if c := req.Continuation; c != nil {
		d.ChatType = "TOOL_RESPONSE"
		d.ConversationIDPresent, d.GroupIDPresent, d.ResultCount = c.ConversationID != "", c.UpstreamGroupID != "", len(c.Results)
		d.CallIDsPresent = len(c.Results) > 0
		for _, r := range c.Results {
			d.CallIDsPresent = d.CallIDsPresent && r.UpstreamCallID != ""
		}
	}
	p.mu.Lock()
	p.pending = append(p.pending, d)
	if p.dispatched >= p.budget {
		d.RefusedByBudget, d.NotSent, d.ErrorCode = true, true, string(errs.UpstreamUnavailable)
		d.Outcome = d.ErrorCode
		p.refused++
		p.mu.Unlock()
		return nil, errProbeBudget
	}
	p.dispatched++
	p.last = d
	p.mu.Unlock()

	start := time.Now()
	s, err := p.next.Chat(ctx, req)
	rl := p.rateLimit(start)
	if err != nil {
		p.mu.Lock()
		d.RateLimit = rl
		d.ErrorCode, d.DurationMS = string(errs.CodeOf(err)), time.Since(start).Milliseconds()
		d.Outcome, d.NotSent = d.ErrorCode, errors.Is(err, ports.ErrNotSent)
		d.Cause, _ = postman.Diagnose(err)
		d.UpstreamErrorType = reportErrorType(postman.ErrorType(err))
		if d.NotSent {
			p.dispatched-- // it never left: not a dispatch
		}
		p.mu.Unlock()
		return nil, err
	}
	p.mu.Lock()
	d.RateLimit = rl
	p.mu.Unlock()
	m, _ := p.cfg.Model(req.Chat.Model)
	return &probeStream{Stream: s, p: p, d: d, start: start, observed: m.Observed}, nil
}

// rateLimit is the rate-limit window the answer to a dispatch sent at start
// announced: the adapter keeps the last readable one, so a window seen
// before start is an earlier answer's and this one carried none.
func (p *probeUpstream) rateLimit(start time.Time) reportRateLimit {
	rw, ok := p.next.(interface{ RateWindow() ports.RateWindow })
	if !ok {
		return reportRateLimit{}
	}
	w := rw.RateWindow()
	if !w.Known || w.Seen.Before(start) {
		return reportRateLimit{}
	}
	return reportRateLimit{Headers: true, Limit: w.Limit, Remaining: w.Remaining, WindowS: int(w.Window / time.Second)}
}

// onStreamEnd records the adapter's summary of the stream that just ended on
// the open dispatch.
func (p *probeUpstream) onStreamEnd(s streamSummary) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.last
	if d == nil {
		return
	}
	if s.EventTypes != nil {
		d.EventTypes = maps.Clone(s.EventTypes)
	}
	d.TerminalEvidence = []string{}
	if s.SawDoneMarker {
		d.TerminalEvidence = append(d.TerminalEvidence, "done_marker")
	}
	if s.SawDoneEvent {
		d.TerminalEvidence = append(d.TerminalEvidence, "done_event")
	}
	if s.UsageAfterOutput {
		d.TerminalEvidence = append(d.TerminalEvidence, "usage_after_output")
	}
	d.WholeFrames = s.WholeFrames
	if s.Rule != "" {
		d.Rule = s.Rule
	}
	d.Row, d.Outcome = s.Row, s.Outcome
	if s.WouldComplete != nil {
		d.WouldComplete = maps.Clone(s.WouldComplete)
	}
	d.UsagePosition = s.UsagePosition
	if s.UsageFields != nil {
		d.UsageFields = slices.Clone(s.UsageFields)
	}
}

// probeStream records the end of one upstream stream.
type probeStream struct {
	ports.Stream
	p        *probeUpstream
	d        *reportDispatch
	start    time.Time
	observed []string
	done     bool
}

// Buffered and OutcomeNote pass the stream's own on.
func (s *probeStream) Buffered() bool           { return ports.IsBuffered(s.Stream) }
func (s *probeStream) OutcomeNote() []slog.Attr { return ports.OutcomeNoteOf(s.Stream) }

func (s *probeStream) Next(ctx context.Context) (chat.Event, error) {
	ev, err := s.Stream.Next(ctx)
	if err != nil && !s.done {
		s.done = true
		s.p.mu.Lock()
		defer s.p.mu.Unlock()
		s.d.DurationMS = time.Since(s.start).Milliseconds()
		if !errors.Is(err, io.EOF) {
			s.d.ErrorCode = string(errs.CodeOf(err))
			s.d.UpstreamErrorType = reportErrorType(postman.ErrorType(err)) // a failure event's type, never its message
		}
		if s.d.Outcome == "" { // the adapter's summary did not say
			s.d.Outcome = s.d.ErrorCode
			if o, ok := s.Stream.(interface{ Outcome() dcompletion.Outcome }); ok && o.Outcome().Complete {
				s.d.Outcome = outcomeComplete
			}
		}
		if m, ok := s.Stream.(interface{ ModelObserved() (string, bool) }); ok {
			label, seen := m.ModelObserved()
			// the label is upstream data: only whether it matched is kept
			s.d.ModelObserved, s.d.ModelMatch = seen, seen && slices.Contains(s.observed, label)
		}
	}
	return ev, err
}

// reportErrorType is the service's error type of a failed dispatch as the
// report keeps it (postman.ErrorType): "" when the service named none, and
// OTHER for a name the report's hygiene would take for an id (a long or
// hexadecimal run), so that an unusual name cannot fail the probe.
func reportErrorType(t string) string {
	if t != "" && checkString("text.requests[].upstream[].upstream_error_type", t) != "" {
		return "OTHER"
	}
	return t
}
