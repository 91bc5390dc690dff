package app

import (
	"context"
	"log/slog"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// WithAnchors turns conversation continuity on (CONVERSATION_CONTINUITY): a
// fresh turn that extends a transcript the gateway completed continues its
// upstream conversation with only the new user messages. Call it before
// serving; without it every fresh turn starts a new upstream conversation.
func (g *Gateway) WithAnchors(s ports.AnchorStore, p conversation.Policy) *Gateway {
	if s == nil {
		panic("app: nil anchor store")
	}
	g.anchors, g.anchorPolicy = s, p
	return g
}

// anchorClaim is the anchor a continued turn holds: settled exactly once.
type anchorClaim struct {
	hash    string
	claimID string
	convID  string
}

// planFresh decides how a fresh turn reaches the upstream: the continuation of
// an anchored conversation (only the new user messages, the stored
// conversation id, and the claim the turn must settle), or a new conversation
// with the whole transcript. Every outcome is logged once, with the reason of
// a fresh conversation and never an id. A store failure is a fresh
// conversation: that is always correct, only costlier.
func (g *Gateway) planFresh(ctx context.Context, sum *record, p Principal, req chat.Request, tools *toolSet) (ports.UpstreamRequest, *anchorClaim, *resumable) {
	up := ports.UpstreamRequest{Chat: req}
	if g.anchors == nil {
		return up, nil, nil
	}
	history, added, ok := conversation.Split(req.Messages)
	if !ok {
		g.logFresh(ctx, sum, p, conversation.Decision{Reason: conversation.ReasonNoAnchor}, nil)
		return up, nil, nil
	}
	hash, err := conversation.TranscriptHash(history)
	var areq conversation.Request
	if err == nil {
		areq, err = g.anchorRequest(req, tools)
	}
	if err == nil {
		areq.Sent, err = conversation.SentOf(added)
	}
	if err == nil {
		var claimID string
		claimID, err = g.ids.Token()
		if err == nil {
			var d conversation.Decision
			var a conversation.Anchor
			d, err = g.anchors.Update(ctx, p.ID, hash, func(an *conversation.Anchor) (conversation.Decision, error) {
				defer func() { a = *an }()
				return an.Claim(g.clock.Now(), g.anchorPolicy, areq, claimID)
			})
			if errors.Is(err, conversation.ErrNoAnchor) {
				d, err = conversation.LookupMissing(), nil
			}
			if err == nil {
				g.observeAnchor(ctx, p, d)
				if d.Effect != conversation.EffectContinue {
					g.logFresh(ctx, sum, p, d, nil)
					var r *resumable
					if d.To == conversation.Resumable || d.To == conversation.Advanced ||
						d.Reason == conversation.ReasonInstructionsChanged || d.Reason == conversation.ReasonToolsChanged {
						r = &resumable{hash: hash, history: len(history), added: added, state: d.To, req: areq}
					}
					up.ConversationLost = d.Reason == conversation.ReasonRetired
					return up, nil, r
				}
				row, via := slog.String("row", d.Row), slog.String("via", d.Via)
				hist, nw := slog.Int("history_messages", len(history)), slog.Int("new_messages", len(added))
				g.logConversation(ctx, sum, slog.LevelInfo, []slog.Attr{slog.String("decision", "continued"), row, via, hist, nw},
					func() []slog.Attr { return []slog.Attr{row, via, slog.String("principal_slot", p.Slot), hist, nw} })
				cont := req
				cont.Messages = added
				return ports.UpstreamRequest{Chat: cont, ConversationID: a.ConversationID, HistoryMessages: len(history)},
					&anchorClaim{hash: hash, claimID: claimID, convID: a.ConversationID}, nil
			}
		}
	}
	g.logFresh(ctx, sum, p, conversation.Decision{Reason: conversation.ReasonStoreUnavailable}, err)
	return up, nil, nil
}

// anchorRequest is what a fresh request brings to the anchor of its history:
// the settings it must share with the anchored turn.
func (g *Gateway) anchorRequest(req chat.Request, tools *toolSet) (conversation.Request, error) {
	toolsHash, err := tools.toolsBinding(req)
	if err != nil {
		return conversation.Request{}, err
	}
	instructions, err := conversation.InstructionsHash(req.Messages)
	if err != nil {
		return conversation.Request{}, err
	}
	return conversation.Request{WorkspaceID: g.cfg.WorkspaceID, Model: req.Model, ToolsHash: toolsHash, InstructionsHash: instructions}, nil
}

// resumable is an anchor a fresh turn found RESUMABLE (its last continuation
// failed after it was sent), ADVANCED (an earlier point of a conversation
// that moved on), or ACTIVE under other instructions or tools (an agent's
// compaction request): the turn resumes it only when its whole transcript
// does not fit one fresh query (resumeAnchor).
type resumable struct {
	hash    string
	history int
	added   []chat.Message
	state   conversation.State
	req     conversation.Request // the request's settings, for an ACTIVE anchor whose instructions or tools differ
}

// resumeAnchor claims r (rows A24, A27, A37) for a fresh turn whose whole
// transcript was refused as too long: the upstream request with only the new
// user messages in the anchor's conversation (preceded by the request's
// instructions when they differ from the anchored ones), the claim the turn
// settles, and the disclosure. ok is false when the anchor is no longer
// resumable (another request took it, time removed it) or the store failed.
func (g *Gateway) resumeAnchor(ctx context.Context, sum *record, p Principal, req chat.Request, r *resumable) (ports.UpstreamRequest, *anchorClaim, string, bool) {
	claimID, err := g.ids.Token()
	if err != nil {
		return ports.UpstreamRequest{}, nil, "", false
	}
	var a conversation.Anchor
	d, err := g.anchors.Update(ctx, p.ID, r.hash, func(an *conversation.Anchor) (conversation.Decision, error) {
		defer func() { a = *an }()
		if r.state == conversation.Active {
			return an.ContinueChanged(g.clock.Now(), g.anchorPolicy, r.req, claimID)
		}
		return an.Resume(g.clock.Now(), g.anchorPolicy, claimID, r.req.Sent)
	})
	if err != nil {
		if !errors.Is(err, conversation.ErrIllegalTransition) && !errors.Is(err, conversation.ErrNoAnchor) {
			g.log.WarnContext(ctx, "conversation resume failed", "code", string(errs.CodeOf(err)), "error", errs.Redact(err))
		}
		return ports.UpstreamRequest{}, nil, "", false
	}
	g.observeAnchor(ctx, p, d)
	var disclosure string
	switch d.From {
	case conversation.Active:
		disclosure = DisclosedChangedInstructions
	case conversation.Advanced:
		disclosure = DisclosedFromEarlierPoint
	default:
		disclosure = DisclosedAfterFailure
	}
	added, history := r.added, r.history
	if d.From == conversation.Resumable {
		// A client that kept the failed turn's messages in its history sends
		// them again before its new ones: the conversation may hold them
		// already (the disclosure says so), so only the new ones go up.
		added = a.Unsent(r.added)
		history += len(r.added) - len(added)
	}
	g.noteResumed(ctx, sum, p, d.Row, disclosure, history, len(added))
	cont := req
	cont.Messages = added
	up := ports.UpstreamRequest{Chat: cont, ConversationID: a.ConversationID, HistoryMessages: history}
	if r.req.InstructionsHash != a.InstructionsHash {
		// The conversation began under other instructions: the request's own
		// go up with its new messages, so the answer follows them.
		instructions, _ := conversation.Instructions(req.Messages)
		cont.Messages = append(append(make([]chat.Message, 0, len(instructions)+len(added)), instructions...), added...)
		up.Chat, up.Instructions = cont, len(instructions)
	}
	return up, &anchorClaim{hash: r.hash, claimID: claimID, convID: a.ConversationID}, disclosure, true
}

func (g *Gateway) logFresh(ctx context.Context, sum *record, p Principal, d conversation.Decision, err error) {
	group := make([]slog.Attr, 0, 5)
	group = append(group, slog.String("decision", "fresh"), slog.String("reason", string(d.Reason)))
	if d.Row != "" {
		group = append(group, slog.String("row", d.Row))
	}
	if d.Via != "" {
		group = append(group, slog.String("via", d.Via))
	}
	level := slog.LevelInfo
	var code slog.Attr
	if err != nil {
		level = slog.LevelWarn
		code = slog.String("code", string(errs.CodeOf(err)))
		group = append(group, code)
	}
	g.logConversation(ctx, sum, level, group, func() []slog.Attr {
		line := make([]slog.Attr, 0, 6)
		line = append(line, group[1], slog.String("principal_slot", p.Slot))
		line = append(line, group[2:]...) // row, via, code
		if err != nil {
			line = append(line, slog.String("error", errs.Redact(err)))
		}
		return line
	})
}

// logConversation reports a turn's conversation decision once per request:
// as the group "conversation" of the request's summary (group, whose first
// attribute is decision: fresh or continued), which the caller writes in its
// access line, and as its own line "conversation: <decision>" (line's
// attributes). That line is at level when it is a warning, else at debug, so
// that a plain turn writes one INFO line.
func (g *Gateway) logConversation(ctx context.Context, sum *record, level slog.Level, group []slog.Attr, line func() []slog.Attr) {
	sum.note("conversation", group...)
	level = ports.OwnLineLevel(true, level)
	if !g.log.Enabled(ctx, level) {
		return
	}
	g.log.LogAttrs(ctx, level, "conversation: "+group[0].Value.String(), line()...)
}

// settleAnchor settles the claim of a continued turn: Complete at a proven
// end, NotSent when the upstream provably never took the request,
// Ambiguous otherwise (the anchor becomes resumable). A failure is logged; the anchor then stays CLAIMED until
// its hard deadline retires it (never continued again: safe).
func (g *Gateway) settleAnchor(ctx context.Context, p Principal, c *anchorClaim, ev conversation.Event) {
	d, err := g.anchors.Update(context.WithoutCancel(ctx), p.ID, c.hash, func(a *conversation.Anchor) (conversation.Decision, error) {
		return a.Settle(ev, c.claimID, g.clock.Now(), g.anchorPolicy)
	})
	if err != nil {
		g.log.WarnContext(ctx, "conversation settle failed", "event", string(ev), "code", string(errs.CodeOf(err)), "error", errs.Redact(err))
		return
	}
	g.observeAnchor(ctx, p, d)
}

// recordAnchor anchors a text answer the gateway proved complete: the request's
// messages plus the answer, as the client will echo them, under the upstream
// conversation that now holds them. Failing to record only makes the next turn
// a fresh conversation; the answer is not affected.
func (g *Gateway) recordAnchor(ctx context.Context, p Principal, req chat.Request, tools *toolSet, text, convID string) {
	if g.anchors == nil {
		return
	}
	if convID == "" || text == "" {
		g.log.InfoContext(ctx, "conversation not anchored", "reason", "no_conversation_id_or_text", "principal_slot", p.Slot)
		return
	}
	transcript := append(append(make([]chat.Message, 0, len(req.Messages)+1), req.Messages...), conversation.Reply(text))
	hash, err := conversation.TranscriptHash(transcript)
	var areq conversation.Request
	if err == nil {
		areq, err = g.anchorRequest(req, tools)
	}
	if err == nil {
		now := g.clock.Now()
		err = g.anchors.Record(context.WithoutCancel(ctx), conversation.Anchor{
			PrincipalID: p.ID, WorkspaceID: areq.WorkspaceID, Model: areq.Model, ToolsHash: areq.ToolsHash, InstructionsHash: areq.InstructionsHash,
			TranscriptHash: hash, TranscriptLength: len(transcript), ConversationID: convID,
			State: conversation.Active, CreatedAt: now, ExpiresAt: now.Add(g.anchorPolicy.TTL),
		}, now)
	}
	if err != nil {
		reason := "store_unavailable"
		switch {
		case errors.Is(err, conversation.ErrBusy):
			reason = "claimed"
		case errors.Is(err, conversation.ErrFull):
			reason = "full"
		}
		g.log.WarnContext(ctx, "conversation not anchored", "reason", reason, "code", string(errs.CodeOf(err)), "principal_slot", p.Slot)
		return
	}
	g.log.DebugContext(ctx, "conversation anchored", "messages", len(transcript), "principal_slot", p.Slot)
}
