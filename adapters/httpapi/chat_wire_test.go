package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"
)

// A member name given twice in one object, at any depth, is refused on the
// chat route too, with the path of the repeat written as chat writes paths
// (docs/API.md), before the model or any field is looked at; the request
// never reaches the service.
func TestChatRefusesARepeatedMemberNameWithItsPath(t *testing.T) {
	toolCall := `[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function",` +
		`"function":{"name":"f","name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]`
	for name, c := range map[string]struct{ body, param string }{
		"top level":        {withFields(`,"stream":true,"stream":false`), "stream"},
		"model twice":      {`{"model":"` + model + `","model":"` + model + `","messages":` + basicMsg + `}`, "model"},
		"in a message":     {withMessages(`[{"role":"user","role":"assistant","content":"hi"}]`), "messages[0].role"},
		"in a part":        {withMessages(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b","text":"c"}]}]`), "messages[0].content[1].text"},
		"in a tool call":   {withMessages(toolCall), "messages[1].tool_calls[0].function.name"},
		"in a schema":      {withSchema(`{"type":"object","properties":{"x":{},"x":{}}}`), "tools[0].function.parameters.properties.x"},
		"in tool_choice":   {withFields(`,"tool_choice":{"type":"function","type":"function"}`), "tool_choice.type"},
		"in a policy one":  {withFields(`,"metadata":{"k":"a","k":"b"}`), "metadata.k"},
		"in an array":      {withFields(`,"stop":["a",{"s":1,"s":2}]`), "stop[1].s"},
		"in an unknown":    {withFields(`,"some_future_field":{"x":1,"x":1}`), "some_future_field.x"},
		"before the model": {`{"model":"gpt-4o","max_tokens":1,"max_tokens":2,"messages":` + basicMsg + `}`, "max_tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			rec := post(h, c.body)
			is.Equal(rec.Code, http.StatusBadRequest)
			e := decodeError(t, rec.Body.Bytes())
			is.Equal(e.Code, "invalid_request")
			is.Equal(e.param(), c.param)
			is.True(strings.Contains(e.Message, "more than once"))
			is.Equal(svc.Calls(), 0)
		})
	}
}

// A body that is not text is refused for that, not for a repeat after it:
// the body's own problems come first, in their words.
func TestChatBodyProblemsComeBeforeARepeatedName(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	for body, want := range map[string]string{
		`{"model":"` + model + `","model":"x","messages":[{"role":"user","content":"\ud800"}]}`: "messages[0].content",
		`{"stream":true,"stream":true`: "<null>",
		`[{"a":1,"a":2}]`:              "<null>",
	} {
		rec := post(h, body)
		is.Equal(rec.Code, http.StatusBadRequest)
		e := decodeError(t, rec.Body.Bytes())
		is.True(!strings.Contains(e.Message, "more than once"))
		is.Equal(e.param(), want)
	}
}

// chatOrdered are chat's fields in the documented order of refusals
// (docs/API.md), each with a value refused at that place. reasoning_effort
// and response_format are wrong in what they ask for (after the field
// policy), not in their kind.
var chatOrdered = []wrongField{
	{"model", `5`, "model", `"` + model + `"`},
	{"stream", `"yes"`, "stream", `false`},
	{"stream_options", `5`, "stream_options", `{"include_usage":false}`},
	{"parallel_tool_calls", `"x"`, "parallel_tool_calls", `true`},
	{"system", `"Be brief."`, "system", ``},
	{"temperature", `"hot"`, "temperature", `0.5`},
	{"max_tokens", `1.5`, "max_tokens", `100`},
	{"stop", `5`, "stop", `["END"]`},
	{"user", `5`, "user", `"u-1"`},
	{"metadata", `5`, "metadata", `{"k":"v"}`},
	{"n", `2`, "n", `1`},
	{"logprobs", `true`, "logprobs", `false`},
	{"modalities", `["audio"]`, "modalities[0]", `["text"]`},
	{"functions", `[]`, "functions", ``},
	{"web_search_options", `{}`, "web_search_options", ``},
	{"reasoning_effort", `"extreme"`, "reasoning_effort", `"low"`},
	{"response_format", `{"type":"json_schema"}`, "response_format.json_schema", `{"type":"text"}`},
	{"tools", `5`, "tools", `[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`},
	{"tool_choice", `"sometimes"`, "tool_choice", `"auto"`},
	{"messages", `"hi"`, "messages", basicMsg},
}

// orderBody is a request of every field at its good value (or left out),
// except the fields in bad; members are in the order perm gives them (as
// listed when perm is nil).
func orderBody(fields []wrongField, bad map[int]bool, perm func([]string) []string) string {
	var members []string
	for i, f := range fields {
		switch {
		case bad[i]:
			members = append(members, `"`+f.name+`":`+f.bad)
		case f.good != "":
			members = append(members, `"`+f.name+`":`+f.good)
		}
	}
	if perm != nil {
		members = perm(members)
	}
	return "{" + strings.Join(members, ",") + "}"
}

func chatRefused(h http.Handler, body string) (int, string) {
	rec := post(h, body)
	var e struct{ Error struct{ Param *string } }
	if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Param == nil {
		return rec.Code, ""
	}
	return rec.Code, *e.Error.Param
}

// Of any two wrong fields, sent in either order, the refusal names the one
// earlier in the documented order.
func TestChatRefusesTheEarlierOfTwoWrongFieldsInEitherOrder(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	code, _ := chatRefused(h, orderBody(chatOrdered, nil, nil))
	is.Equal(code, http.StatusOK) // the good values are good
	reversed := func(m []string) []string {
		out := make([]string, 0, len(m))
		for i := len(m) - 1; i >= 0; i-- {
			out = append(out, m[i])
		}
		return out
	}
	for i := range chatOrdered {
		for j := i + 1; j < len(chatOrdered); j++ {
			for _, perm := range []func([]string) []string{nil, reversed} {
				body := orderBody(chatOrdered, map[int]bool{i: true, j: true}, perm)
				if code, param := chatRefused(h, body); code != http.StatusBadRequest || param != chatOrdered[i].param {
					t.Errorf("%d %q, want 400 %q, for %s", code, param, chatOrdered[i].param, body)
				}
			}
		}
	}
}

// However the members of a chat body are ordered, and whichever of them are
// wrong, the refusal names the first wrong one in the documented order.
func TestChatRefusalOrderDoesNotDependOnMemberOrder(t *testing.T) {
	h, _ := newServer(t, &fakeService{})
	rapid.Check(t, func(t *rapid.T) {
		picked := rapid.SliceOfNDistinct(rapid.IntRange(0, len(chatOrdered)-1), 1, 5, rapid.ID[int]).Draw(t, "bad")
		bad, first := map[int]bool{}, len(chatOrdered)
		for _, i := range picked {
			bad[i], first = true, min(first, i)
		}
		body := orderBody(chatOrdered, bad, func(m []string) []string { return rapid.Permutation(m).Draw(t, "order") })
		if code, param := chatRefused(h, body); code != http.StatusBadRequest || param != chatOrdered[first].param {
			t.Fatalf("%d %q, want 400 %q, for %s", code, param, chatOrdered[first].param, body)
		}
	})
}

// Member names are matched exactly: "Stream" is an unknown member (ignored),
// not stream, and "MODEL" does not stand in for model.
func TestChatMatchesMemberNamesExactly(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	rec := post(h, withFields(`,"Stream":true`))
	is.Equal(rec.Code, http.StatusOK)
	is.True(strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json")) // a completion, not a stream
	code, param := chatRefused(h, `{"MODEL":"`+model+`","model":5,"messages":`+basicMsg+`}`)
	is.Equal(code, http.StatusBadRequest)
	is.Equal(param, "model")
}
