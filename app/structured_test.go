package app_test

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/structured"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// Structured output in the turn (docs/STRUCTURED-OUTPUT.md): the answer is
// held until the proven end and released once, as exactly its JSON text, only
// when structured.Check accepts it.

func structuredRequest(t *testing.T, msgs ...chat.Message) chat.Request {
	t.Helper()
	f, err := structured.Prepare(structured.Spec{Kind: chat.OutputJSONSchema, Name: "w", SchemaPath: "s",
		Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)})
	if err != nil {
		t.Fatal(err)
	}
	req := request(msgs...)
	req.Output = f
	return req
}

func TestAStructuredAnswerIsReleasedOnceAndWhole(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.Text("conv-1", " {\"ci", "ty\":", "\"Oslo\"}\n")}
	})
	turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, chat.Message{Role: chat.RoleUser, Content: str("weather")}))
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	is.Equal(len(ds), 2)
	is.Equal(ds[0].Text, `{"city":"Oslo"}`) // one delta, white space around the value removed
	is.Equal(ds[1].Finish, app.FinishStop)
}

func TestNothingOfAStructuredAnswerIsShownBeforeItsEndIsProven(t *testing.T) {
	for name, script := range map[string]porttest.Script{
		"an ambiguous end":    {Events: porttest.Text("conv-1", `{"city":`, `"Oslo"}`), End: errs.New(errs.UpstreamCompletionAmbiguous)},
		"an invalid answer":   {Events: porttest.Text("conv-1", `{"city":`, `42}`)},
		"a refusal":           {Events: porttest.Text("conv-1", "I can't ", "help with that.")},
		"a cut-short value":   {Events: porttest.Text("conv-1", `{"city":"Os`)},
		"an upstream failure": {Events: porttest.Text("conv-1", `{"city":"Oslo"}`), End: errs.New(errs.UpstreamFailure)},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			r := newRig(t, func(ports.UpstreamRequest) porttest.Script { return script })
			turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, chat.Message{Role: chat.RoleUser, Content: str("weather")}))
			is.NoErr(err)
			ds, err := drain(t, turn)
			is.True(err != nil)
			is.Equal(len(ds), 0) // not a byte of text before the error
		})
	}
}

func TestAnInvalidAnswerIsNotAnchored(t *testing.T) {
	is := is.New(t)
	answers := []string{`{"city":42}`, `{"city":"Oslo"}`}
	n := 0
	r := newRig(t, func(req ports.UpstreamRequest) porttest.Script {
		a := answers[n]
		n++
		return porttest.Script{Events: porttest.Text("conv-1", a)}
	})
	user := chat.Message{Role: chat.RoleUser, Content: str("weather")}
	turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, user))
	is.NoErr(err)
	_, err = drain(t, turn)
	is.True(errs.Has(err, errs.UpstreamOutputInvalid))
	// The client retries its turn: a fresh query with the whole transcript,
	// since nothing was anchored for an answer it never saw.
	turn, err = r.gw.Chat(context.Background(), principal, structuredRequest(t, user))
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	is.Equal(ds[0].Text, `{"city":"Oslo"}`)
	reqs := r.up.Requests()
	is.Equal(len(reqs), 2)
	is.Equal(reqs[1].ConversationID, "") // not a continuation of the failed answer's conversation
}

func TestWithToolCallsTheTextBeforeThemIsNotTheAnswer(t *testing.T) {
	is := is.New(t)
	r := newRig(t, func(ports.UpstreamRequest) porttest.Script {
		evs := append(porttest.Text("conv-1", "Let me look that up."), porttest.ToolCalls("conv-1", "grp-a", "get_weather")...)
		return porttest.Script{Events: evs}
	})
	turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, chat.Message{Role: chat.RoleUser, Content: str("weather")}))
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	is.Equal(ds[0].Text, "Let me look that up.") // released as it came, before the calls
	is.True(ds[1].ToolCall != nil)
	is.Equal(ds[len(ds)-1].Finish, app.FinishToolCalls)
}

func TestAStructuredContinuationIsReplayedWithItsValidatedAnswer(t *testing.T) {
	is := is.New(t)
	n := 0
	r := newRig(t, func(req ports.UpstreamRequest) porttest.Script {
		n++
		if n == 1 {
			return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp-a", "get_weather")}
		}
		return porttest.Script{Events: porttest.Text("conv-1", `{"city":`, `"Oslo"}`)}
	})
	history := []chat.Message{{Role: chat.RoleUser, Content: str("weather")}}
	turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, history...))
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	next := echo(history, ds, "sunny")
	var answers []string
	for range 2 { // the continuation, then its replay
		turn, err = r.gw.Chat(context.Background(), principal, structuredRequest(t, next...))
		is.NoErr(err)
		ds, err = drain(t, turn)
		is.NoErr(err)
		text := ""
		for _, d := range ds {
			text += d.Text
		}
		answers = append(answers, text)
	}
	is.Equal(answers, []string{`{"city":"Oslo"}`, `{"city":"Oslo"}`}) // the replay gets the same answer, once
	is.Equal(len(r.up.Requests()), 2)                                 // dispatched once
}
