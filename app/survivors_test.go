package app_test

// Tests a mutation run showed missing: each plants the situation a user would
// notice and asserts what they would see.

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func TestResultsSentInAnotherOrderReachTheCallsTheyAnswer(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(1))
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, err := r.gw.Chat(t.Context(), principal, request(history...), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	msgs := echo(history, ds, "result")
	n := len(msgs)
	msgs[n-2], msgs[n-1] = msgs[n-1], msgs[n-2] // the get_time result first, then get_weather's
	turn, err = r.gw.Chat(t.Context(), principal, request(msgs...), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err)
	reqs := r.up.Requests()
	cont := reqs[len(reqs)-1].Continuation
	is.True(cont != nil)
	is.Equal(len(cont.Results), 2)
	byUpstream := map[string]string{}
	for _, res := range cont.Results {
		byUpstream[res.UpstreamCallID] = res.Content
	}
	is.Equal(byUpstream["up-grp-b-0"], "result:get_weather") // each content goes to the call it answers
	is.Equal(byUpstream["up-grp-b-1"], "result:get_time")
	is.Equal(cont.Results[0].OriginalName, "get_weather") // in the group's call order
}

// toolTurn answers the first request with the given tool-call events.
func scriptedToolTurn(evs []chat.Event) func(ports.UpstreamRequest) porttest.Script {
	return func(ports.UpstreamRequest) porttest.Script { return porttest.Script{Events: evs} }
}

func TestCallsOfOneTurnWithTwoUpstreamGroupsAreRefusedBeforeAnyID(t *testing.T) {
	is := is.New(t)
	evs := append(porttest.ToolCalls("conv-1", "grp-x", "get_weather"), porttest.ToolCalls("conv-1", "grp-y", "get_weather", "get_time")[3:]...)
	r := newRig(t, scriptedToolTurn(evs))
	turn, err := r.gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("go")}), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.Equal(errs.CodeOf(err), errs.UpstreamUnverifiedEventShape) // one turn, two groups: not continuable
	for _, d := range ds {
		is.True(d.ToolCall == nil) // no id was shown
	}
	c, _ := r.store.Counts(t.Context())
	is.Equal(c.LiveGroups, 0) // and nothing was admitted
}

func TestAToolCallWithoutAnUpstreamIDIsRefusedAtAdmission(t *testing.T) {
	for name, mark := range map[string]func(*chat.ToolCallDelta){
		"empty":     func(d *chat.ToolCallDelta) { d.UpstreamID = "" },
		"synthetic": func(d *chat.ToolCallDelta) { d.UpstreamID, d.Synthetic = "pmgate_internal_0", true },
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			evs := porttest.ToolCalls("conv-1", "grp-a", "get_weather", "get_time")
			for _, e := range evs {
				if e.ToolCall != nil && e.ToolCall.Index == 1 {
					mark(e.ToolCall)
				}
			}
			r := newRig(t, scriptedToolTurn(evs))
			turn, err := r.gw.Chat(t.Context(), principal, request(chat.Message{Role: chat.RoleUser, Content: str("go")}), nil)
			is.NoErr(err)
			ds, err := drain(t, turn)
			is.Equal(errs.CodeOf(err), errs.UpstreamUnverifiedEventShape) // refused
			for _, d := range ds {
				is.True(d.ToolCall == nil) // before any id is shown
			}
			c, _ := r.store.Counts(t.Context())
			is.Equal(c.LiveGroups, 0)
		})
	}
}

func TestAClientThatDisconnectsMidContinuationMakesTheGroupUncertainAtOnce(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(req ports.UpstreamRequest) porttest.Script {
		if req.Continuation == nil {
			return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp-a", "get_weather")}
		}
		return porttest.Script{Events: porttest.Text("conv-1", "partial ", "answer ", "more")}
	})
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, _ := r.gw.Chat(t.Context(), principal, request(history...), nil)
	ds, err := drain(t, turn)
	is.NoErr(err)
	cont := request(echo(history, ds, "r")...)
	turn, err = r.gw.Chat(t.Context(), principal, cont, nil)
	is.NoErr(err)
	d, err := turn.Next(t.Context())
	is.NoErr(err)
	is.True(strings.Contains(d.Text, "partial")) // the client saw part of the answer
	turn.Close()                                 // and went away (the ingress closes the turn on disconnect)
	_, err = r.gw.Chat(t.Context(), principal, cont, nil)
	is.Equal(errs.CodeOf(err), errs.ContinuationOutcomeUncertain) // a retry learns the outcome is unknown, not "in flight"
	is.Equal(r.up.Continuations(), 1)                             // and nothing is sent again
	_, err = r.gw.Chat(t.Context(), principal, cont, nil)
	is.Equal(errs.CodeOf(err), errs.ContinuationOutcomeUncertain) // on every retry
}
