package app_test

import (
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

// A pending call answered in the conversation of its earlier history (the
// transcript before it changed: a compaction, or Claude Code's cut-off nudge
// gone from the previous results' message) and then the same request again
// (a retry, the non-stream fallback): the recorded answer, disclosed as the
// dispatch was, never a second TOOL_RESPONSE and never
// continuation_conflict. Other results after it stay a conflict.
func TestTheSameRequestAfterAnEarlierHistoryAnswerGetsTheRecordedAnswer(t *testing.T) {
	is := is.New(t)
	var sent []ports.UpstreamRequest
	r := newConvRig(t, func(req ports.UpstreamRequest) porttest.Script {
		sent = append(sent, req)
		switch {
		case len(sent) == 1:
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
	changed := append([]chat.Message{user("This session is being continued from a previous conversation. Summary: …")}, whole[3:]...)

	turn, err = r.gw.Chat(t.Context(), principal, request(changed...), nil)
	is.NoErr(err)
	is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedEarlierHistory)
	_, err = drain(t, turn)
	is.NoErr(err)

	turn, err = r.gw.Chat(t.Context(), principal, request(changed...), nil)
	is.NoErr(err)                                                            // the same request again: not a conflict
	is.Equal(turn.(app.Disclosed).Disclosure(), app.DisclosedEarlierHistory) // disclosed as the answer was
	again, err := drain(t, turn)
	is.NoErr(err)
	var text strings.Builder
	for _, d := range again {
		text.WriteString(d.Text)
	}
	is.Equal(text.String(), "done") // the recorded answer

	other := append([]chat.Message(nil), changed...)
	last := other[len(other)-1]
	rain := "rain"
	last.Content = &rain
	other[len(other)-1] = last
	_, err = r.gw.Chat(t.Context(), principal, request(other...), nil)
	is.Equal(errs.CodeOf(err), errs.ContinuationConflict) // other results stay a conflict

	continuations := 0
	for _, s := range sent {
		if s.Continuation != nil {
			continuations++
		}
	}
	is.Equal(continuations, 1) // one TOOL_RESPONSE
}
