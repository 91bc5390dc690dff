package app_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// newResumeRig is newConvRig with CONVERSATION_RESUME set as given, whose
// fake upstream refuses a fresh query of more than limit messages as too long
// (nothing sent), and breaks a stream after text while broken is set.
func newResumeRig(t *testing.T, resume bool, limit int, broken *bool) *convRig {
	t.Helper()
	n := 0
	respond := func(req ports.UpstreamRequest) porttest.Script {
		if req.ConversationID == "" && len(req.Chat.Messages) > limit {
			return porttest.Script{Err: errors.Mark(errs.New(errs.UpstreamQueryTooLong), ports.ErrNotSent)}
		}
		conv := req.ConversationID
		if conv == "" {
			n++
			conv = "conv-" + string(rune('0'+n))
		}
		if *broken {
			return porttest.Script{Events: porttest.Text(conv, "par"), End: errs.New(errs.UpstreamConnectionLost)}
		}
		last := req.Chat.Messages[len(req.Chat.Messages)-1]
		return porttest.Script{Events: porttest.Text(conv, "answer to ", *last.Content)}
	}
	return withResume(newConvRig(t, respond), resume)
}

// withResume rebuilds r's gateway with CONVERSATION_RESUME set as given.
func withResume(r *convRig, resume bool) *convRig {
	r.gw = app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy, Resume: resume}, r.up, r.store, r.clock, &porttest.IDs{},
		slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))).WithAnchors(r.anchors, anchorPolicy)
	return r
}

// After a continued turn broke, the next request on the same history resumes
// the conversation only when its whole transcript does not fit a fresh query
// (A24), disclosed; with CONVERSATION_RESUME off it is refused as too long.
func TestAResumableConversationGoesOnOnlyWhenTheTranscriptDoesNotFit(t *testing.T) {
	for _, resume := range []bool{true, false} {
		t.Run(map[bool]string{true: "resume on", false: "resume off"}[resume], func(t *testing.T) {
			is := is.New(t)
			broken := false
			r := newResumeRig(t, resume, 2, &broken)
			a := r.turn(t, textRequest(user("one")))
			broken = true
			turn, err := r.gw.Chat(t.Context(), principal, textRequest(user("one"), assistant(a), user("two")), nil)
			is.NoErr(err) // continued (A01) …
			_, err = drain(t, turn)
			is.True(err != nil) // … and broken after it was sent
			broken = false
			sent := len(r.up.Requests())

			retry := textRequest(user("one"), assistant(a), user("two, again"))
			turn, err = r.gw.Chat(t.Context(), principal, retry, nil)
			if !resume {
				is.True(errs.Has(err, errs.UpstreamQueryTooLong)) // refused, as before
				is.Equal(len(r.up.Requests()), sent+1)            // the fresh attempt only, never sent
				return
			}
			is.NoErr(err)
			is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedAfterFailure)
			ds, err := drain(t, turn)
			is.NoErr(err)
			is.True(len(ds) > 0)
			last := r.last()
			is.Equal(last.ConversationID, "conv-1") // the conversation that holds the history
			is.Equal(len(last.Chat.Messages), 1)    // with only the new message
			is.Equal(*last.Chat.Messages[0].Content, "two, again")
			is.True(strings.Contains(r.logs.String(), `"row":"A24"`))

			b := "answer to two, again"
			r.turn(t, textRequest(user("one"), assistant(a), user("two, again"), assistant(b), user("three")))
			is.Equal(r.last().ConversationID, "conv-1") // the resumed answer is anchored and continued exactly
			is.Equal(len(r.last().Chat.Messages), 1)

			// An earlier point of the conversation that moved on (A27): the
			// first anchor is ADVANCED; a request that returns to it resumes it.
			turn, err = r.gw.Chat(t.Context(), principal, textRequest(user("one"), assistant(a), user("a different second question")), nil)
			is.NoErr(err)
			is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedFromEarlierPoint)
			_, err = drain(t, turn)
			is.NoErr(err)
			is.Equal(r.last().ConversationID, "conv-1")
		})
	}
}

// A short transcript after a failure starts fresh: the upstream then holds
// exactly the client's history, and nothing is disclosed.
func TestAFittingTranscriptAfterAFailureStartsFresh(t *testing.T) {
	is := is.New(t)
	broken := false
	r := newResumeRig(t, true, 10, &broken)
	a := r.turn(t, textRequest(user("one")))
	broken = true
	turn, err := r.gw.Chat(t.Context(), principal, textRequest(user("one"), assistant(a), user("two")), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.True(err != nil)
	broken = false
	turn, err = r.gw.Chat(t.Context(), principal, textRequest(user("one"), assistant(a), user("two")), nil)
	is.NoErr(err)
	is.Equal(turn.(app.Disclosed).Disclosure(), "")
	_, err = drain(t, turn)
	is.NoErr(err)
	is.Equal(r.last().ConversationID, "") // fresh
	is.Equal(r.freshReasons(), []string{"no_anchor", "after_failure"})
}

// After a tool round broke once its results were sent (the group is
// UNCERTAIN), the results are history: the user's next message, after them
// (chat completions) or after them in the same message (Anthropic Messages,
// Trailing), goes up alone in the group's conversation when the whole
// transcript does not fit (C30), and the results are never sent again.
func TestAfterABrokenToolRoundTheNextMessageGoesOn(t *testing.T) {
	for _, form := range []string{"user message", "text after the results"} {
		t.Run(form, func(t *testing.T) {
			is := is.New(t)
			n, continuations := 0, 0
			r := newConvRig(t, func(req ports.UpstreamRequest) porttest.Script {
				n++
				switch {
				case n == 1:
					return porttest.Script{Events: porttest.ToolCalls("conv-t", "grp-1", "get_weather")}
				case req.Continuation != nil:
					continuations++
					return porttest.Script{Events: porttest.Text("conv-t", "par"), End: errs.New(errs.UpstreamConnectionLost)}
				case req.ConversationID == "":
					return porttest.Script{Err: errors.Mark(errs.New(errs.UpstreamQueryTooLong), ports.ErrNotSent)}
				default:
					return porttest.Script{Events: porttest.Text(req.ConversationID, "going on")}
				}
			})
			withResume(r, true)
			first := request(user("weather?"))
			turn, err := r.gw.Chat(t.Context(), principal, first, nil)
			is.NoErr(err)
			ds, err := drain(t, turn)
			is.NoErr(err)
			withResults := echo(first.Messages, ds, "sunny")
			turn, err = r.gw.Chat(t.Context(), principal, request(withResults...), nil)
			is.NoErr(err)
			_, err = drain(t, turn)
			is.True(err != nil) // the round broke after its results were sent
			is.Equal(continuations, 1)

			var next []chat.Message
			if form == "user message" {
				next = append(append([]chat.Message(nil), withResults...), user("please go on"))
			} else {
				next = append([]chat.Message(nil), withResults...)
				last := next[len(next)-1]
				joined := *last.Content + "\n\n" + "please go on"
				last.Content, last.Trailing = &joined, "please go on"
				next[len(next)-1] = last
			}
			turn, err = r.gw.Chat(t.Context(), principal, request(next...), nil)
			is.NoErr(err)
			is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedAfterFailure)
			text, err := drain(t, turn)
			is.NoErr(err)
			is.True(len(text) > 0)
			is.Equal(continuations, 1) // never sent again
			last := r.last()
			is.Equal(last.ConversationID, "conv-t")
			is.Equal(len(last.Chat.Messages), 1)
			is.Equal(*last.Chat.Messages[0].Content, "please go on")
			is.True(strings.Contains(r.logs.String(), `"row":"C30"`))
		})
	}
}

// An agent's compaction request — a new system prompt, no tools, the whole
// history and a summary instruction — whose transcript does not fit a fresh
// query continues the conversation that holds the history (A37), sending the
// new system prompt with the instruction, disclosed; the anchor is then
// ADVANCED, so it happens once. A fitting one starts fresh
// (instructions_changed), and a changed model never continues.
func TestACompactionTooLongToStartFreshContinuesTheConversation(t *testing.T) {
	is := is.New(t)
	broken := false
	r := newResumeRig(t, true, 4, &broken)
	sys := chat.Message{Role: chat.RoleSystem, Content: str("you are a coding agent")}
	first := textRequest(sys, user("one"))
	first.Tools = tools
	a := r.turn(t, first)
	summarize := chat.Message{Role: chat.RoleSystem, Content: str("summarize the conversation")}

	fits := textRequest(summarize, user("one"), assistant(a), user("summarize it"))
	r.turn(t, fits)
	is.Equal(r.last().ConversationID, "") // it fits: fresh, the upstream holds exactly the transcript
	is.Equal(r.freshReasons(), []string{"no_anchor", "instructions_changed"})

	long := textRequest(summarize, user("one"), assistant(a), user("more"), user("summarize it"))
	other := long
	other.Model = "other"
	_, err := r.gw.Chat(t.Context(), principal, other, nil)
	is.True(errs.Has(err, errs.UpstreamQueryTooLong)) // another model never continues

	turn, err := r.gw.Chat(t.Context(), principal, long, nil)
	is.NoErr(err)
	is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedChangedInstructions)
	_, err = drain(t, turn)
	is.NoErr(err)
	last := r.last()
	is.Equal(last.ConversationID, "conv-1") // the conversation that holds the history
	is.Equal(len(last.Chat.Messages), 3)    // the new system prompt and the two new messages
	is.Equal(last.Chat.Messages[0].Role, chat.RoleSystem)
	is.Equal(*last.Chat.Messages[0].Content, "summarize the conversation")
	is.Equal(last.Instructions, 1)
	is.Equal(len(last.Chat.Tools), 0) // no tools: the request offered none
	is.True(strings.Contains(r.logs.String(), `"row":"A37"`))
	is.True(strings.Contains(r.logs.String(), `"disclosure":"continued-with-changed-instructions"`))

	// Sent again (a retry): the anchor moved on (ADVANCED), so it goes on from
	// that earlier point (A27), disclosed as such, with the new instructions.
	turn, err = r.gw.Chat(t.Context(), principal, long, nil)
	is.NoErr(err)
	is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedFromEarlierPoint)
	_, err = drain(t, turn)
	is.NoErr(err)
	is.Equal(r.last().ConversationID, "conv-1")
	is.Equal(r.last().Instructions, 1)
}

// Codex compacts in the middle of a tool round: its request carries the
// results the group still waits for, then its compaction prompt, and no
// tools, and is too long to start fresh. The group's one TOOL_RESPONSE
// carries the results with the prompt after them (folded, as Anthropic
// Messages text after tool results is), with no tools, disclosed; the results
// are never sent again, and a fitting request starts fresh instead.
func TestACompactionInTheMiddleOfAToolRoundAnswersTheGroupOnce(t *testing.T) {
	is := is.New(t)
	n, fresh := 0, 0
	var sent []ports.UpstreamRequest
	r := newConvRig(t, func(req ports.UpstreamRequest) porttest.Script {
		n++
		sent = append(sent, req)
		switch {
		case n == 1:
			return porttest.Script{Events: porttest.ToolCalls("conv-t", "grp-1", "get_weather")}
		case req.Continuation != nil:
			return porttest.Script{Events: porttest.Text("conv-t", "the summary")}
		case req.ConversationID != "":
			return porttest.Script{Events: porttest.Text(req.ConversationID, "the summary again")}
		default:
			fresh++
			return porttest.Script{Err: errors.Mark(errs.New(errs.UpstreamQueryTooLong), ports.ErrNotSent)}
		}
	})
	withResume(r, true)
	first := request(user("weather?"))
	turn, err := r.gw.Chat(t.Context(), principal, first, nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	compaction := request(append(echo(first.Messages, ds, "sunny"), user("CHECKPOINT: summarize"))...)
	compaction.Tools = nil

	turn, err = r.gw.Chat(t.Context(), principal, compaction, nil)
	is.NoErr(err)
	is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedChangedInstructions) // the group was issued with tools
	text, err := drain(t, turn)
	is.NoErr(err)
	is.True(strings.Contains(fmt.Sprint(text), "the summary"))
	last := sent[len(sent)-1]
	is.True(last.Continuation != nil) // the group's TOOL_RESPONSE …
	is.Equal(len(last.Continuation.Results), 1)
	is.True(strings.HasSuffix(last.Continuation.Results[0].Content, "\n\nCHECKPOINT: summarize")) // … with the prompt after the result
	is.Equal(len(last.Chat.Tools), 0)                                                             // and no tools
	is.Equal(fresh, 1)                                                                            // the fresh attempt, refused before sending

	// Sent again: the results are history now (C29): only the prompt goes up,
	// as a user turn of the conversation, never a second TOOL_RESPONSE.
	turn, err = r.gw.Chat(t.Context(), principal, compaction, nil)
	is.NoErr(err)
	is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedFromEarlierPoint)
	is.Equal(*sent[len(sent)-1].Chat.Messages[0].Content, "CHECKPOINT: summarize")
	continuations := 0
	for _, s := range sent {
		if s.Continuation != nil {
			continuations++
		}
	}
	is.Equal(continuations, 1)
}

// A client that keeps a failed turn's prompt in its history (Codex) sends it
// again before its next prompt. The conversation may hold it already (the
// failed turn sent it), so a resume sends only the new prompt; a retry of the
// failed prompt alone, or a failure that provably sent nothing, still sends
// everything the request adds.
func TestAResumeDoesNotSendTheFailedTurnsPromptAgain(t *testing.T) {
	is := is.New(t)
	broken := false
	r := newResumeRig(t, true, 2, &broken)
	a := r.turn(t, textRequest(user("one")))
	broken = true
	turn, err := r.gw.Chat(t.Context(), principal, textRequest(user("one"), assistant(a), user("two")), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.True(err != nil) // sent, then broken: RESUMABLE
	broken = false

	turn, err = r.gw.Chat(t.Context(), principal, textRequest(user("one"), assistant(a), user("two"), user("three")), nil)
	is.NoErr(err)
	is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedAfterFailure)
	_, err = drain(t, turn)
	is.NoErr(err)
	last := r.last()
	is.Equal(last.ConversationID, "conv-1")
	is.Equal(len(last.Chat.Messages), 1) // only the new prompt
	is.Equal(*last.Chat.Messages[0].Content, "three")
	is.Equal(last.HistoryMessages, 3) // the failed prompt counts as history

	b := newResumeRig(t, true, 2, &broken)
	a = b.turn(t, textRequest(user("one")))
	broken = true
	turn, err = b.gw.Chat(t.Context(), principal, textRequest(user("one"), assistant(a), user("two")), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.True(err != nil)
	broken = false
	turn, err = b.gw.Chat(t.Context(), principal, textRequest(user("one"), assistant(a), user("two")), nil) // the failed prompt retried alone
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err)
	is.Equal(len(b.last().Chat.Messages), 1)
	is.Equal(*b.last().Chat.Messages[0].Content, "two") // sent again: the user asked again
}

// Claude Code compacts in the middle of a tool loop, then sends the pending
// call's result after its summary: the transcript before the call is no
// longer the one it was issued in. Too long to start fresh, the result goes
// up once as the group's TOOL_RESPONSE in the conversation that holds the
// whole history, disclosed continued-with-earlier-history. A call echoed
// otherwise than issued is still refused.
func TestAPendingResultSentAfterACompactionAnswersItsCallOnce(t *testing.T) {
	is := is.New(t)
	n := 0
	var sent []ports.UpstreamRequest
	r := newConvRig(t, func(req ports.UpstreamRequest) porttest.Script {
		n++
		sent = append(sent, req)
		switch {
		case n == 1:
			return porttest.Script{Events: porttest.ToolCalls("conv-t", "grp-1", "get_weather")}
		case req.Continuation != nil:
			return porttest.Script{Events: porttest.Text("conv-t", "done")}
		default:
			return porttest.Script{Err: errors.Mark(errs.New(errs.UpstreamQueryTooLong), ports.ErrNotSent)}
		}
	})
	withResume(r, true)
	first := request(user("a long story"), assistant("a long answer"), user("weather?"))
	turn, err := r.gw.Chat(t.Context(), principal, first, nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	whole := echo(first.Messages, ds, "sunny")
	edited := append([]chat.Message(nil), whole...)
	call := edited[3]
	call.ToolCalls = append([]chat.ToolCall(nil), call.ToolCalls...)
	call.ToolCalls[0].Arguments = `{"city":"elsewhere"}`
	edited[3] = call // the call itself echoed otherwise: still refused
	edited[0] = user("an edited story")
	_, err = r.gw.Chat(t.Context(), principal, request(edited...), nil)
	is.Equal(errs.CodeOf(err), errs.ContinuationHistoryMismatch)
	// Compacted: a summary in place of the history, then the pending call.
	compacted := append([]chat.Message{user("This session is being continued from a previous conversation. Summary: …")}, whole[3:]...)
	last := compacted[len(compacted)-1]
	joined := *last.Content + "\n\nkeep going"
	last.Content, last.Trailing = &joined, "keep going"
	compacted[len(compacted)-1] = last

	turn, err = r.gw.Chat(t.Context(), principal, request(compacted...), nil)
	is.NoErr(err)
	is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedEarlierHistory)
	_, err = drain(t, turn)
	is.NoErr(err)
	got := sent[len(sent)-1]
	is.True(got.Continuation != nil) // the pending call's one TOOL_RESPONSE
	is.True(strings.HasPrefix(got.Continuation.Results[0].Content, "sunny"))
	is.True(strings.HasSuffix(got.Continuation.Results[0].Content, "\n\nkeep going"))
	continuations := 0
	for _, s := range sent {
		if s.Continuation != nil {
			continuations++
		}
	}
	is.Equal(continuations, 1)
}

// Claude Code compacts in the middle of a tool loop: its summary request cuts
// the transcript before the round still pending and, too long to start
// fresh, goes up in the conversation (C29); then it sends the pending round's
// result after its summary. That compacted transcript fits a fresh
// conversation, so it starts one — the call and its result as text, exactly
// the client's transcript — rather than a tool response in a conversation
// that went on past the call; the same request again goes the same way, and
// the call is never answered with a TOOL_RESPONSE.
func TestAFittingCompactedTranscriptWithAPendingResultStartsFresh(t *testing.T) {
	is := is.New(t)
	var sent []ports.UpstreamRequest
	continued := map[string]int{}
	r := newConvRig(t, func(req ports.UpstreamRequest) porttest.Script {
		sent = append(sent, req)
		switch {
		case len(sent) == 1:
			return porttest.Script{Events: porttest.ToolCalls("conv-t", "grp-1", "get_weather")}
		case req.Continuation != nil:
			continued[req.Continuation.UpstreamGroupID]++
			if req.Continuation.UpstreamGroupID == "grp-1" {
				return porttest.Script{Events: porttest.ToolCalls("conv-t", "grp-2", "get_weather")}
			}
			return porttest.Script{Events: porttest.Text("conv-t", "too late")}
		case req.ConversationID != "":
			return porttest.Script{Events: porttest.Text(req.ConversationID, "the summary")}
		case len(req.Chat.Messages) > 3:
			return porttest.Script{Err: errors.Mark(errs.New(errs.UpstreamQueryTooLong), ports.ErrNotSent)}
		default:
			return porttest.Script{Events: porttest.Text("conv-new", "the weather, from the summary")}
		}
	})
	withResume(r, true)
	first := request(user("a long story"), assistant("a long answer"), user("weather?"))
	turn, err := r.gw.Chat(t.Context(), principal, first, nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	round1 := echo(first.Messages, ds, "sunny")
	turn, err = r.gw.Chat(t.Context(), principal, request(round1...), nil)
	is.NoErr(err)
	ds, err = drain(t, turn)
	is.NoErr(err) // the second round's call: pending
	round2 := echo(round1, ds, "rainy")

	withPrompt := func(msgs []chat.Message, text string) []chat.Message {
		out := append([]chat.Message(nil), msgs...)
		last := out[len(out)-1]
		joined := *last.Content + "\n\n" + text
		last.Content, last.Trailing = &joined, text
		out[len(out)-1] = last
		return out
	}
	turn, err = r.gw.Chat(t.Context(), principal, request(withPrompt(round1, "CRITICAL: Respond with TEXT ONLY. Summarize.")...), nil)
	is.NoErr(err)
	is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedFromEarlierPoint) // C29: in the conversation
	_, err = drain(t, turn)
	is.NoErr(err)
	is.Equal(sent[len(sent)-1].ConversationID, "conv-t")

	compacted := append([]chat.Message{user("This session is being continued from a previous conversation. Summary: the summary")},
		withPrompt(round2[len(round1):], "keep going")...)
	for range 2 { // and again: a retry goes the same way
		turn, err = r.gw.Chat(t.Context(), principal, request(compacted...), nil)
		is.NoErr(err)
		is.Equal(turn.(app.Disclosed).Disclosure(), "") // the upstream holds exactly the transcript
		text, err := drain(t, turn)
		is.NoErr(err)
		is.True(strings.Contains(fmt.Sprint(text), "the weather, from the summary"))
		last := sent[len(sent)-1]
		is.True(last.Continuation == nil) // never a TOOL_RESPONSE …
		is.Equal(last.ConversationID, "") // … but a fresh conversation …
		is.Equal(len(last.Chat.Messages), 3)
		is.Equal(last.Chat.Messages[2].Role, chat.RoleTool) // … with the result as text
		is.True(strings.HasPrefix(*last.Chat.Messages[2].Content, "rainy"))
	}
	is.Equal(continued, map[string]int{"grp-1": 1}) // each round's results dispatched once; the compacted one as text
	is.True(strings.Contains(r.logs.String(), `"reason":"compacted_before_results"`))
}
