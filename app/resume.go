package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// Disclosures of a turn that continued an upstream conversation holding more
// than the client's transcript (docs/CONVERSATIONS.md): the value of the
// x-pmgate-conversation response header and of the access line's
// conversation.disclosure.
const (
	// DisclosedAfterFailure: the conversation's last turn failed after it was
	// sent; the upstream may hold its message and a partial answer the client
	// never saw.
	DisclosedAfterFailure = "continued-after-failure"
	// DisclosedFromEarlierPoint: the upstream took the client's last results
	// (or turn) and holds what followed them — an answer the client did not
	// receive, the service's loop-approval stop, or later turns.
	DisclosedFromEarlierPoint = "continued-from-earlier-point"
	// DisclosedChangedInstructions: the request changed only the system
	// prompt or the tools of a history the conversation holds (an agent's
	// compaction request); the conversation began under the earlier ones.
	DisclosedChangedInstructions = "continued-with-changed-instructions"
	// DisclosedEarlierHistory: the request answered a pending tool call after
	// its transcript changed (an agent compacted it first); the conversation
	// holds the history the calls were issued in, not the client's transcript.
	DisclosedEarlierHistory = "continued-with-earlier-history"
)

// Disclosed is implemented by every turn: Disclosure is "" unless the turn
// continued an upstream conversation that holds more than the client's
// transcript, and then one of the Disclosed* values. The ingress sends it as
// the x-pmgate-conversation header.
type Disclosed interface {
	Disclosure() string
}

// Disclosure implements Disclosed.
func (t *turn) Disclosure() string { return t.disclosure }

// historyPlan is a request whose tool results are history: their group had
// them dispatched already, and the request adds a new user turn.
type historyPlan struct {
	convID     string
	history    []chat.Message // the prefix and the results as first sent
	added      []chat.Message // the new user turn
	row        string
	disclosure string
}

// planHistory classifies cont (results followed by new user content) against
// the group the results answer. ok is false when the results are not history
// (no such group, a pending one, other results…): the request then takes the
// path it took before. err is a store failure.
func (g *Gateway) planHistory(ctx context.Context, p Principal, req chat.Request, tools *toolSet, cont correlation.Continuation) (historyPlan, bool, error) {
	key, sub, err := g.submission(ctx, p, req, tools, cont)
	if err != nil || key == "" {
		return historyPlan{}, false, err
	}
	var gr correlation.Group
	d, err := g.store.Update(ctx, key, func(x *correlation.Group) (correlation.Decision, error) {
		defer func() { gr = x.Clone() }()
		return x.Resume(g.clock.Now(), g.cfg.Policy, sub)
	})
	switch {
	case errors.Is(err, correlation.ErrNotHistory), errs.Has(err, errs.UnknownToolCall):
		return historyPlan{}, false, nil
	case err != nil:
		return historyPlan{}, false, err
	}
	g.logDecision(ctx, p, d)
	return g.historyOf(gr, d, cont), d.Effect == correlation.EffectResume, nil
}

// historyOf is the plan of a group whose submission took a resume row.
func (g *Gateway) historyOf(gr correlation.Group, d correlation.Decision, cont correlation.Continuation) historyPlan {
	h, a := cont.HistoryMessages()
	disclosure := DisclosedFromEarlierPoint
	if gr.State == correlation.Uncertain {
		disclosure = DisclosedAfterFailure
	}
	return historyPlan{convID: gr.ConversationID, history: h, added: a, row: d.Row, disclosure: disclosure}
}

// resumeTurn answers a request whose tool results are history. The results
// are never sent again. The whole transcript goes up as a fresh conversation
// when it fits the query budget (the upstream then holds exactly the
// client's history); otherwise, unless CONVERSATION_RESUME is off, only the
// new user content goes up as the next USER_QUERY of the group's
// conversation, and the turn discloses that.
func (g *Gateway) resumeTurn(ctx context.Context, sum *record, p Principal, req chat.Request, tools *toolSet, h historyPlan) (Turn, error) {
	if err := g.checkRoom(ctx, p, req); err != nil {
		return nil, err
	}
	admitted, err := g.admit(ctx, p)
	if err != nil {
		return nil, err
	}
	whole := req
	whole.Messages = append(append(make([]chat.Message, 0, len(h.history)+len(h.added)), h.history...), h.added...)
	sum.Dispatches, sum.QueryChars = 1, contentChars(whole.Messages)
	s, err := g.send(ctx, ports.UpstreamRequest{Chat: whole})
	if err != nil && errs.Has(err, errs.UpstreamQueryTooLong) {
		return g.sendHistory(ctx, sum, p, req, tools, h, admitted, err)
	}
	if err != nil {
		if notAccepted(err) {
			sum.Dispatches = 0
			g.refund(ctx, p, admitted, err)
		}
		return nil, err
	}
	return &turn{g: g, p: p, req: req, tools: tools, stream: s, sum: sum}, nil
}

// sendHistory sends only the new user content of h in the group's
// conversation, after the whole transcript was refused as too long
// (tooLong, the answer when resuming is off); the dispatch was admitted at
// admitted.
func (g *Gateway) sendHistory(ctx context.Context, sum *record, p Principal, req chat.Request, tools *toolSet, h historyPlan, admitted time.Time, tooLong error) (Turn, error) {
	if !g.cfg.Resume || h.convID == "" {
		sum.Dispatches = 0
		g.refund(ctx, p, admitted, tooLong)
		return nil, tooLong
	}
	added := req
	added.Messages = h.added
	sum.Dispatches, sum.QueryChars = 1, contentChars(h.added)
	g.noteResumed(ctx, sum, p, h.row, h.disclosure, len(h.history), len(h.added))
	g.log.DebugContext(ctx, "dispatch", "chat_type", "USER_QUERY", "messages", len(h.added), "tools", len(req.Tools),
		"continues_conversation", true, "disclosure", h.disclosure)
	s, err := g.send(ctx, ports.UpstreamRequest{Chat: added, ConversationID: h.convID, HistoryMessages: len(h.history)})
	if err != nil {
		if notAccepted(err) {
			sum.Dispatches = 0
			g.refund(ctx, p, admitted, err)
		}
		return nil, err
	}
	return &turn{g: g, p: p, req: req, tools: tools, stream: s, sum: sum, convID: h.convID, disclosure: h.disclosure}, nil
}

// noteResumed reports a disclosed continuation once: in the access line's
// conversation group and, at debug, as its own line.
func (g *Gateway) noteResumed(ctx context.Context, sum *record, p Principal, row, disclosure string, history, added int) {
	r, d := slog.String("row", row), slog.String("disclosure", disclosure)
	hist, nw := slog.Int("history_messages", history), slog.Int("new_messages", added)
	g.logConversation(ctx, sum, slog.LevelInfo, []slog.Attr{slog.String("decision", "continued"), r, d, hist, nw},
		func() []slog.Attr { return []slog.Attr{r, d, slog.String("principal_slot", p.Slot), hist, nw} })
}

// submission resolves the group cont's results answer and prepares the
// submission to it; key is "" when no id resolves for this principal.
func (g *Gateway) submission(ctx context.Context, p Principal, req chat.Request, tools *toolSet, cont correlation.Continuation) (string, correlation.Submission, error) {
	ids := cont.IDs()
	keys, err := g.store.Resolve(ctx, p.ID, ids)
	if err != nil {
		return "", correlation.Submission{}, err
	}
	var key string
	groups := map[string]bool{}
	for _, id := range ids { // the group of the first resolvable id, in request order
		if k, ok := keys[id]; ok {
			if key == "" {
				key = k
			}
			groups[k] = true
		}
	}
	if key == "" {
		return "", correlation.Submission{}, nil
	}
	toolsHash, err := tools.toolsBinding(req)
	if err != nil {
		return "", correlation.Submission{}, err
	}
	// Defaults come from the caller's original parameter schemas; the record
	// is only read inside the store's atomic section, so everything else of
	// the echo is prepared here.
	defaults, err := tools.toolDefaults(req)
	if err != nil {
		return "", correlation.Submission{}, err
	}
	echo, err := canon.PrepareEcho(cont.Prefix, defaults)
	if err != nil {
		return "", correlation.Submission{}, err
	}
	return key, correlation.Submission{
		Echo:            echo,
		Defaults:        defaults,
		ResultsHash:     correlation.ResultsHash(cont),
		PureResultsHash: correlation.PureResultsHash(cont),
		PrincipalID:     p.ID,
		WorkspaceID:     g.cfg.WorkspaceID,
		Model:           req.Model,
		ToolsHash:       toolsHash,
		Continuation:    cont,
		Unresolved:      len(ids) - len(keys),
		OtherGroups:     len(groups) - 1,
	}, nil
}

// foldTurn answers a request too long to start fresh whose tool results
// answer a group that is still PENDING, followed by new user messages — an
// agent's compaction request in the middle of a tool round (Codex), or the
// pending result an agent sends after compacting its transcript (Claude
// Code), disclosed continued-with-earlier-history then: the
// user messages are folded into the last result (correlation.Continuation.Fold,
// the form Anthropic Messages gives text after tool results) and the group's
// one TOOL_RESPONSE carries both, with the request's own tools (none, for a
// compaction), disclosed continued-with-changed-instructions when they differ
// from the group's. The fresh attempt (admitted at admitted, refused as
// tooLong) is refunded first: the dispatch is admitted on its own. ok is false
// when the group is not PENDING (or no id resolves): the caller answers
// tooLong.
func (g *Gateway) foldTurn(ctx context.Context, sum *record, p Principal, req chat.Request, tools *toolSet, cont correlation.Continuation, admitted time.Time, tooLong error) (Turn, bool, error) {
	folded := cont.Fold()
	key, sub, err := g.submission(ctx, p, req, tools, folded)
	if err != nil || key == "" {
		return nil, false, nil
	}
	attempt, err := g.ids.Token()
	if err != nil {
		return nil, false, nil
	}
	var claimed correlation.Group
	d, err := g.store.Update(ctx, key, func(gr *correlation.Group) (correlation.Decision, error) {
		if gr.State != correlation.Pending {
			return correlation.Decision{}, errNotPending
		}
		defer func() { claimed = gr.Clone() }()
		return gr.Submit(g.clock.Now(), g.cfg.Policy, sub, attempt)
	})
	if err != nil {
		if !errors.Is(err, errNotPending) && !errs.Has(err, errs.UnknownToolCall) {
			g.log.WarnContext(ctx, "folded continuation failed", "code", string(errs.CodeOf(err)), "error", errs.Redact(err))
		}
		return nil, false, nil
	}
	g.logDecision(ctx, p, d)
	g.refund(ctx, p, admitted, tooLong) // the fresh attempt was never sent
	if d.Effect != correlation.EffectDispatch {
		return nil, true, d.Err()
	}
	disclosure := ""
	unfolded := sub
	unfolded.Continuation.Folded = false
	switch {
	case !correlation.SameHistory(claimed, unfolded):
		disclosure = DisclosedEarlierHistory
	case sub.ToolsHash != claimed.ToolsHash:
		disclosure = DisclosedChangedInstructions
	}
	t, err := g.dispatch(ctx, sum, p, req, tools, claimed, folded, sub.Echo)
	if tt, ok := t.(*turn); ok && disclosure != "" {
		tt.disclosure = disclosure
		g.noteResumed(ctx, sum, p, d.Row, disclosure, len(cont.Prefix)+len(cont.Results), len(cont.Added))
	}
	return t, true, err
}

// errNotPending ends foldTurn's update without a change: the group is not
// waiting for its results.
var errNotPending = errors.New("app: the group is not pending")
