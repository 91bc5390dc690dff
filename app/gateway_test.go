package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	crdberrors "github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/internal/testkit"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func str(s string) *string { return &s }

var policy = correlation.Policy{PendingTTL: 15 * time.Minute, InflightTTL: 150 * time.Second, TerminalTTL: 15 * time.Minute}

type rig struct {
	gw    *app.Gateway
	up    *porttest.Upstream
	store *memstore.Store
	clock *porttest.Clock
}

func newRig(t *testing.T, respond func(ports.UpstreamRequest) porttest.Script, limits ...correlation.Limits) *rig {
	t.Helper()
	l := correlation.Limits{MaxGroups: 100, MaxCalls: 400, ResponseCacheBytes: 1 << 20}
	if len(limits) > 0 {
		l = limits[0]
	}
	r := &rig{up: &porttest.Upstream{Respond: respond}, store: memstore.New(l, policy), clock: porttest.NewClock(porttest.T0)}
	r.gw = app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy}, r.up, r.store, r.clock, &porttest.IDs{},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	return r
}

var principal = app.Principal{Slot: "default", ID: "principal-1"}

var tools = []chat.Tool{
	{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`), UpstreamParameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
	{Name: "get_time", Parameters: []byte(`{"type":"object"}`), UpstreamParameters: []byte(`{"type":"object"}`)},
}

func request(msgs ...chat.Message) chat.Request {
	return chat.Request{Model: "m", Messages: msgs, Tools: tools, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto}, ParallelToolCalls: true}
}

// drain reads a turn to its end.
func drain(t *testing.T, turn app.Turn) ([]app.Delta, error) {
	t.Helper()
	return testkit.Drain(context.Background(), turn)
}

// echo builds the client's next request: the history, the assistant turn as
// the client assembled it from the deltas, and one result per tool call.
var echo = testkit.Echo

func toolLoop(rounds int) func(ports.UpstreamRequest) porttest.Script {
	n := 0
	return func(req ports.UpstreamRequest) porttest.Script {
		n++
		if n <= rounds {
			return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp-"+string(rune('a'+n)), "get_weather", "get_time")}
		}
		return porttest.Script{Events: porttest.Text("conv-1", "all ", "done")}
	}
}

func TestATextTurnStreamsTextAndFinishesWithStop(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		evs := porttest.Text("c", "Hel", "lo")
		evs = append(evs, chat.Event{Kind: chat.EventUsage, Usage: &chat.Usage{TotalTokens: ptr(int64(7))}})
		return porttest.Script{Events: evs}
	})
	turn, err := r.gw.Chat(t.Context(), principal, chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: str("hi")}}}, nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	is.Equal(len(ds), 3)                         // two text deltas and the final one
	is.Equal(ds[0].Text+ds[1].Text, "Hello")     // text streams through
	is.Equal(ds[2].Finish, app.FinishStop)       // a proven end finishes with stop
	is.Equal(*ds[2].Usage.TotalTokens, int64(7)) // upstream token counts are reported
}

func ptr[T any](v T) *T { return &v }

func TestAnUnprovenEndIsAnErrorWithoutFinish(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.Text("c", "partial"), End: errs.New(errs.UpstreamCompletionAmbiguous)}
	})
	turn, err := r.gw.Chat(t.Context(), principal, chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: str("hi")}}}, nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.True(errs.Has(err, errs.UpstreamCompletionAmbiguous)) // the stream's stable code
	for _, d := range ds {
		is.Equal(d.Finish, app.FinishReason("")) // and no finish was shown
	}
}

func TestAToolTurnAdmitsAPendingGroupBeforeShowingIDs(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(1))
	turn, err := r.gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("go")}), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	last := ds[len(ds)-1]
	is.Equal(last.Finish, app.FinishToolCalls) // the turn asks for tools
	var ids []string
	args := map[int]string{}
	for _, d := range ds {
		if d.ToolCall != nil {
			if d.ToolCall.ID != "" {
				ids = append(ids, d.ToolCall.ID)
			}
			args[d.ToolCall.Index] += d.ToolCall.Arguments
		}
	}
	is.Equal(len(ids), 2)                           // both calls get public ids
	is.True(strings.HasPrefix(ids[0], "call_pmn_")) // of the public form
	is.True(!strings.Contains(ids[0], "up-"))       // never the upstream id
	is.Equal(args[0], `{"q":"v0"}`)                 // argument strings are byte-identical
	c, _ := r.store.Counts(t.Context())
	is.Equal(c.ByState[correlation.Pending], 1) // one pending group holds them
}

func TestTheToolLoopRunsToTheFinalAnswerWithOneDispatchPerRound(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(2))
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, err := r.gw.Chat(t.Context(), principal, request(history...), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	for round := 1; ; round++ {
		history = echo(history, ds, "r")
		turn, err = r.gw.Chat(t.Context(), principal, request(history...), nil)
		is.NoErr(err) // each continuation is accepted
		ds, err = drain(t, turn)
		is.NoErr(err)
		if ds[len(ds)-1].Finish == app.FinishStop {
			is.Equal(round, 2) // two tool rounds, then the answer
			break
		}
		history = history[:len(history)]
	}
	is.Equal(r.up.Continuations(), 2) // exactly one TOOL_RESPONSE per round
	c, _ := r.store.Counts(t.Context())
	is.Equal(c.ByState[correlation.Consumed], 2) // both groups consumed
	is.Equal(c.ByState[correlation.Pending], 0)  // nothing left pending
	last := r.up.Requests()[2].Continuation
	is.Equal(last.ConversationID, "conv-1")                // the stored conversation
	is.Equal(last.Results[0].UpstreamCallID, "up-grp-c-0") // private ids, in call order
	is.Equal(last.Results[1].Content, "r:get_time")        // with the client's results
}

func TestAReplayedContinuationReturnsTheCachedAnswerWithoutDispatch(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(1))
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, _ := r.gw.Chat(t.Context(), principal, request(history...), nil)
	ds, _ := drain(t, turn)
	cont := request(echo(history, ds, "r")...)
	turn, err := r.gw.Chat(t.Context(), principal, cont, nil)
	is.NoErr(err)
	first, err := drain(t, turn)
	is.NoErr(err)
	turn, err = r.gw.Chat(t.Context(), principal, cont, nil)
	is.NoErr(err)
	again, err := drain(t, turn)
	is.NoErr(err)
	is.Equal(again, first)            // the replay is the same answer
	is.Equal(r.up.Continuations(), 1) // and nothing was sent again
}

func TestAmbiguousFailureAfterDispatchIsUncertainAndNeverResent(t *testing.T) {
	is := is.New(t)
	n := 0
	r := newRig(t, func(req ports.UpstreamRequest) porttest.Script {
		n++
		if req.Continuation == nil {
			return porttest.Script{Events: porttest.ToolCalls("conv-1", "g", "get_weather")}
		}
		return porttest.Script{Events: porttest.Text("conv-1", "half"), End: errs.New(errs.UpstreamConnectionLost)}
	})
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, _ := r.gw.Chat(t.Context(), principal, request(history...), nil)
	ds, _ := drain(t, turn)
	cont := request(echo(history, ds, "r")...)
	turn, err := r.gw.Chat(t.Context(), principal, cont, nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.Equal(errs.CodeOf(err), errs.ContinuationOutcomeUncertain) // reported as uncertain
	_, err = r.gw.Chat(t.Context(), principal, cont, nil)
	is.Equal(errs.CodeOf(err), errs.ContinuationOutcomeUncertain) // a retry is refused
	is.Equal(r.up.Continuations(), 1)                             // and never re-sent
}

// The loop-approval gate on a continuation is its own outcome: the results
// were accepted (the group is CONSUMED, never UNCERTAIN), the turn ends with
// the gate's code, the same results sent again are never dispatched, and the
// next user message is an ordinary fresh turn.
func TestALoopApprovalGateConsumesTheGroupAndIsReportedAsItself(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(req ports.UpstreamRequest) porttest.Script {
		if req.Continuation == nil {
			if len(req.Chat.Messages) > 2 {
				return porttest.Script{Events: porttest.Text("conv-1", "going on")}
			}
			return porttest.Script{Events: porttest.ToolCalls("conv-1", "g", "get_weather")}
		}
		return porttest.Script{End: errs.New(errs.UpstreamLoopApproval)}
	})
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, _ := r.gw.Chat(t.Context(), principal, request(history...), nil)
	ds, _ := drain(t, turn)
	msgs := echo(history, ds, "r")
	cont := request(msgs...)
	turn, err := r.gw.Chat(t.Context(), principal, cont, nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.Equal(errs.CodeOf(err), errs.UpstreamLoopApproval) // the gate's own code, not continuation_outcome_uncertain
	is.True(app.Gated(err))                               // which the app reports as the gate
	c, _ := r.store.Counts(t.Context())
	is.Equal(c.ByState[correlation.Consumed], 1)  // the results were delivered: consumed
	is.Equal(c.ByState[correlation.Uncertain], 0) // never "outcome unknown"
	_, err = r.gw.Chat(t.Context(), principal, cont, nil)
	is.Equal(errs.CodeOf(err), errs.UpstreamLoopApproval) // the same results again get the gate's answer again
	is.Equal(r.up.Continuations(), 1)                     // and are never sent again
	next := request(append(msgs, chat.Message{Role: chat.RoleUser, Content: str("continue")})...)
	turn, err = r.gw.Chat(t.Context(), principal, next, nil)
	is.NoErr(err)
	ds, err = drain(t, turn)
	is.NoErr(err)                    // the next user message goes on
	is.Equal(ds[0].Text, "going on") // as a fresh turn
}

// A continuation that provably never ran upstream (nothing was sent, or the
// upstream refused it before accepting it) returns the group to PENDING: the
// client sees the error and may retry, and the retry claims and completes.
func TestAContinuationThatNeverRanReturnsTheGroupToPending(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		code errs.Code
	}{
		{"proven not sent", errors.Join(errs.New(errs.UpstreamUnavailable), ports.ErrNotSent), errs.UpstreamUnavailable},
		{"refused by the upstream", errors.Join(errs.New(errs.UpstreamRateLimited), ports.ErrNotAccepted), errs.UpstreamRateLimited},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			fail := true
			r := newRig(t, func(req ports.UpstreamRequest) porttest.Script {
				if req.Continuation == nil {
					return porttest.Script{Events: porttest.ToolCalls("conv-1", "g", "get_weather")}
				}
				if fail {
					fail = false
					return porttest.Script{Err: c.err}
				}
				return porttest.Script{Events: porttest.Text("conv-1", "ok")}
			})
			history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
			turn, _ := r.gw.Chat(t.Context(), principal, request(history...), nil)
			ds, _ := drain(t, turn)
			cont := request(echo(history, ds, "r")...)
			_, err := r.gw.Chat(t.Context(), principal, cont, nil)
			is.True(errs.Has(err, c.code)) // the client learns what happened
			turn, err = r.gw.Chat(t.Context(), principal, cont, nil)
			is.NoErr(err) // so a retry may claim again: the group went back to PENDING
			ds, err = drain(t, turn)
			is.NoErr(err)
			is.Equal(ds[len(ds)-1].Finish, app.FinishStop) // and completes
		})
	}
}

func TestRoomThatVanishesDuringTheStreamRefusesTheToolTurnWithoutShowingIDs(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(5), correlation.Limits{MaxGroups: 1, MaxCalls: 4})
	first, err := r.gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("a")}), nil)
	is.NoErr(err)
	second, err := r.gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("b")}), nil)
	is.NoErr(err) // both were sent while the store had room
	_, err = drain(t, first)
	is.NoErr(err) // the first takes the last place
	ds, err := drain(t, second)
	is.True(errs.Has(err, errs.CorrelationCapacityExceeded)) // the second group cannot be held
	for _, d := range ds {
		is.True(d.ToolCall == nil) // and no id was shown
	}
}

func TestAFullStoreRefusesAToolTurnBeforeSendingIt(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(5), correlation.Limits{MaxGroups: 1, MaxCalls: 4})
	turn, err := r.gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("a")}), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err) // the store is now full of one pending group
	sent := len(r.up.Requests())
	for range 20 {
		_, err = r.gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("b")}), nil)
		is.Equal(errs.CodeOf(err), errs.CorrelationCapacityExceeded) // 503 at once
	}
	is.Equal(len(r.up.Requests()), sent) // and not one upstream query was spent on them
	none := request(chat.Message{Role: chat.RoleUser, Content: str("c")})
	none.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceNone}
	_, err = r.gw.Chat(t.Context(), principal, none, nil)
	is.NoErr(err) // tool_choice none cannot open a group: not refused
	plain := request(chat.Message{Role: chat.RoleUser, Content: str("d")})
	plain.Tools = nil
	_, err = r.gw.Chat(t.Context(), principal, plain, nil)
	is.NoErr(err) // nor a request without tools
	r.clock.Advance(policy.PendingTTL)
	_, err = r.gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("e")}), nil)
	is.NoErr(err) // once the pending group expired there is room again
}

func TestUnknownAndForeignIDsAreTheSame404(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(1))
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, _ := r.gw.Chat(t.Context(), principal, request(history...), nil)
	ds, _ := drain(t, turn)
	cont := request(echo(history, ds, "r")...)
	_, err := r.gw.Chat(t.Context(), app.Principal{Slot: "other", ID: "principal-2"}, cont, nil)
	is.Equal(errs.CodeOf(err), errs.UnknownToolCall) // another principal sees nothing
	forged := request(append(history, chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_pmn_forged", Name: "get_weather", Arguments: "{}"}}},
		chat.Message{Role: chat.RoleTool, ToolCallID: "call_pmn_forged", Content: str("x")})...)
	_, err = r.gw.Chat(t.Context(), principal, forged, nil)
	is.Equal(errs.CodeOf(err), errs.UnknownToolCall) // a forged id is the same 404
	is.Equal(r.up.Continuations(), 0)                // and nothing was sent
}

func TestToolsWithoutCorrelationAreRefusedBeforeSending(t *testing.T) {
	is := is.New(t)
	up := &porttest.Upstream{Respond: toolLoop(1)}
	gw := app.New(app.Config{WorkspaceID: "ws", Correlation: false, Policy: policy}, up, nil, porttest.NewClock(porttest.T0), &porttest.IDs{},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err := gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("go")}), nil)
	is.Equal(errs.CodeOf(err), errs.UnsupportedParameter) // refused
	is.Equal(len(up.Requests()), 0)                       // before any upstream request
}

func TestToolResultsWithoutCorrelationAreRefusedBeforeSending(t *testing.T) {
	is := is.New(t)
	up := &porttest.Upstream{Respond: toolLoop(1)}
	gw := app.New(app.Config{WorkspaceID: "ws", Correlation: false, Policy: policy}, up, nil, porttest.NewClock(porttest.T0), &porttest.IDs{},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	cont := request(chat.Message{Role: chat.RoleUser, Content: str("go")},
		chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: "{}"}}},
		chat.Message{Role: chat.RoleTool, ToolCallID: "call_1", Content: str("sunny")})
	_, err := gw.Chat(t.Context(), principal, cont, nil)
	is.Equal(errs.CodeOf(err), errs.UnsupportedToolResultContinuation) // the continuation is refused, though tools are declared too
	is.True(crdberrors.Is(err, app.ErrContinuationNeedsCorrelation))   // marked for the ingress to name its field
	is.Equal(len(up.Requests()), 0)                                    // before any upstream request
}

// A continuation stream that does not repeat the conversation id (one public
// project's fixtures) still opens the next tool group: the turn starts with
// the group's stored conversation id, and the second round is sent to it.
func TestAContinuationStreamWithoutConversationIDKeepsTheStoredOne(t *testing.T) {
	is := is.New(t)
	n := 0
	r := newRig(t, func(req ports.UpstreamRequest) porttest.Script {
		n++
		switch {
		case n == 1:
			return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp-a", "get_weather")}
		case n == 2:
			return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp-b", "get_weather")[1:]} // no conversation event
		}
		return porttest.Script{Events: porttest.Text("conv-1", "done")[1:]}
	})
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, err := r.gw.Chat(t.Context(), principal, request(history...), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	for range 2 {
		history = echo(history, ds, "r")
		turn, err = r.gw.Chat(t.Context(), principal, request(history...), nil)
		is.NoErr(err) // the continuation is accepted
		ds, err = drain(t, turn)
		is.NoErr(err) // and its tool group admitted although the stream named no conversation
	}
	is.Equal(ds[len(ds)-1].Finish, app.FinishStop)
	reqs := r.up.Requests()
	is.Equal(len(reqs), 3)
	is.Equal(reqs[2].Continuation.ConversationID, "conv-1") // the second round is sent to the stored conversation
}
