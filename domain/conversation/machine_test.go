package conversation_test

import (
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/conversation"
)

// model is the hand-written reference of the anchor machine, written from the
// issue's description and deliberately not derived from the rows.
func model(s conversation.State, e conversation.Event) (conversation.State, conversation.Effect, conversation.Reason, bool) {
	c := conversation.Continue
	switch s {
	case conversation.Active:
		switch e {
		case c:
			return conversation.Claimed, conversation.EffectContinue, "", true
		case conversation.ModelMismatch:
			return s, conversation.EffectFresh, conversation.ReasonModelChanged, true
		case conversation.ToolsMismatch:
			return s, conversation.EffectFresh, conversation.ReasonToolsChanged, true
		case conversation.WorkspaceMismatch:
			return s, conversation.EffectFresh, conversation.ReasonWorkspaceChanged, true
		case conversation.InstructionsMismatch: // a changed system prompt is a setting, like the tools
			return s, conversation.EffectFresh, conversation.ReasonInstructionsChanged, true
		case conversation.ContinueChanged: // a compaction too long to start fresh
			return conversation.Claimed, conversation.EffectContinue, "", true
		case conversation.Deadline:
			return conversation.Expired, conversation.EffectTransition, "", true
		case conversation.Drop:
			return conversation.Removed, conversation.EffectTransition, "", true
		}
	case conversation.Claimed:
		switch e {
		case conversation.Lookup:
			return s, conversation.EffectFresh, conversation.ReasonRaced, true
		case conversation.Complete:
			return conversation.Advanced, conversation.EffectTransition, "", true
		case conversation.NotSent:
			return conversation.Active, conversation.EffectTransition, "", true
		case conversation.Ambiguous, conversation.Deadline:
			return conversation.Resumable, conversation.EffectTransition, "", true
		case conversation.Lost: // the service forgot it: nothing can continue it
			return conversation.Retired, conversation.EffectTransition, "", true
		case conversation.Drop:
			return s, conversation.EffectKeep, "", true
		}
	case conversation.Resuming: // a claim on a conversation that holds more than the history
		switch e {
		case conversation.Lookup:
			return s, conversation.EffectFresh, conversation.ReasonRaced, true
		case conversation.Complete:
			return conversation.Advanced, conversation.EffectTransition, "", true
		case conversation.NotSent, conversation.Ambiguous, conversation.Deadline:
			return conversation.Resumable, conversation.EffectTransition, "", true
		case conversation.Lost:
			return conversation.Retired, conversation.EffectTransition, "", true
		case conversation.Drop:
			return s, conversation.EffectKeep, "", true
		}
	case conversation.Resumable:
		switch e {
		case conversation.Lookup:
			return s, conversation.EffectFresh, conversation.ReasonAfterFailure, true
		case conversation.Resume:
			return conversation.Resuming, conversation.EffectContinue, "", true
		case conversation.TombstoneElapsed, conversation.Drop:
			return conversation.Removed, conversation.EffectTransition, "", true
		}
	case conversation.Advanced, conversation.Retired, conversation.Expired:
		if s == conversation.Advanced && e == conversation.Resume {
			return conversation.Resuming, conversation.EffectContinue, "", true
		}
		switch e {
		case conversation.Lookup:
			return s, conversation.EffectFresh, map[conversation.State]conversation.Reason{
				conversation.Advanced: conversation.ReasonAlreadyContinued, conversation.Retired: conversation.ReasonRetired,
				conversation.Expired: conversation.ReasonExpired}[s], true
		case conversation.TombstoneElapsed, conversation.Drop:
			return conversation.Removed, conversation.EffectTransition, "", true
		}
	case conversation.Removed:
		if e == conversation.Lookup {
			return s, conversation.EffectFresh, conversation.ReasonHistoryChanged, true
		}
	}
	return s, "", "", false
}

func TestEveryStateAndEventMatchesTheHandWrittenModel(t *testing.T) {
	declared := 0
	for _, s := range conversation.States {
		for _, e := range conversation.Events {
			t.Run(string(s)+"/"+string(e), func(t *testing.T) {
				is := is.New(t)
				a := anchor("p", "h", t0)
				a.State = s
				d, err := a.Fire(e, t0, policy)
				to, effect, reason, ok := model(s, e)
				if !ok {
					is.True(errors.Is(err, conversation.ErrIllegalTransition)) // undeclared pairs are illegal
					is.Equal(a.State, s)                                       // and change nothing
					return
				}
				declared++
				is.NoErr(err)
				is.Equal(d.To, to)         // next state as the model says
				is.Equal(a.State, to)      // held by the record
				is.Equal(d.Effect, effect) // effect as the model says
				is.Equal(d.Reason, reason) // and the reason of a fresh conversation
				record(t.Name(), d)
			})
		}
	}
	if declared != len(conversation.Table().Rows) {
		t.Fatalf("model declares %d pairs, table has %d rows", declared, len(conversation.Table().Rows))
	}
}

func TestTheTableIsWellFormed(t *testing.T) {
	is := is.New(t)
	is.NoErr(conversation.Table().Validate())
	is.True(conversation.Graph() != "") // stateless draws it
}

func TestAClaimIsWonOnceAndSettledOnlyByItsHolder(t *testing.T) {
	is := is.New(t)
	a := anchor("p", "h", t0)
	d, err := a.Claim(t0.Add(time.Minute), policy, req, "claim-1")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Effect, conversation.EffectContinue)                        // the first matching request continues
	is.Equal(a.ClaimID, "claim-1")                                         // under its claim id
	is.True(a.ClaimExpiresAt.Equal(t0.Add(time.Minute + policy.ClaimTTL))) // with a hard deadline
	d, err = a.Claim(t0.Add(time.Minute), policy, req, "claim-2")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Reason, conversation.ReasonRaced) // the second one starts fresh
	_, err = a.Settle(conversation.Complete, "claim-2", t0, policy)
	is.True(errors.Is(err, conversation.ErrStaleClaim)) // only the holder settles
	d, err = a.Settle(conversation.Complete, "claim-1", t0.Add(2*time.Minute), policy)
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(a.State, conversation.Advanced)                                       // completed
	is.True(a.TerminalExpiresAt.Equal(t0.Add(2*time.Minute + policy.TerminalTTL))) // tombstone TTL starts
	d, err = a.Claim(t0.Add(3*time.Minute), policy, req, "claim-3")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Reason, conversation.ReasonAlreadyContinued) // never continued twice
}

func TestALookupAppliesTimeFirst(t *testing.T) {
	is := is.New(t)
	a := anchor("p", "h", t0)
	d, err := a.Claim(a.ExpiresAt, policy, req, "c")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Via, "A05")                         // exactly at the TTL the anchor expires
	is.Equal(d.Reason, conversation.ReasonExpired) // and the request starts fresh

	b := anchor("p", "h", t0)
	_, err = b.Claim(t0, policy, req, "c")
	is.NoErr(err)
	d, err = b.Claim(b.ClaimExpiresAt, policy, req, "c2")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Via, "A11")                              // a claim past its deadline makes the anchor resumable
	is.Equal(d.Reason, conversation.ReasonAfterFailure) // which a transcript that fits starts fresh
	_, err = b.Settle(conversation.NotSent, "c", b.ClaimExpiresAt, policy)
	is.True(errors.Is(err, conversation.ErrIllegalTransition)) // and the old claim can never settle it
}

func TestAMismatchStartsFreshAndKeepsTheAnchor(t *testing.T) {
	is := is.New(t)
	for _, tc := range []struct {
		req    conversation.Request
		reason conversation.Reason
	}{
		{conversation.Request{WorkspaceID: "ws", Model: "other", ToolsHash: "tools"}, conversation.ReasonModelChanged},
		{conversation.Request{WorkspaceID: "ws", Model: "m", ToolsHash: "other"}, conversation.ReasonToolsChanged},
		{conversation.Request{WorkspaceID: "other", Model: "other", ToolsHash: "tools"}, conversation.ReasonWorkspaceChanged},
		{conversation.Request{WorkspaceID: "ws", Model: "m", ToolsHash: "other", InstructionsHash: "other"}, conversation.ReasonInstructionsChanged},
	} {
		a := anchor("p", "h", t0)
		d, err := a.Claim(t0, policy, tc.req, "c")
		is.NoErr(err)
		record(t.Name(), d)
		is.Equal(d.Reason, tc.reason)          // the reason names what changed
		is.Equal(a.State, conversation.Active) // and the anchor stays for the original settings
	}
}

func str(s string) *string { return &s }

func TestSplitFindsTheNewUserMessagesAfterAnAnswer(t *testing.T) {
	is := is.New(t)
	sys := chat.Message{Role: chat.RoleSystem, Content: str("be brief")}
	u1 := chat.Message{Role: chat.RoleUser, Content: str("hi")}
	a1 := conversation.Reply("hello")
	u2 := chat.Message{Role: chat.RoleUser, Content: str("more")}
	u3 := chat.Message{Role: chat.RoleUser, Content: str("and more")}

	h, added, ok := conversation.Split([]chat.Message{sys, u1, a1, u2, u3})
	is.True(ok)
	is.Equal(len(h), 3)     // the history ends with the answer
	is.Equal(len(added), 2) // every trailing user message is new

	env := chat.Message{Role: chat.RoleSystem, Content: str("# Environment update\n - Is a git repository: true (was false)")}
	h, added, ok = conversation.Split([]chat.Message{sys, u1, a1, u2, env})
	is.True(ok)
	is.Equal(len(h), 3)                      // a system message after the prompt is no history
	is.Equal(added, []chat.Message{u2, env}) // it belongs to the new turn (Claude Code's environment update)
	_, _, ok = conversation.Split([]chat.Message{sys, u1, a1, env})
	is.True(!ok) // a system message alone is no new user turn

	_, _, ok = conversation.Split([]chat.Message{sys, u1})
	is.True(!ok) // a first turn has nothing to continue
	_, _, ok = conversation.Split([]chat.Message{sys, u1, a1})
	is.True(!ok) // no new user message
	calls := chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "x", Name: "f", Arguments: "{}"}}}
	_, _, ok = conversation.Split([]chat.Message{u1, calls, u2})
	is.True(!ok) // tool calls the client never answered are no anchored answer
	tool := chat.Message{Role: chat.RoleTool, ToolCallID: "x", Content: str("r")}
	_, _, ok = conversation.Split([]chat.Message{u1, calls, tool, u2})
	is.True(!ok) // nor are tool results

	x, err := conversation.TranscriptHash([]chat.Message{sys, u1, a1})
	is.NoErr(err)
	y, err := conversation.TranscriptHash(h)
	is.NoErr(err)
	is.Equal(x, y) // the history hashes like the transcript the gateway anchored
}

func TestOnlyAnOutcomeSettlesAClaim(t *testing.T) {
	is := is.New(t)
	a := conversation.Anchor{State: conversation.Claimed, ClaimID: "c", ClaimExpiresAt: t0.Add(time.Hour)}
	_, err := a.Settle(conversation.Drop, "c", t0, policy)
	is.True(errors.Is(err, conversation.ErrIllegalTransition)) // Drop is not a settlement
	is.Equal(a.State, conversation.Claimed)                    // and changes nothing
	d, err := a.Settle(conversation.NotSent, "c", t0, policy)
	is.NoErr(err)
	is.Equal(d.Row, "A09") // the event the caller means is the row that fires
}

// A failed continuation leaves its anchor resumable: a later turn whose
// transcript does not fit claims it once (A24), settles it like a claim, and
// an ADVANCED anchor can be resumed from its earlier point (A27); a racing
// lookup meanwhile starts fresh, and only the holder settles.
func TestAFailedTurnLeavesItsConversationResumable(t *testing.T) {
	is := is.New(t)
	a := anchor("p", "h", t0)
	_, err := a.Claim(t0, policy, req, "c1")
	is.NoErr(err)
	d, err := a.Settle(conversation.Ambiguous, "c1", t0, policy)
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Row, "A10")
	is.Equal(a.State, conversation.Resumable)

	d, err = a.Resume(t0.Add(time.Second), policy, "c2", conversation.Sent{})
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Row, "A24")
	is.Equal(d.Effect, conversation.EffectContinue)
	d, err = a.Claim(t0.Add(time.Second), policy, req, "c3") // a racing lookup
	is.NoErr(err)
	is.Equal(d.Reason, conversation.ReasonRaced)
	_, err = a.Resume(t0.Add(time.Second), policy, "c4", conversation.Sent{}) // and a racing resume
	is.True(errors.Is(err, conversation.ErrIllegalTransition))
	_, err = a.Settle(conversation.Complete, "c3", t0.Add(time.Second), policy)
	is.True(errors.Is(err, conversation.ErrStaleClaim)) // only the holder settles
	d, err = a.Settle(conversation.NotSent, "c2", t0.Add(time.Second), policy)
	is.NoErr(err)
	is.Equal(d.Row, "A30")
	is.Equal(a.State, conversation.Resumable) // nothing was sent: resumable again

	_, err = a.Resume(t0.Add(2*time.Second), policy, "c5", conversation.Sent{})
	is.NoErr(err)
	d, err = a.Settle(conversation.Complete, "c5", t0.Add(2*time.Second), policy)
	is.NoErr(err)
	is.Equal(d.Row, "A29")
	is.Equal(a.State, conversation.Advanced)
	d, err = a.Resume(t0.Add(3*time.Second), policy, "c6", conversation.Sent{}) // an earlier point of a conversation that moved on
	is.NoErr(err)
	is.Equal(d.Row, "A27")
	is.Equal(a.State, conversation.Resuming)

	b := anchor("p", "h2", t0) // an ACTIVE anchor is continued, never resumed
	_, err = b.Resume(t0, policy, "c7", conversation.Sent{})
	is.True(errors.Is(err, conversation.ErrIllegalTransition))
	is.Equal(b.State, conversation.Active)
}

// An agent's compaction request (a new system prompt, no tools, the whole
// history) finds the anchor of its history; when its transcript is too long
// to start fresh it continues the conversation (A37) like a plain
// continuation, settled by the same rows; a changed model never does.
func TestACompactionTooLongToStartFreshContinuesTheConversation(t *testing.T) {
	is := is.New(t)
	compaction := conversation.Request{WorkspaceID: "ws", Model: "m", ToolsHash: "none", InstructionsHash: "summarize"}
	a := anchor("p", "h", t0)
	d, err := a.Claim(t0, policy, compaction, "c0")
	is.NoErr(err)
	is.Equal(d.Row, "A36") // a lookup alone starts fresh: the transcript may fit
	is.Equal(a.State, conversation.Active)

	_, err = a.ContinueChanged(t0, policy, req, "c1") // nothing changed: a plain Continue's business
	is.True(errors.Is(err, conversation.ErrIllegalTransition))
	other := compaction
	other.Model = "other"
	_, err = a.ContinueChanged(t0, policy, other, "c1") // another model never continues
	is.True(errors.Is(err, conversation.ErrIllegalTransition))
	is.Equal(a.State, conversation.Active)

	d, err = a.ContinueChanged(t0.Add(time.Second), policy, compaction, "c1")
	is.NoErr(err)
	record(t.Name(), d)
	is.Equal(d.Row, "A37")
	is.Equal(d.Effect, conversation.EffectContinue)
	is.Equal(a.ClaimID, "c1")
	d, err = a.Settle(conversation.Complete, "c1", t0.Add(2*time.Second), policy)
	is.NoErr(err)
	is.Equal(d.Row, "A08")
	is.Equal(a.State, conversation.Advanced)
	_, err = a.ContinueChanged(t0.Add(3*time.Second), policy, compaction, "c2") // only once
	is.True(errors.Is(err, conversation.ErrIllegalTransition))

	b := anchor("p", "h2", t0)
	b.InstructionsHash = "agent"
	_, err = b.ContinueChanged(t0.Add(policy.TTL), policy, compaction, "c3") // expired first
	is.True(errors.Is(err, conversation.ErrIllegalTransition))
}

// A conversation the service no longer knows is retired, from a claim and
// from a resume alike: a later lookup starts fresh and it is never resumed.
func TestALostConversationIsNeverResumed(t *testing.T) {
	is := is.New(t)
	for _, resumed := range []bool{false, true} {
		a := anchor("p", "h", t0)
		_, err := a.Claim(t0, policy, req, "c1")
		is.NoErr(err)
		claim := "c1"
		if resumed {
			_, err = a.Settle(conversation.Ambiguous, "c1", t0, policy)
			is.NoErr(err)
			_, err = a.Resume(t0, policy, "c2", conversation.Sent{})
			is.NoErr(err)
			claim = "c2"
		}
		d, err := a.Settle(conversation.Lost, claim, t0, policy)
		is.NoErr(err)
		record(t.Name(), d)
		is.Equal(a.State, conversation.Retired)
		_, err = a.Resume(t0, policy, "c3", conversation.Sent{})
		is.True(errors.Is(err, conversation.ErrIllegalTransition)) // never resumed
		d, err = a.Claim(t0, policy, req, "c4")
		is.NoErr(err)
		is.Equal(d.Reason, conversation.ReasonRetired) // a lookup starts fresh
	}
}

// What a failed claim sent is remembered when its outcome is unknown (A10,
// A31, A11/A32), never when nothing was sent (A30): Unsent then leaves out of
// a later request's new messages exactly the ones that claim sent, when more
// follow them.
func TestAResumableAnchorRemembersWhatItsFailedTurnSent(t *testing.T) {
	is := is.New(t)
	msg := func(s string) chat.Message { return chat.Message{Role: chat.RoleUser, Content: str(s)} }
	sentOf := func(ms ...chat.Message) conversation.Sent {
		s, err := conversation.SentOf(ms)
		is.NoErr(err)
		return s
	}
	a := anchor("p", "h", t0)
	r := req
	r.Sent = sentOf(msg("two"))
	_, err := a.Claim(t0, policy, r, "c1")
	is.NoErr(err)
	_, err = a.Settle(conversation.Ambiguous, "c1", t0, policy)
	is.NoErr(err)
	is.Equal(a.Sent, sentOf(msg("two")))
	is.Equal(len(a.Unsent([]chat.Message{msg("two"), msg("three")})), 1)              // the failed prompt left out
	is.Equal(len(a.Unsent([]chat.Message{msg("two")})), 1)                            // a retry alone still sends it
	is.Equal(len(a.Unsent([]chat.Message{msg("TWO"), msg("three")})), 2)              // an edited one is new
	is.Equal(len(a.Unsent([]chat.Message{msg("two"), msg("three"), msg("four")})), 2) // only the sent ones

	_, err = a.Resume(t0, policy, "c2", sentOf(msg("two"), msg("three")))
	is.NoErr(err)
	_, err = a.Settle(conversation.NotSent, "c2", t0, policy) // nothing sent: what the upstream may hold is unchanged
	is.NoErr(err)
	is.Equal(a.Sent, sentOf(msg("two")))
	_, err = a.Resume(t0, policy, "c3", sentOf(msg("two"), msg("three")))
	is.NoErr(err)
	_, err = a.Settle(conversation.Ambiguous, "c3", t0, policy)
	is.NoErr(err)
	is.Equal(a.Sent, sentOf(msg("two"), msg("three")))
	is.Equal(len(a.Unsent([]chat.Message{msg("two"), msg("three"), msg("four")})), 1)
}
