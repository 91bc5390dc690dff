package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"
)

// A member name given twice in one object, at any depth, is refused with
// the path of the repeat (docs/API.md), before the model or any field is
// looked at; the request never reaches the service.
func TestMessagesRefusesARepeatedMemberNameWithItsPath(t *testing.T) {
	for name, c := range map[string]struct{ body, param string }{
		"top level":    {`{"model":"` + model + `","max_tokens":1,"stream":true,"stream":false,"messages":` + userHi + `}`, "stream"},
		"model twice":  {`{"model":"` + model + `","model":"` + model + `","max_tokens":1,"messages":` + userHi + `}`, "model"},
		"in a message": {msgBody(`[{"role":"user","role":"assistant","content":"hi"}]`, ""), "messages.0.role"},
		"in a block":   {msgBody(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b","text":"c"}]}]`, ""), "messages.0.content.1.text"},
		"in a schema":  {msgBody(userHi, `,"tools":[{"name":"f","input_schema":{"type":"object","properties":{"x":{},"x":{}}}}]`), "tools.0.input_schema.properties.x"},
		"in a tool_use input": {msgBody(`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"a":1,"a":2}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]`, ""), "messages.1.content.0.input.a"},
		"in an ignored field": {msgBody(userHi, `,"metadata":{"user_id":"a","user_id":"b"}`), "metadata.user_id"},
		"in an unknown field": {msgBody(userHi, `,"some_future_field":{"x":1,"x":1}`), "some_future_field.x"},
		"before the model":    {`{"model":"claude-opus-4-5","max_tokens":1,"max_tokens":2,"messages":` + userHi + `}`, "max_tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			rec := serve(h, msgRequest(c.body))
			is.Equal(rec.Code, 400)
			e := decodeAnth(t, rec.Body.Bytes())
			is.Equal(e.Error.Type, "invalid_request_error")
			is.Equal(e.Error.Code, "invalid_request")
			is.True(e.Error.Param != nil)
			is.Equal(*e.Error.Param, c.param)
			is.True(strings.Contains(e.Error.Message, "more than once"))
			is.Equal(svc.Calls(), 0)
		})
	}
}

// count_tokens reads its body the same way.
func TestCountTokensRefusesARepeatedMemberName(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := httptest.NewRequest(http.MethodPost, "/v1/messages/count_tokens", strings.NewReader(`{"model":"`+model+`","system":"a","system":"b","messages":`+userHi+`}`))
	r.Header.Set("x-api-key", apiKey)
	r.Header.Set("Content-Type", "application/json")
	rec := serve(h, r)
	is.Equal(rec.Code, 400)
	e := decodeAnth(t, rec.Body.Bytes())
	is.True(e.Error.Param != nil)
	is.Equal(*e.Error.Param, "system")
}

// A body that is not text is refused for that, not for a repeat after it
// (the body's own problems come first, in their words).
func TestMessagesBodyProblemsComeBeforeARepeatedName(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	for body, want := range map[string]string{
		// the UTF-8 check names paths as the chat route does
		`{"model":"` + model + `","model":"x","max_tokens":1,"messages":[{"role":"user","content":"\ud800"}]}`: "messages[0].content",
		`{"stream":true,"stream":true`: "",
		`[{"a":1,"a":2}]`:              "",
	} {
		rec := serve(h, msgRequest(body))
		is.Equal(rec.Code, 400)
		e := decodeAnth(t, rec.Body.Bytes())
		is.True(!strings.Contains(e.Error.Message, "more than once"))
		if want != "" {
			is.True(e.Error.Param != nil)
			is.Equal(*e.Error.Param, want)
		}
	}
}

// wrongField is a top-level member with a value the gateway refuses, the
// param the refusal names, and a good value (or "" when it may be left out).
type wrongField struct{ name, bad, param, good string }

// orderedFields are in the documented order of refusals (docs/API.md).
var orderedFields = []wrongField{
	{"model", `5`, "model", `"` + model + `"`},
	{"stream", `"yes"`, "stream", `true`},
	{"max_tokens", `0`, "max_tokens", `64`},
	{"temperature", `"hot"`, "temperature", `0.5`},
	{"top_k", `1.5`, "top_k", ``},
	{"thinking", `"on"`, "thinking", `{"type":"adaptive"}`},
	{"cache_control", `"x"`, "cache_control", ``},
	{"output_config", `5`, "output_config", `{"effort":"low"}`},
	{"mcp_servers", `[{"type":"url"}]`, "mcp_servers", `[]`},
	{"container", `"c_1"`, "container", `null`},
	{"stop_sequences", `"x"`, "stop_sequences", `["END"]`},
	{"tools", `5`, "tools", `[{"name":"f","input_schema":{"type":"object"}}]`},
	{"tool_choice", `{"type":"any"}`, "tool_choice.type", `{"type":"auto"}`},
	{"system", `5`, "system", `"Be brief."`},
	{"messages", `"hi"`, "messages", userHi},
}

// bodyWith is a request of every ordered field at its good value (or left
// out), except the fields in bad; members are in the order given by perm
// (indexes into the members), or as listed when perm is nil.
func bodyWith(bad map[int]bool, perm func([]string) []string) string {
	return orderBody(orderedFields, bad, perm)
}

func refusedParam(h http.Handler, body string) (int, string) {
	rec := serve(h, msgRequest(body))
	var e anthError
	if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Param == nil {
		return rec.Code, ""
	}
	return rec.Code, *e.Error.Param
}

// Of any two wrong fields, sent in either order, the refusal names the one
// earlier in the documented order.
func TestMessagesRefusesTheEarlierOfTwoWrongFieldsInEitherOrder(t *testing.T) {
	h, _ := newServer(t, &fakeService{})
	is := is.New(t)
	code, _ := refusedParam(h, bodyWith(nil, nil))
	is.Equal(code, 200) // the good values are good
	reverse := func(m []string) []string {
		out := make([]string, len(m))
		for i, v := range m {
			out[len(m)-1-i] = v
		}
		return out
	}
	for i := range orderedFields {
		for j := i + 1; j < len(orderedFields); j++ {
			for _, perm := range []func([]string) []string{nil, reverse} {
				body := bodyWith(map[int]bool{i: true, j: true}, perm)
				code, param := refusedParam(h, body)
				if code != 400 || param != orderedFields[i].param {
					t.Errorf("%d %q, want 400 %q, for %s", code, param, orderedFields[i].param, body)
				}
			}
		}
	}
}

// However the members of a body are ordered, and whichever of them are
// wrong, the refusal names the first wrong one in the documented order.
func TestMessagesRefusalOrderDoesNotDependOnMemberOrder(t *testing.T) {
	h, _ := newServer(t, &fakeService{})
	rapid.Check(t, func(t *rapid.T) {
		bad := map[int]bool{}
		for _, i := range rapid.SliceOfNDistinct(rapid.IntRange(0, len(orderedFields)-1), 1, 4, rapid.ID[int]).Draw(t, "bad") {
			bad[i] = true
		}
		want := ""
		for i, f := range orderedFields {
			if bad[i] {
				want = f.param
				break
			}
		}
		body := bodyWith(bad, func(m []string) []string { return rapid.Permutation(m).Draw(t, "order") })
		if code, param := refusedParam(h, body); code != 400 || param != want {
			t.Fatalf("%d %q, want 400 %q, for %s", code, param, want, body)
		}
	})
}

// A Messages tool set reaches the service as the same chat tools the chat
// route makes of the same definitions: name, description, the lowered schema
// the upstream receives, strict; the schema the tools hash binds is the one
// sent, compact and HTML-escaped as the Messages route has always kept it.
// Sent twice (the second from memory), it is the same again.
func TestMessagesToolsAreTheChatRoutesTools(t *testing.T) {
	is := is.New(t)
	schema := `{ "type": "object", "properties": { "path": {"type":"string", "format":"uri", "description":"a <path> & more"},` +
		` "n": {"$ref":"#/$defs/N"} }, "$defs": {"N": {"type":"integer","minimum":1}}, "required": ["path"] }`
	chatSvc, msgSvc := &fakeService{}, &fakeService{}
	ch, _ := newServer(t, chatSvc)
	mh, _ := newServer(t, msgSvc)
	rec := post(ch, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}],"tools":[`+
		`{"type":"function","function":{"name":"read","description":"Reads <it>.","parameters":`+schema+`,"strict":false}},`+
		`{"type":"function","function":{"name":"list","parameters":{"type":"object"}}}]}`)
	is.Equal(rec.Code, 200)
	_, want := chatSvc.Last()
	for range 2 {
		rec = serve(mh, msgRequest(msgBody(userHi, `,"tools":[{"name":"read","description":"Reads <it>.","input_schema":`+schema+`,"strict":false},`+
			`{"type":"custom","name":"list","input_schema":{"type":"object"}}]`)))
		is.Equal(rec.Code, 200)
		_, got := msgSvc.Last()
		is.Equal(len(got.Tools), 2)
		for i := range want.Tools {
			w, g := want.Tools[i], got.Tools[i]
			is.Equal(g.Name, w.Name)
			is.Equal(g.Description, w.Description)
			var sent bytes.Buffer // the Messages route has always kept the schema compact and HTML-escaped
			is.NoErr(json.Compact(&sent, w.Parameters))
			var escaped bytes.Buffer
			json.HTMLEscape(&escaped, sent.Bytes())
			is.Equal(string(g.Parameters), escaped.String())
			is.Equal(string(g.UpstreamParameters), string(w.UpstreamParameters))
			is.Equal(g.Strict == nil, w.Strict == nil)
			if w.Strict != nil {
				is.Equal(*g.Strict, *w.Strict)
			}
		}
	}
}

// Member names are matched exactly: "Stream" is an unknown field (ignored),
// not stream, and "MAX_TOKENS" does not stand in for max_tokens.
func TestMessagesMatchesMemberNamesExactly(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	rec := serve(h, msgRequest(msgBody(userHi, `,"Stream":true`)))
	is.Equal(rec.Code, 200)
	is.True(strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json")) // a Message, not a stream
	code, param := refusedParam(h, `{"model":"`+model+`","MAX_TOKENS":5,"messages":`+userHi+`}`)
	is.Equal(code, 400)
	is.Equal(param, "max_tokens")
}
