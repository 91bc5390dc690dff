package app_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// issue runs one tool turn of p on history and returns the client's echo of
// it: the history, the assistant's calls, and (with answer) their results.
func issue(t *testing.T, r *rig, p app.Principal, history []chat.Message, answer bool) []chat.Message {
	t.Helper()
	turn, err := r.gw.Chat(t.Context(), p, request(history...), nil)
	if err != nil {
		t.Fatalf("tool turn: %v", err)
	}
	ds, err := drain(t, turn)
	if err != nil {
		t.Fatalf("tool turn: %v", err)
	}
	msgs := echo(history, ds, "sunny")
	if !answer {
		msgs = msgs[:len(history)+1]
	}
	return msgs
}

func TestAConversationThatMovedPastItsCallsCancelsTheirGroup(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp", "get_weather")}
	}, correlation.Limits{MaxGroups: 10, MaxCalls: 40, MaxGroupsPerKey: 1})
	q := []chat.Message{{Role: chat.RoleUser, Content: str("weather?")}}
	shown := issue(t, r, principal, q, false) // one pending group: the key's whole share
	c, _ := r.store.Counts(t.Context())
	is.Equal(c.LiveGroups, 1) // pending
	moved := append(shown, chat.Message{Role: chat.RoleUser, Content: str("never mind")})
	issue(t, r, principal, moved, false) // admitted: the group it moved past was cancelled first
	c, _ = r.store.Counts(t.Context())
	is.Equal(c.ByState[correlation.Cancelled], 1) // the old group
	is.Equal(c.LiveGroups, 1)                     // the new one
	// A turn that moves past nothing finds the key at its share.
	_, err := r.gw.Chat(t.Context(), principal, request(q...), nil)
	var share *correlation.ShareExceeded
	is.True(errors.As(err, &share))   // refused by the key's share of one group
	is.Equal(len(r.up.Requests()), 2) // before it was sent
}

func TestAContinuationOrAnotherKeyNeverCancelsAGroup(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp", "get_weather", "get_time")}
	})
	q := []chat.Message{{Role: chat.RoleUser, Content: str("weather and time?")}}
	full := issue(t, r, principal, q, true)
	// Another key sends the same history with new user text: its lookup is
	// by its own principal, so the group stays PENDING.
	other := app.Principal{Slot: "other", ID: "principal-2"}
	shown := full[:len(q)+1]
	issue(t, r, other, append(append([]chat.Message(nil), shown...), chat.Message{Role: chat.RoleUser, Content: str("mine")}), false)
	c, _ := r.store.Counts(t.Context())
	is.Equal(c.ByState[correlation.Cancelled], 0) // another key's request touches nothing of this key
	// An incomplete continuation (one of the two results) is refused by its
	// own rule and leaves the group PENDING.
	_, err := r.gw.Chat(t.Context(), principal, request(full[:len(full)-1]...), nil)
	is.True(errs.Has(err, errs.ToolResultIncomplete)) // the continuation's own answer
	c, _ = r.store.Counts(t.Context())
	is.Equal(c.ByState[correlation.Cancelled], 0) // nothing cancelled
	is.Equal(c.ByState[correlation.Pending], 2)   // both groups still pending
	// The complete continuation is dispatched.
	turn, err := r.gw.Chat(t.Context(), principal, request(full...), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err)
	c, _ = r.store.Counts(t.Context())
	is.Equal(c.ByState[correlation.Cancelled], 0) // a continuation cancels nothing
}
