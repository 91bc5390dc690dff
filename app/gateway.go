package app

import (
	"context"
	"log/slog"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
)

// Config is what the use cases need to know of the configuration.
type Config struct {
	WorkspaceID string
	// Correlation enables native tool calling (CORRELATION_ENABLED). Without it
	// a tool call from the upstream cannot be continued and is refused.
	Correlation bool
	Policy      correlation.Policy
	// Resume (CONVERSATION_RESUME, on by default) lets a turn whose whole
	// transcript does not fit a fresh upstream query continue the upstream
	// conversation that already holds the client's history, disclosed
	// (docs/CONVERSATIONS.md); off, such a turn is refused as too long.
	Resume bool
	// Observer, when set, receives every row of the group and anchor
	// machines that a request or a sweep applied (metrics, the control page,
	// the logs): the wiring passes the fan-out (Observers), which never
	// blocks the request.
	Observer ports.Observer
}

// Gateway is the application: one chat turn at a time, fresh or continued.
// Dependencies are explicit fields; New checks them.
type Gateway struct {
	upstream ports.Upstream
	store    ports.CorrelationStore
	clock    ports.Clock
	ids      ports.IDSource
	log      *slog.Logger
	cfg      Config
	// anchors is nil when conversation continuity is off (see WithAnchors).
	anchors      ports.AnchorStore
	anchorPolicy conversation.Policy
	// usage is nil when no budget is kept (see WithUsage).
	usage *Usage
	// toolSets holds what is derived from each distinct tool definition set.
	toolSets *toolsCache
	obs      ports.Observer // cfg.Observer, or one that ignores everything
	// attempts is nil when repeats are not recognised (see WithAttempts).
	attempts      ports.AttemptStore
	attemptPolicy AttemptPolicy
}

// New wires the use cases. It panics on a nil dependency: that is mis-wiring.
func New(cfg Config, upstream ports.Upstream, store ports.CorrelationStore, clock ports.Clock, ids ports.IDSource, log *slog.Logger) *Gateway {
	if upstream == nil || clock == nil || ids == nil || log == nil || (cfg.Correlation && store == nil) {
		panic("app: nil dependency")
	}
	g := &Gateway{upstream: upstream, store: store, clock: clock, ids: ids, log: log, cfg: cfg,
		toolSets: newToolsCache(), obs: cfg.Observer}
	if g.obs == nil {
		g.obs = noObserver{}
	}
	return g
}

var _ ChatService = (*Gateway)(nil)

// Chat starts one turn. A request whose messages end in role=tool results takes
// the continuation path and never falls back to a fresh query. Either way,
// the groups of p that the request's conversation moved past are cancelled
// first (cancelMovedPast).
//
// Without correlation (CORRELATION_ENABLED=false) a continuation is refused
// first, then a request that declares tools; neither reaches the upstream.
//
// A request the ingress described as one a client may send again (rep, nil
// for any other) is recorded first, and a repeat of a recorded one gets its
// outcome (attempt.go).
func (g *Gateway) Chat(ctx context.Context, p Principal, req chat.Request, rep *Repeat) (Turn, error) {
	sum := &record{}
	var t Turn
	var err error
	if rep != nil && g.attempts != nil {
		t, err = g.attempt(ctx, sum, p, req, rep)
	} else {
		t, err = g.chat(ctx, sum, p, req)
	}
	if err != nil {
		return nil, sum.refuse(err)
	}
	return summarized(t, sum), nil
}

func (g *Gateway) chat(ctx context.Context, sum *record, p Principal, req chat.Request) (Turn, error) {
	cont, isContinuation := correlation.SplitContinuation(req.Messages)
	if isContinuation && !g.cfg.Correlation {
		return nil, errors.Mark(errs.New(errs.UnsupportedToolResultContinuation), ErrContinuationNeedsCorrelation)
	}
	if len(req.Tools) > 0 && !g.cfg.Correlation {
		// Tool calls could be shown but never continued: refuse before sending.
		return nil, errs.Newf(errs.UnsupportedParameter, "tools need CORRELATION_ENABLED=true")
	}
	if g.cfg.Correlation {
		g.cancelMovedPast(ctx, p, req.Messages)
	}
	if isContinuation {
		return g.continueTurn(ctx, sum, p, req, cont)
	}
	return g.freshTurn(ctx, sum, p, req)
}

// send dispatches up. The stream's outcome goes into the turn's summary
// (its Notes), which the caller writes in its access line.
func (g *Gateway) send(ctx context.Context, up ports.UpstreamRequest) (ports.Stream, error) {
	up.Noted = true
	return g.upstream.Chat(ctx, up)
}

// ErrContinuationNeedsCorrelation marks the refusal of tool results (a
// request whose messages end in role=tool) while correlation is off. The
// refusal is about the whole conversation: an ingress names its messages
// field as the error's param.
var ErrContinuationNeedsCorrelation = errors.New("app: tool results need correlation")

// freshTurn sends a USER_QUERY: in the anchored upstream conversation when the
// request extends a transcript the gateway completed, else in a new one.
func (g *Gateway) freshTurn(ctx context.Context, sum *record, p Principal, req chat.Request) (Turn, error) {
	return g.fresh(ctx, sum, p, req, true)
}

// fresh is freshTurn; without fallbacks, a transcript too long for a fresh
// query is refused as such (nothing sent) instead of continuing a
// conversation the gateway holds.
func (g *Gateway) fresh(ctx context.Context, sum *record, p Principal, req chat.Request, fallbacks bool) (Turn, error) {
	if err := g.checkRoom(ctx, p, req); err != nil {
		return nil, err
	}
	admitted, err := g.admit(ctx, p)
	if err != nil {
		return nil, err
	}
	tools := g.toolSets.of(req)
	up, claim, resumable := g.planFresh(ctx, sum, p, req, tools)
	sum.Dispatches, sum.QueryChars = 1, contentChars(up.Chat.Messages)
	g.log.DebugContext(ctx, "dispatch", "chat_type", "USER_QUERY", "messages", len(req.Messages), "tools", len(req.Tools),
		"continues_conversation", claim != nil)
	s, err := g.send(ctx, up)
	disclosure := ""
	if err != nil && fallbacks && resumable != nil && g.cfg.Resume && errs.Has(err, errs.UpstreamQueryTooLong) {
		// Too long to start fresh: the conversation that holds the history
		// goes on with the new messages, disclosed (rows A24, A27).
		if rup, rclaim, how, ok := g.resumeAnchor(ctx, sum, p, req, resumable); ok {
			up, claim, disclosure = rup, rclaim, how
			sum.QueryChars = contentChars(up.Chat.Messages)
			s, err = g.send(ctx, up)
		}
	}
	if err != nil && fallbacks && claim == nil && g.cfg.Resume && g.cfg.Correlation && errs.Has(err, errs.UpstreamQueryTooLong) {
		// Too long to start fresh: the results before the new user messages
		// may be history the upstream already holds.
		if cont, ok := correlation.SplitHistory(req.Messages); ok {
			h, ok, herr := g.planHistory(ctx, p, req, tools, cont)
			switch {
			case herr != nil:
				g.log.WarnContext(ctx, "history lookup failed", "code", string(errs.CodeOf(herr)), "error", errs.Redact(herr))
			case ok:
				return g.sendHistory(ctx, sum, p, req, tools, h, admitted, err)
			default:
				// Results the group still waits for, then a new user turn:
				// they go up once, together, in the group's TOOL_RESPONSE.
				if t, ok, ferr := g.foldTurn(ctx, sum, p, req, tools, cont, admitted, err); ok {
					return t, ferr
				}
			}
		}
	}
	if err != nil {
		if notAccepted(err) {
			sum.Dispatches = 0
			g.refund(ctx, p, admitted, err)
		}
		if claim != nil {
			ev := conversation.Ambiguous
			if notAccepted(err) {
				ev = conversation.NotSent
			}
			g.settleAnchor(ctx, p, claim, ev)
		}
		return nil, err
	}
	t := &turn{g: g, p: p, req: req, tools: tools, stream: s, anchor: claim, sum: sum, disclosure: disclosure}
	if claim != nil {
		t.convID = claim.convID // a continued stream need not repeat its conversation id
	}
	return t, nil
}

// checkRoom refuses a fresh turn that may ask for tools while the store has no
// room for one more group, or the key holds its share of the store: every such answer would be refused at admission
// anyway, after costing an upstream query. Room can still vanish during the
// stream; the reservation at the proven end decides (and refuses before any id
// is shown). Continuations are not pre-checked: completing one is what frees
// its group's room, so refusing them would keep a full store full until the
// pending TTL.
func (g *Gateway) checkRoom(ctx context.Context, p Principal, req chat.Request) error {
	if len(req.Tools) == 0 || req.ToolChoice.Mode == chat.ToolChoiceNone {
		return nil
	}
	err := g.store.CheckRoom(ctx, p.ID, 1, g.clock.Now())
	if err != nil && !errs.Has(err, errs.CorrelationCapacityExceeded) {
		return err // the store is unavailable
	}
	ok := err == nil
	if !ok {
		g.log.WarnContext(ctx, "correlation store full: tool turn refused before sending", "code", string(errs.CorrelationCapacityExceeded),
			"key_share", errors.As(err, new(*correlation.ShareExceeded)), "principal_slot", p.Slot)
		return err
	}
	return nil
}

// continueTurn resolves, checks and claims the group the results answer (the
// steps are in docs/CORRELATION.md) and, when the claim is won, dispatches
// exactly one TOOL_RESPONSE.
func (g *Gateway) continueTurn(ctx context.Context, sum *record, p Principal, req chat.Request, cont correlation.Continuation) (Turn, error) {
	tools := g.toolSets.of(req)
	key, sub, err := g.submission(ctx, p, req, tools, cont)
	if err != nil {
		return nil, err
	}
	if key == "" {
		d := correlation.SubmitUnknown()
		g.logDecision(ctx, p, d)
		return nil, d.Err()
	}
	attempt, err := g.ids.Token()
	if err != nil {
		return nil, err
	}
	var claimed correlation.Group
	earlier, compacted, triedFresh := false, false, false
	submit := func(gr *correlation.Group) (correlation.Decision, error) {
		if !canon.IsToolsBinding(gr.ToolsHash) && sub.LegacyToolsHash == "" {
			// A record of an earlier build binds the older form (with
			// tool_choice); only such a record is compared under it, so
			// only then is it computed, here, where the record is known.
			legacy, err := legacyToolsHashOf(req)
			if err != nil {
				return correlation.Decision{}, err
			}
			sub.LegacyToolsHash = legacy
		}
		defer func() { claimed = gr.Clone() }()
		d, err := gr.Submit(g.clock.Now(), g.cfg.Policy, sub, attempt)
		// The calls are still pending and the transcript before them
		// changed (an agent compacted it before sending the results), or
		// they were answered so and the same request comes again (Claude
		// Code re-sends a round after its cut-off nudge left the results'
		// message): the submission is judged with the calls alone echoed
		// as issued — pending, answered in the conversation that holds the
		// history they were issued in, disclosed; answered, the recorded
		// answer, disclosed again, or the refusal of its state. Other
		// results stay a conflict. The refusal changed nothing.
		relaxed := d.Event == correlation.SubmitHistoryMismatch || d.Event == correlation.SubmitDifferent
		if err == nil && relaxed && g.cfg.Resume {
			again := sub
			again.EarlierHistory = true
			if d.Event == correlation.SubmitHistoryMismatch && !triedFresh {
				// A compacted transcript that fits starts fresh (below).
				if ev, _ := correlation.Classify(*gr, again, g.clock.Now()); ev == correlation.SubmitValid {
					compacted = true
					return correlation.Decision{}, errCompacted
				}
			}
			earlier = true
			return gr.Submit(g.clock.Now(), g.cfg.Policy, again, attempt)
		}
		return d, err
	}
	d, err := g.store.Update(ctx, key, submit)
	if compacted {
		// The compacted transcript, the results as text, starts a fresh
		// conversation when it fits (the upstream then holds exactly the
		// client's transcript, as for any fitting one); the calls stay
		// pending in theirs. Too long, nothing was sent and they are
		// answered there.
		triedFresh = true
		t, ferr := g.fresh(ctx, sum, p, req, false)
		if !errs.Has(ferr, errs.UpstreamQueryTooLong) || !notAccepted(ferr) {
			if ferr == nil {
				g.logConversation(ctx, sum, slog.LevelInfo, []slog.Attr{slog.String("decision", "fresh"), slog.String("reason", "compacted_before_results")},
					func() []slog.Attr {
						return []slog.Attr{slog.String("reason", "compacted_before_results"), slog.String("principal_slot", p.Slot)}
					})
			}
			return t, ferr
		}
		d, err = g.store.Update(ctx, key, submit)
	}
	if errs.Has(err, errs.UnknownToolCall) { // removed between resolve and update
		d = correlation.SubmitUnknown()
		g.logDecision(ctx, p, d)
		return nil, d.Err()
	}
	if err != nil {
		return nil, err
	}
	g.logDecision(ctx, p, d)
	switch d.Effect {
	case correlation.EffectReplay:
		if d.Replay != nil {
			t, err := replayTurn(d.Replay, req.Output)
			if err == nil && earlier {
				return disclosedReplay{Turn: t, disclosure: DisclosedEarlierHistory}, nil
			}
			return t, err
		}
		return nil, d.Err()
	case correlation.EffectDispatch:
		t, err := g.dispatch(ctx, sum, p, req, tools, claimed, cont, sub.Echo)
		if tt, ok := t.(*turn); ok && earlier {
			tt.disclosure = DisclosedEarlierHistory
			g.noteResumed(ctx, sum, p, d.Row, DisclosedEarlierHistory, len(cont.Prefix), 0)
		}
		return t, err
	case correlation.EffectResume:
		return g.resumeTurn(ctx, sum, p, req, tools, g.historyOf(claimed, d, cont))
	default:
		if err := d.Err(); err != nil {
			return nil, err
		}
		return nil, errors.AssertionFailedf("app: decision %s without an answer", d.Row)
	}
}

// errCompacted ends continueTurn's first update without a change: the
// pending calls' results come after the client compacted its transcript,
// which may fit a fresh conversation.
var errCompacted = errors.New("app: results after a compacted transcript")

// dispatch sends the one TOOL_RESPONSE of a claimed group, built only from the
// record's private ids, in call order. The key's limits are checked first,
// as for a fresh turn: a refusal (or a budget that cannot be read) releases
// the claim, so the group is PENDING again and the same results sent after
// the window frees are dispatched once.
func (g *Gateway) dispatch(ctx context.Context, sum *record, p Principal, req chat.Request, tools *toolSet, gr correlation.Group, cont correlation.Continuation, echo *canon.Echo) (Turn, error) {
	admitted, err := g.admit(ctx, p)
	if err != nil {
		g.settleFailure(ctx, p, gr.Key, true)
		return nil, err
	}
	byID := make(map[string]string, len(cont.Results))
	for _, r := range cont.Results {
		byID[r.ID] = r.Content
	}
	c := &ports.Continuation{ConversationID: gr.ConversationID, UpstreamGroupID: gr.UpstreamGroupID}
	for _, call := range gr.Calls {
		c.Results = append(c.Results, ports.ContinuationResult{UpstreamCallID: call.UpstreamID, OriginalName: call.OriginalName, Content: byID[call.PublicID]})
		c.Results[len(c.Results)-1].PublicCallID = call.PublicID // what a refusal of the result names
	}
	g.log.DebugContext(ctx, "dispatch", "chat_type", "TOOL_RESPONSE", "results", len(c.Results),
		"group_id_present", c.UpstreamGroupID != "")
	sum.Dispatches = 1
	for _, r := range c.Results {
		sum.QueryChars += usage.Chars(r.Content)
	}
	s, err := g.send(ctx, ports.UpstreamRequest{Chat: req, Continuation: c})
	if err != nil {
		if notAccepted(err) {
			sum.Dispatches = 0
			g.refund(ctx, p, admitted, err)
		}
		g.settleFailure(ctx, p, gr.Key, notAccepted(err))
		if notAccepted(err) {
			return nil, err
		}
		return nil, errs.Wrap(err, errs.ContinuationOutcomeUncertain)
	}
	// The turn starts with the group's stored conversation id: a continuation
	// stream need not repeat it (one public project's fixtures omit it), and
	// the next tool group of this turn belongs to the same conversation.
	return &turn{g: g, p: p, req: req, tools: tools, stream: s, claimedKey: gr.Key, convID: gr.ConversationID, sum: sum, echo: echo}, nil
}

// notAccepted reports whether an upstream error proves the continuation was
// never processed: nothing was sent, or the upstream refused it before
// processing (redirect, 4xx).
func notAccepted(err error) bool {
	return errors.Is(err, ports.ErrNotSent) || errors.Is(err, ports.ErrNotAccepted)
}

// settleFailure moves a claimed group after a failed dispatch: back to PENDING
// only when nothing was sent or the upstream provably did not accept the
// request (notSent), else UNCERTAIN.
func (g *Gateway) settleFailure(ctx context.Context, p Principal, key string, notSent bool) {
	d, err := g.store.Update(context.WithoutCancel(ctx), key, func(gr *correlation.Group) (correlation.Decision, error) {
		if notSent {
			return gr.NotSent(g.clock.Now(), g.cfg.Policy)
		}
		return gr.Ambiguous(g.clock.Now(), g.cfg.Policy)
	})
	if err != nil {
		g.log.ErrorContext(ctx, "correlation settle failed", "code", errs.CodeOf(err), "error", errs.Redact(err))
		return
	}
	g.logDecision(ctx, p, d)
}

// logDecision reports one applied row of the group machine to the observer
// (whose subscribers log it, see LogObserver, and count it).
func (g *Gateway) logDecision(ctx context.Context, p Principal, d correlation.Decision) {
	g.obs.Observe(ctx, ports.Event{Kind: ports.EventTransition, Machine: correlation.MachineName, Row: d.Row,
		From: string(d.From), To: string(d.To), Effect: string(d.Effect), Code: string(d.Code), Count: 1, Slot: p.Slot})
}
