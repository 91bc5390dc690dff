package app_test

import (
	"context"
	"strings"
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
	turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, chat.Message{Role: chat.RoleUser, Content: str("weather")}), nil)
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
			turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, chat.Message{Role: chat.RoleUser, Content: str("weather")}), nil)
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
	turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, user), nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.True(errs.Has(err, errs.UpstreamOutputInvalid))
	// The client retries its turn: a fresh query with the whole transcript,
	// since nothing was anchored for an answer it never saw.
	turn, err = r.gw.Chat(context.Background(), principal, structuredRequest(t, user), nil)
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
	turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, chat.Message{Role: chat.RoleUser, Content: str("weather")}), nil)
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
	turn, err := r.gw.Chat(context.Background(), principal, structuredRequest(t, history...), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	next := echo(history, ds, "sunny")
	var answers []string
	for range 2 { // the continuation, then its replay
		turn, err = r.gw.Chat(context.Background(), principal, structuredRequest(t, next...), nil)
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

// requestWith is a request of format f, or of plain text when schema is "".
func requestWith(t *testing.T, schema string, msgs ...chat.Message) chat.Request {
	t.Helper()
	req := request(msgs...)
	if schema == "" {
		return req
	}
	f, err := structured.Prepare(structured.Spec{Kind: chat.OutputJSONSchema, Name: "w", SchemaPath: "s", Schema: []byte(schema)})
	if err != nil {
		t.Fatal(err)
	}
	req.Output = f
	return req
}

const (
	citySchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	tempSchema = `{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}`
)

// TestAReplayIsHeldToTheReplaysFormat: the cached answer of a consumed group
// was produced under the format of the request that dispatched the results;
// a replay with another format gets it only when it passes that format, as
// exactly its JSON text, and is otherwise refused (never shown, never
// dispatched again).
func TestAReplayIsHeldToTheReplaysFormat(t *testing.T) {
	for _, c := range []struct {
		name, answer, first, replay string
		want                        string // "" for a refusal
	}{
		{"prose cached under text, replayed for json_schema", "It is sunny in Oslo.", "", citySchema, ""},
		{"another schema's answer", `{"city":"Oslo"}`, citySchema, tempSchema, ""},
		{"JSON cached under text, valid for the replay's schema", " {\"city\":\"Oslo\"}\n", "", citySchema, `{"city":"Oslo"}`},
		{"the same schema", `{"city":"Oslo"}`, citySchema, citySchema, `{"city":"Oslo"}`},
		{"a structured answer replayed as text", `{"city":"Oslo"}`, citySchema, "", `{"city":"Oslo"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			n := 0
			r := newRig(t, func(req ports.UpstreamRequest) porttest.Script {
				n++
				if n == 1 {
					return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp-a", "get_weather")}
				}
				return porttest.Script{Events: porttest.Text("conv-1", c.answer[:len(c.answer)/2], c.answer[len(c.answer)/2:])}
			})
			history := []chat.Message{{Role: chat.RoleUser, Content: str("weather")}}
			turn, err := r.gw.Chat(context.Background(), principal, requestWith(t, c.first, history...), nil)
			is.NoErr(err)
			ds, err := drain(t, turn)
			is.NoErr(err)
			next := echo(history, ds, "sunny")
			turn, err = r.gw.Chat(context.Background(), principal, requestWith(t, c.first, next...), nil)
			is.NoErr(err)
			_, err = drain(t, turn)
			is.NoErr(err) // the continuation, answered under its own format

			turn, err = r.gw.Chat(context.Background(), principal, requestWith(t, c.replay, next...), nil)
			if err == nil {
				ds, err = drain(t, turn)
			}
			is.Equal(len(r.up.Requests()), 2) // the replay is never dispatched
			if c.want == "" {
				is.True(errs.Has(err, errs.UpstreamOutputInvalid)) // refused, not released
				return
			}
			is.NoErr(err)
			var texts []string
			for _, d := range ds {
				if d.Text != "" {
					texts = append(texts, d.Text)
				}
			}
			is.Equal(texts, []string{c.want})              // exactly the JSON text, in one delta
			is.Equal(ds[len(ds)-1].Finish, app.FinishStop) // the finish kept
		})
	}
}

// TestAStructuredAnswerIsAnchoredAsTheJSONTextTheClientSaw: the upstream
// wrote white space around the value; the client saw, and echoes, the JSON
// text alone, so the anchor records that text and the next turn (a
// transcript over the query budget) continues the upstream conversation.
func TestAStructuredAnswerIsAnchoredAsTheJSONTextTheClientSaw(t *testing.T) {
	is := is.New(t)
	r := newConvRig(t, func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.Text("conv-1", "\n {\"city\":", "\"Oslo\"} \n")}
	})
	sys := chat.Message{Role: chat.RoleSystem, Content: str(strings.Repeat("be helpful. ", 600))}
	history := []chat.Message{sys, user("weather")}
	a := r.turn(t, structuredRequest(t, history...))
	is.Equal(a, `{"city":"Oslo"}`) // what the client saw
	history = append(history, assistant(a), user("and tomorrow?"))
	r.turn(t, structuredRequest(t, history...))
	is.Equal(r.last().ConversationID, "conv-1") // continued: the anchor holds what the client echoed
	is.Equal(len(r.last().Chat.Messages), 1)    // with only the new message
}
