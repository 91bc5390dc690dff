package correlation_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

// withTrailing returns s with text after its results, as an Anthropic
// Messages user turn with text after its tool_result blocks decodes: the text
// ends the last result's content, after a blank line, and is named Trailing.
func withTrailing(s correlation.Submission, text string) correlation.Submission {
	c := s.Continuation
	c.Results = append([]correlation.Result(nil), c.Results...)
	last := &c.Results[len(c.Results)-1]
	last.Content += "\n\n" + text
	c.Trailing = text
	s.Continuation = c
	return s
}

// claimed returns the fixture's group after sub claimed it, in state st.
func claimed(t *testing.T, f fixture, sub correlation.Submission, st correlation.State) correlation.Group {
	t.Helper()
	is := is.New(t)
	g := f.group.Clone()
	d, err := g.Submit(t0.Add(time.Minute), policy, sub, "attempt-1")
	is.NoErr(err)
	is.Equal(d.Effect, correlation.EffectDispatch)
	switch st {
	case correlation.Consumed:
		_, err = g.Complete(t0.Add(2*time.Minute), policy, nil, "")
	case correlation.Uncertain:
		_, err = g.Ambiguous(t0.Add(2*time.Minute), policy)
	}
	is.NoErr(err)
	is.Equal(g.State, st)
	return g
}

// The accepted results followed by new user content are history and a new
// turn (C29, C30), whether the new content is text after the results in the
// same message or user messages after them; the same results alone stay a
// retry (C18, C22) and other results a conflict (C19), with or without text.
func TestAcceptedResultsFollowedByNewContentAreHistory(t *testing.T) {
	f := newFixture(t, "g1", "p1", "call_pmn_a", "call_pmn_b")
	plain := f.submission("r1", "r2")
	reminded := withTrailing(plain, "<system-reminder>be careful</system-reminder>")
	prompt := withTrailing(plain, "<system-reminder>be careful</system-reminder>\n\nNow fix the bug.")
	added := plain
	added.Continuation.Added = []chat.Message{{Role: chat.RoleUser, Content: str("Now fix the bug.")}}
	other := withTrailing(f.submission("r1", "r2 changed"), "Now fix the bug.")
	// An agent's compaction request after the round: the same history and
	// results, no tools (Codex), then its summary instruction.
	compaction := added
	compaction.ToolsHash = "sha256:no-tools"
	retoolled := plain
	retoolled.ToolsHash = "sha256:no-tools"

	cases := []struct {
		name      string
		accepted  correlation.Submission
		state     correlation.State
		submitted correlation.Submission
		row       string
		effect    correlation.Effect
		code      errs.Code
	}{
		{"consumed, results then a prompt in the same message", plain, correlation.Consumed, prompt, "C29", correlation.EffectResume, ""},
		{"consumed, results then user messages", plain, correlation.Consumed, added, "C29", correlation.EffectResume, ""},
		{"consumed, accepted with a reminder, then another text", reminded, correlation.Consumed, prompt, "C29", correlation.EffectResume, ""},
		{"consumed, the same results and reminder again: a retry", reminded, correlation.Consumed, reminded, "C18", correlation.EffectReplay, errs.ToolCallAlreadyConsumed},
		{"consumed, other results with a prompt: a conflict", plain, correlation.Consumed, other, "C19", correlation.EffectReject, errs.ContinuationConflict},
		{"uncertain, results then a prompt", plain, correlation.Uncertain, prompt, "C30", correlation.EffectResume, ""},
		{"uncertain, results then user messages", reminded, correlation.Uncertain, added, "C30", correlation.EffectResume, ""},
		{"uncertain, the same results alone: still uncertain", plain, correlation.Uncertain, plain, "C22", correlation.EffectReject, errs.ContinuationOutcomeUncertain},
		{"uncertain, other results with a prompt: still uncertain", plain, correlation.Uncertain, other, "C22", correlation.EffectReject, errs.ContinuationOutcomeUncertain},
		{"inflight, results then a prompt: wait", plain, correlation.Inflight, prompt, "C31", correlation.EffectReject, errs.ContinuationInflight},
		{"consumed, a compaction request without the tools", plain, correlation.Consumed, compaction, "C29", correlation.EffectResume, ""},
		{"uncertain, a compaction request without the tools", plain, correlation.Uncertain, compaction, "C30", correlation.EffectResume, ""},
		{"consumed, the same results alone with other tools: a conflict", plain, correlation.Consumed, retoolled, "C19", correlation.EffectReject, errs.ContinuationConflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			g := claimed(t, f, c.accepted, c.state)
			before := g.Clone()
			d, err := g.Submit(t0.Add(3*time.Minute), policy, c.submitted, "attempt-2")
			is.NoErr(err)
			record(t.Name(), d)
			is.Equal(d.Row, c.row)
			is.Equal(d.Effect, c.effect)
			is.Equal(d.Code, c.code)
			is.Equal(g.State, before.State)                             // nothing changes
			is.Equal(g.AcceptedResultsHash, before.AcceptedResultsHash) // the accepted results stay the ones dispatched
		})
	}
}

// A pending group's results with text after them are one submission, as
// before: the text goes up with the last result, in the one dispatch.
func TestAPendingGroupTakesTheTextAfterItsResults(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	g := f.group.Clone()
	d, err := g.Submit(t0.Add(time.Minute), policy, withTrailing(f.submission("r1"), "Now fix the bug."), "attempt-1")
	is.NoErr(err)
	is.Equal(d.Row, "C01")
}

// HistoryMessages gives the results as first sent, then the new user turn.
func TestHistoryMessagesSplitTheTextAfterTheResults(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a", "call_pmn_b")
	sub := withTrailing(f.submission("r1", "r2"), "Now fix the bug.")
	hist, added := sub.Continuation.HistoryMessages()
	is.Equal(len(hist), len(f.prefix)+2)
	is.Equal(*hist[len(hist)-1].Content, "r2")
	is.Equal(hist[len(hist)-1].ToolCallID, "call_pmn_b")
	is.Equal(len(added), 1)
	is.Equal(added[0].Role, chat.RoleUser)
	is.Equal(*added[0].Content, "Now fix the bug.")
	is.Equal(correlation.PureResultsHash(sub.Continuation), correlation.ResultsHash(f.submission("r1", "r2").Continuation))
}

func TestSplitHistory(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	msgs := append([]chat.Message(nil), f.prefix...)
	msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: "call_pmn_a", Content: str("r1")},
		chat.Message{Role: chat.RoleUser, Content: str("next")})
	c, ok := correlation.SplitHistory(msgs)
	is.True(ok)
	is.Equal(len(c.Prefix), len(f.prefix))
	is.Equal(len(c.Results), 1)
	is.Equal(len(c.Added), 1)
	is.True(c.NewTurn())
	_, ok = correlation.SplitHistory(msgs[:len(msgs)-1]) // ends in a result: a continuation
	is.True(!ok)
	_, ok = correlation.SplitHistory(f.prefix[:2]) // no results before the user message
	is.True(!ok)

	// Claude Code's environment update: a system message after the new turn.
	env := chat.Message{Role: chat.RoleSystem, Content: str("# Environment update\n - Is a git repository: true (was false)")}
	c, ok = correlation.SplitHistory(append(append([]chat.Message(nil), msgs...), env))
	is.True(ok)
	is.Equal(len(c.Results), 1)
	is.Equal(len(c.Added), 2) // the prompt and the update are the new turn
	merged := append(append([]chat.Message(nil), f.prefix...),
		chat.Message{Role: chat.RoleTool, ToolCallID: "call_pmn_a", Content: str("r1\n\nnext"), Trailing: "next"}, env)
	c, ok = correlation.SplitHistory(merged)
	is.True(ok) // the prompt after the results in their message, then the update
	is.Equal(c.Trailing, "next")
	_, added := c.HistoryMessages()
	is.Equal(len(added), 2)
	is.Equal(*added[0].Content, "next")
	_, ok = correlation.SplitHistory(append(append([]chat.Message(nil), msgs[:len(msgs)-1]...), env))
	is.True(!ok) // results and a system message: no new user content
}

// Fold puts a new user turn after the results into the last result, as
// Messages text after tool results is: a PENDING group then takes both in its
// one dispatch, and only such a folded submission may change the tools; the
// folded results, sent again with the same turn, are history (C29).
func TestAFoldedUserTurnGoesUpWithThePendingGroupsResults(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a", "call_pmn_b")
	sub := f.submission("r1", "r2")
	sub.Continuation.Added = []chat.Message{{Role: chat.RoleUser, Content: str("first")}, {Role: chat.RoleUser, Content: str("summarize")}}
	sub.ToolsHash = "sha256:no-tools"

	unfolded := f.group.Clone()
	d, err := unfolded.Submit(t0.Add(time.Minute), policy, sub, "attempt-0")
	is.NoErr(err)
	is.Equal(d.Code, errs.ContinuationToolsMismatch) // not folded: the tools must match

	folded := sub
	folded.Continuation = sub.Continuation.Fold()
	is.Equal(folded.Continuation.Results[1].Content, "r2\n\nfirst\n\nsummarize")
	is.Equal(folded.Continuation.Results[0].Content, "r1") // only the last result takes the turn
	is.Equal(folded.Continuation.Trailing, "first\n\nsummarize")
	is.Equal(len(folded.Continuation.Added), 0)
	is.Equal(sub.Continuation.Results[1].Content, "r2") // the original is untouched
	g := f.group.Clone()
	d, err = g.Submit(t0.Add(time.Minute), policy, folded, "attempt-1")
	is.NoErr(err)
	is.Equal(d.Effect, correlation.EffectDispatch)
	_, err = g.Complete(t0.Add(2*time.Minute), policy, nil, "")
	is.NoErr(err)
	d, err = g.Resume(t0.Add(3*time.Minute), policy, sub) // the same results and turn again
	is.NoErr(err)
	is.Equal(d.Row, "C29")

	messages := withTrailing(f.submission("r1", "r2"), "reminder") // text after the results already
	messages.Continuation.Added = []chat.Message{{Role: chat.RoleUser, Content: str("summarize")}}
	c := messages.Continuation.Fold()
	is.Equal(c.Results[1].Content, "r2\n\nreminder\n\nsummarize")
	is.Equal(c.Trailing, "reminder\n\nsummarize")
}

// A pending group's results after a changed (compacted) transcript are
// accepted when the caller says so (EarlierHistory), but only with the calls
// echoed as issued.
func TestCompactedHistoryStillNeedsTheIssuedCalls(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	sub := f.submission("r1")
	prefix := sub.Continuation.Prefix
	is.True(len(prefix) >= 2)
	compacted := sub
	compacted.Echo = nil
	compacted.Continuation.Prefix = append([]chat.Message{{Role: chat.RoleUser, Content: str("summary")}}, prefix[len(prefix)-1])
	compacted.EarlierHistory = true
	is.Equal(correlation.CheckHistory(f.group, compacted), correlation.Event("")) // compacted, calls as issued
	is.True(!correlation.SameHistory(f.group, compacted))                         // and disclosed as another history
	changed := compacted
	last := prefix[len(prefix)-1]
	last.ToolCalls = append([]chat.ToolCall(nil), last.ToolCalls...)
	last.ToolCalls[0].Arguments = `{"changed":true}`
	changed.Continuation.Prefix = append([]chat.Message{{Role: chat.RoleUser, Content: str("summary")}}, last)
	is.Equal(correlation.CheckHistory(f.group, changed), correlation.SubmitHistoryMismatch) // the calls must be the issued ones
	strict := compacted
	strict.EarlierHistory = false
	is.Equal(correlation.CheckHistory(f.group, strict), correlation.SubmitHistoryMismatch) // unless the caller says so
}
