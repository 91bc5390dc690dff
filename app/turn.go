package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/structured"
	"github.com/pmgate/pmgate/domain/toolschema"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
)

// turn adapts an upstream stream to client deltas. Text streams through as it
// arrives; tool calls are held until the completion machine proved the end,
// then capacity is reserved, public ids are drawn and the PENDING group is
// admitted before any id is shown (docs/CORRELATION.md).
type turn struct {
	g      *Gateway
	p      Principal
	req    chat.Request
	tools  *toolSet // what is derived from req's tool definitions
	stream ports.Stream
	// claimedKey is the group whose continuation this turn is; it is settled
	// exactly once: CONSUMED at a proven end, UNCERTAIN otherwise.
	claimedKey string
	settled    bool
	// anchor is the conversation anchor a continued fresh turn claimed; it is
	// settled exactly once: ADVANCED at a proven end, RESUMABLE otherwise.
	anchor        *anchorClaim
	anchorSettled bool
	// sum receives the characters and tokens the turn received (never nil).
	sum *record
	// echo is the prefix of req's messages a continuation prepared (nil for
	// a fresh turn): the hash of the transcript a tool-call answer binds
	// goes on from it instead of hashing the prefix a second time.
	echo *canon.Echo

	text strings.Builder
	// calls holds the tool calls until the stream's proven end. The turn is
	// the one place a stream's tool-call deltas are assembled (the upstream
	// adapter only numbers them): admission needs the whole group, and every
	// upstream feeds the same deltas through the port.
	calls  chat.ToolCallSet
	convID string
	// disclosure is set when the turn continued a conversation that holds
	// more than the client's transcript (Disclosed).
	disclosure string
	usage      *chat.Usage
	emitted    []Delta
	queue      []Delta
	done       bool
	err        error

	// nextMu is held for the whole of Next. Close may run concurrently with a
	// blocked Next (the ingress closes on disconnect): it closes the stream,
	// which unblocks Next, then takes nextMu to settle what Next did not.
	nextMu    sync.Mutex
	closeOnce sync.Once
}

func (t *turn) Next(ctx context.Context) (Delta, error) {
	t.nextMu.Lock()
	defer t.nextMu.Unlock()
	d, _, err := t.next(ctx, true)
	return d, err
}

// TryNext implements TryTurn: it reads only the events the stream holds
// already (ports.Buffered); a stream that cannot tell is taken to wait.
func (t *turn) TryNext(ctx context.Context) (Delta, bool, error) {
	t.nextMu.Lock()
	defer t.nextMu.Unlock()
	return t.next(ctx, false)
}

// Summary implements Summarized: what the request did, with the stream's
// outcome as the group "upstream" once it is known.
func (t *turn) Summary() Summary {
	t.nextMu.Lock()
	defer t.nextMu.Unlock()
	if attrs := ports.OutcomeNoteOf(t.stream); attrs != nil {
		t.sum.note("upstream", attrs...)
	}
	return t.sum.summary()
}

// next is Next; without wait it returns ok false instead of reading from the
// stream when the stream holds no event.
func (t *turn) next(ctx context.Context, wait bool) (Delta, bool, error) {
	for {
		if len(t.queue) > 0 {
			d := t.queue[0]
			t.queue = t.queue[1:]
			return d, true, nil
		}
		if t.done {
			if t.err != nil {
				return Delta{}, true, t.err
			}
			return Delta{}, true, io.EOF
		}
		if !wait && !ports.IsBuffered(t.stream) {
			return Delta{}, false, nil
		}
		ev, err := t.stream.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			t.finish(ctx)
			continue
		case err != nil:
			t.fail(ctx, err)
			continue
		}
		switch ev.Kind {
		case chat.EventText:
			if ev.Text == "" {
				continue
			}
			t.text.WriteString(ev.Text)
			t.sum.OutputChars += usage.Chars(ev.Text)
			if t.req.Output.Structured() {
				// A structured answer is shown only once it is complete and
				// valid (finish): no client sees a prefix of one that fails.
				continue
			}
			d := Delta{Text: ev.Text}
			t.emitted = append(t.emitted, d)
			return d, true, nil
		case chat.EventToolCall:
			if ev.ToolCall != nil {
				t.calls.Add(*ev.ToolCall)
			}
		case chat.EventUsage:
			if ev.Usage != nil && ev.Usage.Reported() {
				u := *ev.Usage
				t.usage = &u
				t.sum.Usage = &u
			}
		case chat.EventConversation:
			t.convID = ev.ConversationID
		}
	}
}

// finish runs at a proven end.
func (t *turn) finish(ctx context.Context) {
	t.done = true
	t.settleAnchor(ctx, conversation.Complete) // the upstream conversation moved on, whatever follows
	final := Delta{Finish: FinishStop, Usage: t.usage}
	var toolDeltas []Delta
	if t.calls.Len() > 0 {
		ds, err := t.admit(ctx)
		if err != nil {
			t.abortAfterEnd(ctx, err)
			return
		}
		toolDeltas = ds
		final.Finish = FinishToolCalls
		for _, c := range t.calls.Calls() {
			t.sum.OutputChars += usage.Chars(c.Arguments())
		}
	}
	if t.req.Output.Structured() && (t.text.Len() > 0 || t.calls.Len() == 0) {
		held, err := t.structuredText()
		if err != nil {
			t.abortAfterEnd(ctx, err)
			return
		}
		toolDeltas = append(held, toolDeltas...)
	}
	t.queue = append(toolDeltas, final)
	if t.calls.Len() == 0 {
		// A proven text answer: anchor it before the client can send its next turn.
		t.g.recordAnchor(ctx, t.p, t.req, t.tools, t.text.String(), t.convID)
	}
	if t.claimedKey != "" {
		all := append(append([]Delta(nil), t.emitted...), t.queue...)
		cached, err := encodeReplay(all)
		if err != nil {
			t.abortAfterEnd(ctx, err)
			return
		}
		sum := sha256.Sum256(cached)
		t.settle(ctx, func(g *correlation.Group) (correlation.Decision, error) {
			return g.Complete(t.g.clock.Now(), t.g.cfg.Policy, cached, "sha256:"+hex.EncodeToString(sum[:]))
		})
	}
}

// structuredText releases the text a structured request held back. The
// final answer (no tool calls) must pass structured.Check; it is then shown,
// and anchored, as exactly the JSON text. Text before tool calls is not the
// answer and is released as it came (docs/STRUCTURED-OUTPUT.md). The deltas
// join the queue, not emitted: a cached replay takes both.
func (t *turn) structuredText() ([]Delta, error) {
	if t.calls.Len() > 0 {
		return []Delta{{Text: t.text.String()}}, nil
	}
	answer, err := structured.Check(t.req.Output, t.text.String())
	if err != nil {
		return nil, err
	}
	t.text.Reset()
	t.text.WriteString(answer)
	return []Delta{{Text: answer}}, nil
}

// abortAfterEnd handles a failure after the upstream proved its end (admission
// refused, store down): the continuation was consumed upstream, so the old
// group is consumed without a cached answer; the client gets the error.
func (t *turn) abortAfterEnd(ctx context.Context, err error) {
	t.queue, t.err = nil, err
	if t.claimedKey != "" {
		t.settle(ctx, func(g *correlation.Group) (correlation.Decision, error) {
			return g.Complete(t.g.clock.Now(), t.g.cfg.Policy, nil, "")
		})
	}
}

// fail ends the turn with a stream error; a claimed continuation becomes
// UNCERTAIN (it may have reached the upstream) and is never sent again.
//
// The loop-approval gate (upstream_loop_approval) is not a failure of
// delivery: the service accepted the results and paused the tool loop, so a
// claimed continuation is CONSUMED (row Gated) and the turn's error keeps the
// gate's own code, which the ingress answers with; Gated reports it.
func (t *turn) fail(ctx context.Context, err error) {
	t.done, t.queue = true, nil
	t.err = err
	ev := conversation.Ambiguous
	if errs.Has(err, errs.UpstreamConversationLost) {
		ev = conversation.Lost // nothing can continue it: never resumed
	}
	t.settleAnchor(ctx, ev)
	if Gated(err) {
		if t.claimedKey != "" && !t.settled {
			t.settle(ctx, func(g *correlation.Group) (correlation.Decision, error) {
				return g.Gated(t.g.clock.Now(), t.g.cfg.Policy)
			})
		}
		return
	}
	if t.claimedKey != "" && !t.settled {
		t.g.log.WarnContext(ctx, "continuation failed after dispatch", "code", errs.CodeOf(err))
		t.settle(ctx, func(g *correlation.Group) (correlation.Decision, error) {
			return g.Ambiguous(t.g.clock.Now(), t.g.cfg.Policy)
		})
		t.err = errs.Wrap(err, errs.ContinuationOutcomeUncertain)
	}
}

// Gated reports whether a turn ended in the service's loop-approval gate: a
// clean end with no answer after several consecutive tool rounds, whose tool
// results (on a continuation) were accepted. The next user message continues
// the conversation.
func Gated(err error) bool { return errs.Has(err, errs.UpstreamLoopApproval) }

func (t *turn) settle(ctx context.Context, fn func(g *correlation.Group) (correlation.Decision, error)) {
	t.settled = true
	d, err := t.g.store.Update(context.WithoutCancel(ctx), t.claimedKey, fn)
	if err != nil {
		t.g.log.ErrorContext(ctx, "correlation settle failed", "code", errs.CodeOf(err), "error", errs.Redact(err))
		if t.err == nil {
			t.queue, t.err = nil, err
		}
		return
	}
	t.g.logDecision(ctx, t.p, d)
}

// settleAnchor settles the claimed conversation anchor once, if any.
func (t *turn) settleAnchor(ctx context.Context, ev conversation.Event) {
	if t.anchor == nil || t.anchorSettled {
		return
	}
	t.anchorSettled = true
	t.g.settleAnchor(ctx, t.p, t.anchor, ev)
}

// Close releases the upstream; a claimed continuation abandoned before its
// proven end is UNCERTAIN. It is safe to call concurrently with Next and more
// than once.
func (t *turn) Close() {
	t.closeOnce.Do(func() {
		_ = t.stream.Close()
		t.nextMu.Lock()
		defer t.nextMu.Unlock()
		if (t.claimedKey != "" && !t.settled) || (t.anchor != nil && !t.anchorSettled) {
			t.fail(context.Background(), errs.New(errs.ClientCancelled))
		}
	})
}

// admit validates the complete tool group, reserves capacity, draws public ids
// and admits the PENDING group; only then are the tool-call deltas released.
func (t *turn) admit(ctx context.Context) ([]Delta, error) {
	g := t.g
	if !g.cfg.Correlation {
		return nil, errs.Newf(errs.UpstreamUnsupportedEvent, "tool calls while correlation is disabled")
	}
	if t.convID == "" {
		return nil, errs.Newf(errs.UpstreamUnverifiedEventShape, "tool calls without a conversation id")
	}
	lowered, schemaHashes, hashErrs, err := t.tools.admission(t.req)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]int, len(t.req.Tools)) // a repeated name: the last definition, as before
	for i, tool := range t.req.Tools {
		byName[tool.Name] = i
	}
	calls := t.calls.Calls()
	groupID := calls[0].UpstreamGroupID
	args := make([]string, len(calls))
	for i, c := range calls {
		args[i] = c.Arguments()
		if _, ok := byName[c.Name]; !ok || c.UpstreamID == "" {
			return nil, errs.Newf(errs.UpstreamUnverifiedEventShape, "tool call %d names no advertised tool", i)
		}
		if c.Synthetic {
			// The upstream sent no id for this call; a continuation could never
			// name it, so the ids must not be shown as continuable.
			return nil, errs.Newf(errs.UpstreamUnverifiedEventShape, "tool call %d has no upstream id", i)
		}
		if c.UpstreamGroupID != groupID {
			return nil, errs.Newf(errs.UpstreamUnverifiedEventShape, "tool calls of one turn name different groups")
		}
		v, err := canon.ParseJSON([]byte(args[i]))
		if _, isObject := v.(map[string]canon.Value); err != nil || !isObject {
			return nil, errs.Newf(errs.UpstreamMalformedEvent, "tool call %d arguments are not a JSON object", i)
		}
		// The upstream saw only the lowered schema, so that is the contract its
		// arguments must meet. Arguments that break it were produced by the
		// upstream, not the client: an upstream fault, never shown as a call.
		var ae *toolschema.ArgumentsError
		if err := lowered[byName[c.Name]].Validate(args[i]); errors.As(err, &ae) {
			ae.Call = i
			return nil, errs.Wrap(ae, errs.UpstreamMalformedEvent)
		} else if err != nil {
			return nil, errs.Wrap(err, errs.UpstreamMalformedEvent)
		}
	}
	toolsHash, err := t.tools.toolsBinding(t.req)
	if err != nil {
		return nil, err
	}
	schemaHash := func(name string) (string, error) { i := byName[name]; return schemaHashes[i], hashErrs[i] }
	now := g.clock.Now()
	res, err := g.store.Reserve(ctx, t.calls.Len(), now)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		grp, deltas, err := t.buildGroup(groupID, args, schemaHash, toolsHash, now)
		if err == nil {
			err = g.store.Admit(ctx, res, grp)
		}
		if err == nil {
			g.log.DebugContext(ctx, "tool group admitted", "calls", t.calls.Len(), "principal_slot", t.p.Slot)
			return deltas, nil
		}
		if !errors.Is(err, correlation.ErrDuplicatePublicID) || attempt >= 3 {
			_ = g.store.Release(context.WithoutCancel(ctx), res)
			return nil, err
		}
	}
}

func (t *turn) buildGroup(groupID string, args []string, schemaHash func(name string) (string, error), toolsHash string, now time.Time) (correlation.Group, []Delta, error) {
	g := t.g
	key, err := g.ids.Token()
	if err != nil {
		return correlation.Group{}, nil, err
	}
	grp := correlation.Group{
		Key: key, PrincipalID: t.p.ID, WorkspaceID: g.cfg.WorkspaceID, Model: t.req.Model,
		ConversationID: t.convID, UpstreamGroupID: groupID, State: correlation.Pending,
		IssuedAt: now, PendingExpiresAt: now.Add(g.cfg.Policy.PendingTTL), ToolsHash: toolsHash,
	}
	assistant := chat.Message{Role: chat.RoleAssistant}
	if t.text.Len() > 0 {
		s := t.text.String()
		assistant.Content = &s
	}
	var deltas []Delta
	for i, c := range t.calls.Calls() {
		id, err := g.ids.PublicToolCallID()
		if err != nil {
			return correlation.Group{}, nil, err
		}
		id = publicCallID(t.req.API, id)
		sh, err := schemaHash(c.Name)
		if err != nil {
			return correlation.Group{}, nil, err
		}
		ah, err := canon.ArgumentsHash(c.Name, args[i], sh)
		if err != nil {
			return correlation.Group{}, nil, err
		}
		grp.Calls = append(grp.Calls, correlation.Call{PublicID: id, UpstreamID: c.UpstreamID, UpstreamGroupID: c.UpstreamGroupID,
			Index: i, OriginalName: c.Name, ArgumentsJSON: args[i], ArgumentsHash: ah, SchemaHash: sh})
		assistant.ToolCalls = append(assistant.ToolCalls, chat.ToolCall{ID: id, Name: c.Name, Arguments: args[i]})
		frags := c.Fragments
		if len(frags) == 0 {
			frags = []string{""}
		}
		for j, f := range frags {
			d := &ToolCallDelta{Index: i, Arguments: f}
			if j == 0 {
				d.ID, d.Name = id, c.Name
			}
			deltas = append(deltas, Delta{ToolCall: d})
		}
	}
	// The issued arguments are bound as they are; a continuation may echo
	// them re-serialized (canon, "Echoed arguments").
	var th string
	if t.echo != nil {
		th, err = t.echo.TranscriptHashOf(t.req.Messages, assistant)
	} else {
		th, err = canon.TranscriptHashV2(append(append([]chat.Message(nil), t.req.Messages...), assistant), nil, nil)
	}
	if err != nil {
		return correlation.Group{}, nil, err
	}
	grp.TranscriptHash, grp.TranscriptLength = th, len(t.req.Messages)+1
	return grp, deltas, nil
}
