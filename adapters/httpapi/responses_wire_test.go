package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/httpapi"
)

// respBody is a Responses request with input and extra top-level members (a
// fragment starting with a comma, or "").
func respBody(input, extra string) string {
	return `{"model":"` + model + `","input":` + input + extra + `}`
}

// A member name given twice in one object, at any depth, is refused with
// the path of the repeat in the OpenAI APIs' own style (docs/API.md), before
// the model or any field is looked at; the request never reaches the service.
func TestResponsesRefusesARepeatedMemberNameWithItsPath(t *testing.T) {
	for name, c := range map[string]struct{ body, param string }{
		"top level":      {respBody(`"hi"`, `,"stream":true,"stream":false`), "stream"},
		"model twice":    {`{"model":"` + model + `","model":"` + model + `","input":"hi"}`, "model"},
		"before a model": {`{"model":"gpt-nothing","input":"a","input":"b"}`, "input"},
		"in an item":     {respBody(`[{"role":"user","role":"assistant","content":"hi"}]`, ""), "input[0].role"},
		"in a part": {respBody(`[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b","text":"c"}]}]`, ""),
			"input[0].content[1].text"},
		"in a call": {respBody(`[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c1","call_id":"c2","name":"f","arguments":"{}"},`+
			`{"type":"function_call_output","call_id":"c1","output":"r"}]`, ""), "input[1].call_id"},
		"in a schema":         {respBody(`"hi"`, `,"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{"x":{},"x":{}}}}]`), "tools[0].parameters.properties.x"},
		"in a namespace":      {respBody(`"hi"`, `,"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f","name":"g"}]}]`), "tools[0].tools[0].name"},
		"in tool_choice":      {respBody(`"hi"`, `,"tool_choice":{"type":"function","type":"custom","name":"f"}`), "tool_choice.type"},
		"in an ignored field": {respBody(`"hi"`, `,"metadata":{"user_id":"a","user_id":"b"}`), "metadata.user_id"},
		"in the text format":  {respBody(`"hi"`, `,"text":{"format":{"type":"json_schema","name":"city","name":5,"schema":{"type":"object"}}}`), "text.format.name"},
		"in a part's text":    {respBody(`[{"type":"message","role":"user","content":[{"type":"input_text","text":5,"text":"hi"}]}]`, ""), "input[0].content[0].text"},
		"in an unknown field": {respBody(`"hi"`, `,"some_future_field":{"x":1,"x":1}`), "some_future_field.x"},
		"a member named 0":    {respBody(`"hi"`, `,"some_future_field":{"0":[{"1":{"x":1,"x":1}}]}`), "some_future_field.0[0].1.x"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			rec := serve(h, respRequest(c.body))
			is.Equal(rec.Code, 400)
			e := decodeError(t, rec.Body.Bytes())
			is.Equal(e.Code, "invalid_request")
			is.True(e.Param != nil)
			is.Equal(*e.Param, c.param)
			is.True(strings.Contains(e.Message, "more than once"))
			is.Equal(svc.Calls(), 0)
		})
	}
}

// A body that is not text, not JSON or not an object is refused for that,
// not for a repeat in it (the body's own problems come first, in their
// words).
func TestResponsesBodyProblemsComeBeforeARepeatedName(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	for body, want := range map[string]string{
		`{"model":"` + model + `","model":"x","input":[{"role":"user","content":"\ud800"}]}`: "input[0].content",
		`{"stream":true,"stream":true`: "",
		`[{"a":1,"a":2}]`:              "",
	} {
		rec := serve(h, respRequest(body))
		is.Equal(rec.Code, 400)
		e := decodeError(t, rec.Body.Bytes())
		is.True(!strings.Contains(e.Message, "more than once"))
		if want != "" {
			is.True(e.Param != nil)
			is.Equal(*e.Param, want)
		}
	}
}

// respOrderedFields are top-level members in the documented order of
// refusals of the Responses API (docs/API.md): a value refused, the param
// the refusal names, and a good value ("" when it may be left out).
var respOrderedFields = []wrongField{
	{"model", `5`, "model", `"` + model + `"`},
	{"stream", `"yes"`, "stream", `false`},
	{"parallel_tool_calls", `"x"`, "parallel_tool_calls", `true`},
	{"system", `"Be brief."`, "system", ``},
	{"temperature", `"hot"`, "temperature", `0.5`},
	{"max_output_tokens", `1.5`, "max_output_tokens", `100`},
	{"metadata", `5`, "metadata", `{"a":"b"}`},
	{"user", `5`, "user", `"u1"`},
	{"reasoning", `5`, "reasoning", `{"effort":"low"}`},
	{"truncation", `"sometimes"`, "truncation", `"disabled"`},
	{"store", `"no"`, "store", `false`},
	{"text", `5`, "text", `{"format":{"type":"text"}}`},
	{"previous_response_id", `"resp_1"`, "previous_response_id", ``},
	{"background", `true`, "background", `false`},
	{"top_logprobs", `3`, "top_logprobs", `0`},
	{"tools", `5`, "tools", `[{"type":"function","name":"f","parameters":{"type":"object"}}]`},
	{"tool_choice", `{"type":"mcp"}`, "tool_choice.type", `"auto"`},
	{"instructions", `5`, "instructions", `"Be brief."`},
	{"input", `5`, "input", `"hi"`},
}

// respBodyWith is a request of every ordered field at its good value (or
// left out), except the fields in bad; members are in the order given by
// perm, or as listed when perm is nil.
func respBodyWith(bad map[int]bool, perm func([]string) []string) string {
	var members []string
	for i, f := range respOrderedFields {
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

func respRefusedParam(h http.Handler, body string) (int, string) {
	rec := serve(h, respRequest(body))
	var e struct {
		Error struct{ Param *string } `json:"error"`
	}
	if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Param == nil {
		return rec.Code, ""
	}
	return rec.Code, *e.Error.Param
}

// Of any two wrong fields, sent in either order, the refusal names the one
// earlier in the documented order.
func TestResponsesRefusesTheEarlierOfTwoWrongFieldsInEitherOrder(t *testing.T) {
	h, _ := newServer(t, &fakeService{})
	is := is.New(t)
	code, _ := respRefusedParam(h, respBodyWith(nil, nil))
	is.Equal(code, 200) // the good values are good
	reverse := func(m []string) []string {
		out := make([]string, len(m))
		for i, v := range m {
			out[len(m)-1-i] = v
		}
		return out
	}
	for i := range respOrderedFields {
		for j := i + 1; j < len(respOrderedFields); j++ {
			for _, perm := range []func([]string) []string{nil, reverse} {
				body := respBodyWith(map[int]bool{i: true, j: true}, perm)
				code, param := respRefusedParam(h, body)
				if code != 400 || param != respOrderedFields[i].param {
					t.Errorf("%d %q, want 400 %q, for %s", code, param, respOrderedFields[i].param, body)
				}
			}
		}
	}
}

// However the members of a body are ordered, and whichever of them are
// wrong, the refusal names the first wrong one in the documented order.
func TestResponsesRefusalOrderDoesNotDependOnMemberOrder(t *testing.T) {
	h, _ := newServer(t, &fakeService{})
	rapid.Check(t, func(t *rapid.T) {
		bad := map[int]bool{}
		for _, i := range rapid.SliceOfNDistinct(rapid.IntRange(0, len(respOrderedFields)-1), 1, 4, rapid.ID[int]).Draw(t, "bad") {
			bad[i] = true
		}
		want := ""
		for i, f := range respOrderedFields {
			if bad[i] {
				want = f.param
				break
			}
		}
		body := respBodyWith(bad, func(m []string) []string { return rapid.Permutation(m).Draw(t, "order") })
		if code, param := respRefusedParam(h, body); code != 400 || param != want {
			t.Fatalf("%d %q, want 400 %q, for %s", code, param, want, body)
		}
	})
}

// Within the tools, every entry's shape is refused before the count, and the
// count before any tool's own rules (a repeated name, its description, its
// schema), whatever entry comes first.
func TestResponsesToolRefusalsComeInTheirOrder(t *testing.T) {
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.MaxTools = 2 })
	for name, c := range map[string]struct{ tools, param string }{
		"shape before count":       {`[{"type":"function","name":"a","description":5},{"type":"function","name":"b"},{"type":"function","name":"bad name"}]`, "tools[2].name"},
		"count before description": {`[{"type":"function","name":"a","description":5},{"type":"function","name":"b"},{"type":"function","name":"c"}]`, "tools"},
		"repeat before schema":     {`[{"type":"function","name":"a","parameters":5},{"type":"namespace","name":"n","tools":[{"type":"function","name":"a"}]}]`, "tools[0].parameters"},
		"namespaced repeat":        {`[{"type":"function","name":"n__a"},{"type":"namespace","name":"n","tools":[{"type":"function","name":"a"}]}]`, "tools[1].tools[0].name"},
		"format before name":       {`[{"type":"custom","name":"bad name","format":{"type":"grammar","syntax":"peg","definition":"x"}}]`, "tools[0].format.syntax"},
		"schema problem at its path": {`[{"type":"web_search"},{"type":"function","name":"a","parameters":{"type":"object","properties":{"x":{"$ref":"http://example.com/s"}}}}]`,
			"tools[1].parameters.properties.x.$ref"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			code, param := respRefusedParam(h, respBody(`"hi"`, `,"tools":`+c.tools))
			is.Equal(code, 400)
			is.Equal(param, c.param)
		})
	}
}

// A Responses tool set reaches the service as the same chat tools the chat
// route makes of the same definitions (name, description, the schema the
// tools hash binds, the lowered schema the upstream receives, strict), a
// namespaced tool under its qualified name and a custom tool as a function
// of one string "input"; the response lists the tools as the client sent
// them. Sent twice (the second from memory), it is the same again.
func TestResponsesToolsAreTheChatRoutesTools(t *testing.T) {
	is := is.New(t)
	schema := `{ "type": "object", "properties": { "path": {"type":"string", "format":"uri", "description":"a <path> & more"},` +
		` "n": {"$ref":"#/$defs/N"} }, "$defs": {"N": {"type":"integer","minimum":1}}, "required": ["path"] }`
	chatSvc, respSvc := &fakeService{}, &fakeService{}
	ch, _ := newServer(t, chatSvc)
	rh, _ := newServer(t, respSvc)
	rec := post(ch, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}],"tools":[`+
		`{"type":"function","function":{"name":"read","description":"Reads <it>.","parameters":`+schema+`,"strict":false}},`+
		`{"type":"function","function":{"name":"fs__list","parameters":{"type":"object"}}}]}`)
	is.Equal(rec.Code, 200)
	_, want := chatSvc.Last()
	tools := `[{"type":"function","name":"read","description":"Reads <it>.","parameters":` + schema + `,"strict":false},` +
		`{"type":"web_search"},` +
		`{"type":"namespace","name":"fs","tools":[{"type":"function","name":"list","parameters":{"type":"object"}}]},` +
		`{"type":"custom","name":"patch","description":"Applies a patch."}]`
	for range 2 {
		rec = serve(rh, respRequest(respBody(`"hi"`, `,"tools":`+tools)))
		is.Equal(rec.Code, 200)
		_, got := respSvc.Last()
		is.Equal(len(got.Tools), 3)
		for i := range want.Tools {
			w, g := want.Tools[i], got.Tools[i]
			is.Equal(g.Name, w.Name)
			is.Equal(g.Description, w.Description)
			var sent bytes.Buffer // compact and HTML-escaped, as the Responses route has always kept it
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
		custom := got.Tools[2]
		is.Equal(custom.Name, "patch")
		is.Equal(custom.Description, "Applies a patch.")
		var params struct {
			Required   []string
			Properties map[string]struct{ Type string }
		}
		is.NoErr(json.Unmarshal(custom.Parameters, &params))
		is.Equal(params.Required, []string{"input"})
		is.Equal(params.Properties["input"].Type, "string")
		var obj struct{ Tools []map[string]any }
		is.NoErr(json.Unmarshal(rec.Body.Bytes(), &obj))
		is.Equal(len(obj.Tools), 3) // web_search is not offered, so not listed
		is.Equal(obj.Tools[0]["name"], "read")
		is.Equal(obj.Tools[1]["name"], "list")
		is.Equal(obj.Tools[1]["namespace"], "fs")
		is.Equal(obj.Tools[2]["type"], "custom")
	}
}

// Member names are matched exactly: "Stream" is an unknown field (ignored),
// not stream, and "INPUT" does not stand in for input.
func TestResponsesMatchesMemberNamesExactly(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	rec := serve(h, respRequest(respBody(`"hi"`, `,"Stream":true`)))
	is.Equal(rec.Code, 200)
	is.True(strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json")) // a response object, not a stream
	code, param := respRefusedParam(h, `{"model":"`+model+`","INPUT":"hi"}`)
	is.Equal(code, 400)
	is.Equal(param, "input")
}
