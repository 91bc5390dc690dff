package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/domain/chat"
)

// The tool-call pairing of a conversation (every call of an assistant or
// model turn answered in the next user turn, in any order, text after the
// answers; ids unique; an answer names a pending call) and the rules of a
// tool definition are one rule each, written once; each API keeps its own
// words and paths. These cases pin what a client sees for each of them,
// byte for byte: the status and whole error body of a refusal, or the
// messages and tools that reach the service (testdata/pairing.golden,
// rewritten with -update).

type goldenCase struct {
	name string
	req  func() *http.Request
}

func msgCase(name, msgs, extra string) goldenCase {
	return goldenCase{name: "messages/" + name, req: func() *http.Request { return msgRequest(msgBody(msgs, extra)) }}
}

func gemCase(name, contents, extra string) goldenCase {
	return goldenCase{name: "gemini/" + name, req: func() *http.Request {
		return gemRequest("generateContent", "", `{"contents":`+contents+extra+`}`)
	}}
}

func chatCase(name, tools string) goldenCase {
	return goldenCase{name: "chat/" + name, req: func() *http.Request {
		return chatRequest(`{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"tools":` + tools + `}`)
	}}
}

func respCase(name, tools string) goldenCase {
	return goldenCase{name: "responses/" + name, req: func() *http.Request {
		return respRequest(`{"model":"` + model + `","input":"hi","tools":` + tools + `}`)
	}}
}

// reached is what reached the service, in a form that shows every field the
// translation sets.
func reached(req chat.Request) []byte {
	type tc struct{ ID, Name, Arguments string }
	type msg struct {
		Role       chat.Role
		Content    *string `json:",omitempty"`
		ToolCallID string  `json:",omitempty"`
		ToolCalls  []tc    `json:",omitempty"`
		Trailing   string  `json:",omitempty"`
	}
	type tool struct {
		Name, Description   string
		Parameters, Lowered string `json:",omitempty"`
		Strict              *bool  `json:",omitempty"`
	}
	var out struct {
		Messages []msg
		Tools    []tool `json:",omitempty"`
	}
	for _, m := range req.Messages {
		o := msg{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Trailing: m.Trailing}
		for _, c := range m.ToolCalls {
			o.ToolCalls = append(o.ToolCalls, tc{c.ID, c.Name, c.Arguments})
		}
		out.Messages = append(out.Messages, o)
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, tool{t.Name, t.Description, string(t.Parameters), string(t.UpstreamParameters), t.Strict})
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	return b
}

func TestPairingAndToolRulesAnswerAsBefore(t *testing.T) {
	const (
		use0  = `{"type":"tool_use","id":"toolu_a","name":"read_file","input":{"path":"a"}}`
		use1  = `{"type":"tool_use","id":"toolu_b","name":"read_file","input":{"path":"b"}}`
		res0  = `{"type":"tool_result","tool_use_id":"toolu_a","content":"A"}`
		res1  = `{"type":"tool_result","tool_use_id":"toolu_b","content":[{"type":"text","text":"B1"},{"type":"tool_reference","tool_name":"x"},{"type":"text","text":"B2"}],"is_error":true}`
		u     = `{"role":"user","content":"read"}`
		mtool = `,"tools":[{"name":"read_file","description":"read","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}]`
	)
	asst := func(blocks ...string) string {
		return `{"role":"assistant","content":[` + strings.Join(blocks, ",") + `]}`
	}
	user := func(blocks ...string) string { return `{"role":"user","content":[` + strings.Join(blocks, ",") + `]}` }
	list := func(ms ...string) string { return "[" + strings.Join(ms, ",") + "]" }
	text := func(s string) string { return `{"type":"text","text":"` + s + `"}` }
	big := strings.Repeat("x", 1100)

	call := func(id, name string) string {
		idm := ""
		if id != "" {
			idm = `"id":"` + id + `",`
		}
		return `{"functionCall":{` + idm + `"name":"` + name + `","args":{"path":"a.go"}}}`
	}
	resp := func(id, name, response string) string {
		idm := ""
		if id != "" {
			idm = `"id":"` + id + `",`
		}
		return `{"functionResponse":{` + idm + `"name":"` + name + `","response":` + response + `}}`
	}
	model := func(parts ...string) string { return `{"role":"model","parts":[` + strings.Join(parts, ",") + `]}` }
	guser := func(parts ...string) string { return `{"role":"user","parts":[` + strings.Join(parts, ",") + `]}` }
	gtext := func(s string) string { return `{"text":"` + s + `"}` }
	gu := guser(gtext("read"))
	out := func(s string) string { return `{"output":"` + s + `"}` }

	cases := []goldenCase{
		// Messages: pairing.
		msgCase("text only", list(u), ""),
		msgCase("results in any order with text after", list(u, asst(text("Reading."), use0, use1), user(res1, res0, text("<r>be brief</r>"), text("next"))), mtool),
		msgCase("results then empty text", list(u, asst(use0), user(res0, text(""))), mtool),
		msgCase("a system message keeps the pairing", list(u, asst(use0), `{"role":"system","content":"env"}`, user(res0)), mtool),
		msgCase("thinking only turn is dropped", list(u, asst(`{"type":"thinking","thinking":"hm","signature":"s"}`), user(text("again"))), ""),
		msgCase("a result after text", list(u, asst(use0, use1), user(res0, text("t"), res1)), mtool),
		msgCase("a result with no pending call", list(u, user(res0)), mtool),
		msgCase("an unknown result id", list(u, asst(use0), user(`{"type":"tool_result","tool_use_id":"toolu_z","content":"Z"}`)), mtool),
		msgCase("an unknown result id off the pattern", list(u, asst(use0), user(`{"type":"tool_result","tool_use_id":"toolu z","content":"Z"}`)), mtool),
		msgCase("a result id not a string", list(u, asst(use0), user(`{"type":"tool_result","tool_use_id":7,"content":"Z"}`)), mtool),
		msgCase("answered twice", list(u, asst(use0, use1), user(res0, res0, res1)), mtool),
		msgCase("one unanswered", list(u, asst(use0, use1), user(res0)), mtool),
		msgCase("two unanswered in call order", list(u, asst(use0, use1), user(text("no"))), mtool),
		msgCase("assistant after pending calls", list(u, asst(use0), asst(text("x"))), mtool),
		msgCase("a final assistant with calls", list(u, asst(use0)), mtool),
		msgCase("a final assistant", list(u, asst(text("pre"))), ""),
		msgCase("a repeated call id", list(u, asst(use0), user(res0), asst(use0)), mtool),
		msgCase("a repeated call id in one turn", list(u, asst(use0, use0)), mtool),
		msgCase("a call id off the pattern", list(u, asst(`{"type":"tool_use","id":"a.b","name":"read_file","input":{}}`)), mtool),
		msgCase("a call without name", list(u, asst(`{"type":"tool_use","id":"toolu_a","input":{}}`)), mtool),
		msgCase("a call with array input", list(u, asst(`{"type":"tool_use","id":"toolu_a","name":"read_file","input":[]}`)), mtool),
		msgCase("a result too large", list(u, asst(use0), user(`{"type":"tool_result","tool_use_id":"toolu_a","content":"`+big+`"}`)), mtool),
		msgCase("a result with an image", list(u, asst(use0), user(`{"type":"tool_result","tool_use_id":"toolu_a","content":[{"type":"image","source":{}}]}`)), mtool),
		msgCase("a result with content a number", list(u, asst(use0), user(`{"type":"tool_result","tool_use_id":"toolu_a","content":5}`)), mtool),
		msgCase("a result with is_error a string", list(u, asst(use0), user(`{"type":"tool_result","tool_use_id":"toolu_a","is_error":"yes"}`)), mtool),
		msgCase("an empty user turn", list(u, user()), ""),
		msgCase("only system", list(`{"role":"system","content":"env"}`), ""),
		msgCase("an unknown role", list(`{"role":"tool","content":"x"}`), ""),
		msgCase("an unknown block in a user turn", list(user(`{"type":"image","source":{}}`)), ""),
		msgCase("an unknown block in an assistant turn", list(u, asst(`{"type":"fancy"}`), user(text("x"))), ""),
		msgCase("empty messages", "[]", ""),
		msgCase("a system message with a tool result", list(`{"role":"system","content":[`+res0+`]}`, u), ""),
		msgCase("system blocks and billing header", list(u), `,"system":[{"type":"text","text":"x-anthropic-billing-header: cc"},{"type":"text","text":"be kind"}]`),

		// Gemini: pairing.
		gemCase("text only", list(gu), ""),
		gemCase("by id in any order with text after", list(gu, model(gtext("Reading."), call("call_a", "read_file"), call("call_b", "read_file")),
			guser(resp("call_b", "read_file", `{"error":"no"}`), resp("call_a", "read_file", out("A")), gtext("<r>be brief</r>"), gtext("next"))), gemTools),
		gemCase("by a unique name", list(gu, model(call("call_a", "read_file"), call("call_b", "write_file")),
			guser(resp("", "write_file", `{"a":1,"b":2}`), resp("", "read_file", out("A")))), gemTools),
		gemCase("the same response again", list(gu, model(call("call_a", "read_file")), guser(resp("call_a", "read_file", out("A")), resp("call_a", "read_file", out("A")))), gemTools),
		gemCase("an empty id is no id", list(gu, model(call("call_a", "read_file")), guser(resp("", "read_file", out("A")))), gemTools),
		gemCase("thought parts are dropped", list(gu, model(`{"text":"hm","thought":true}`, call("call_a", "read_file")), guser(`{"text":"hm","thought":true}`, resp("call_a", "read_file", out("A")))), gemTools),
		gemCase("thoughts only", list(gu, model(`{"text":"hm","thought":true}`), guser(gtext("again"))), ""),
		gemCase("args absent", list(gu, model(`{"functionCall":{"id":"call_a","name":"read_file"}}`), guser(resp("call_a", "read_file", out("A")))), gemTools),
		gemCase("a response after text", list(gu, model(call("call_a", "read_file"), call("call_b", "read_file")), guser(resp("call_a", "read_file", out("A")), gtext("t"), resp("call_b", "read_file", out("B")))), gemTools),
		gemCase("a response with no pending call by id", list(gu, guser(resp("call_a", "read_file", out("A")))), gemTools),
		gemCase("a response with no pending call by name", list(gu, guser(resp("", "read_file", out("A")))), gemTools),
		gemCase("an unknown id", list(gu, model(call("call_a", "read_file")), guser(resp("call_z", "read_file", out("A")))), gemTools),
		gemCase("an unknown id off the pattern", list(gu, model(call("call_a", "read_file")), guser(resp("call z", "read_file", out("A")))), gemTools),
		gemCase("an id not a string", list(gu, model(call("call_a", "read_file")), guser(`{"functionResponse":{"id":7,"name":"read_file","response":{}}}`)), gemTools),
		gemCase("a name not a string", list(gu, model(call("call_a", "read_file")), guser(`{"functionResponse":{"id":"call_a","name":7,"response":{}}}`)), gemTools),
		gemCase("no id and no name", list(gu, model(call("call_a", "read_file")), guser(`{"functionResponse":{"response":{}}}`)), gemTools),
		gemCase("a name that disagrees", list(gu, model(call("call_a", "read_file")), guser(resp("call_a", "write_file", out("A")))), gemTools),
		gemCase("two calls of the name, no id", list(gu, model(call("call_a", "read_file"), call("call_b", "read_file")), guser(resp("", "read_file", out("A")))), gemTools),
		gemCase("answered twice differently", list(gu, model(call("call_a", "read_file")), guser(resp("call_a", "read_file", out("A")), resp("call_a", "read_file", out("B")))), gemTools),
		gemCase("answered by name then by id", list(gu, model(call("call_a", "read_file")), guser(resp("", "read_file", out("A")), resp("call_a", "read_file", out("A")))), gemTools),
		gemCase("answered twice by name", list(gu, model(call("call_a", "read_file")), guser(resp("", "read_file", out("A")), resp("", "read_file", out("A")))), gemTools),
		gemCase("one unanswered", list(gu, model(call("call_a", "read_file"), call("call_b", "read_file")), guser(resp("call_b", "read_file", out("B")))), gemTools),
		gemCase("text and no answers", list(gu, model(call("call_a", "read_file")), guser(gtext("no"))), gemTools),
		gemCase("model after pending calls", list(gu, model(call("call_a", "read_file")), model(gtext("x"))), gemTools),
		gemCase("a final model with calls", list(gu, model(call("call_a", "read_file"))), gemTools),
		gemCase("a final model", list(gu, model(gtext("pre"))), ""),
		gemCase("a repeated call id", list(gu, model(call("call_a", "read_file")), guser(resp("call_a", "read_file", out("A"))), model(call("call_a", "read_file"))), gemTools),
		gemCase("a call without id", list(gu, model(call("", "read_file"))), gemTools),
		gemCase("a call id off the pattern", list(gu, model(call("a.b", "read_file"))), gemTools),
		gemCase("a call without name", list(gu, model(`{"functionCall":{"id":"call_a","args":{}}}`)), gemTools),
		gemCase("a call with array args", list(gu, model(`{"functionCall":{"id":"call_a","name":"read_file","args":[]}}`)), gemTools),
		gemCase("a call not an object", list(gu, model(`{"functionCall":"x"}`)), gemTools),
		gemCase("a response in a model content", list(gu, model(resp("call_a", "read_file", out("A")))), gemTools),
		gemCase("a call in a user content", list(gu, model(gtext("x")), guser(call("call_a", "read_file"))), gemTools),
		gemCase("a response not an object", list(gu, model(call("call_a", "read_file")), guser(`{"functionResponse":"x"}`)), gemTools),
		gemCase("a response without response", list(gu, model(call("call_a", "read_file")), guser(`{"functionResponse":{"id":"call_a","name":"read_file"}}`)), gemTools),
		gemCase("a multimodal response", list(gu, model(call("call_a", "read_file")), guser(`{"functionResponse":{"id":"call_a","name":"read_file","response":{},"parts":[{"inlineData":{}}]}}`)), gemTools),
		gemCase("a response too large", list(gu, model(call("call_a", "read_file")), guser(resp("call_a", "read_file", out(big)))), gemTools),
		gemCase("an empty part", list(gu, model(`{}`)), gemTools),
		gemCase("a user part of nothing", list(guser(`{}`)), ""),
		gemCase("user thoughts only", list(guser(`{"text":"hm","thought":true}`)), ""),
		gemCase("empty parts", list(`{"role":"user","parts":[]}`), ""),
		gemCase("an unknown role", list(`{"role":"tool","parts":[{"text":"x"}]}`), ""),
		gemCase("a role not a string", list(`{"role":1,"parts":[{"text":"x"}]}`), ""),
		gemCase("empty contents", "[]", ""),
		gemCase("an inline data part", list(guser(`{"inlineData":{"mimeType":"image/png","data":""}}`)), ""),
		gemCase("system instruction", list(gu), `,"systemInstruction":{"parts":[{"text":"a"},{"text":"b"}]}`),
		gemCase("system instruction not an object", list(gu), `,"systemInstruction":"a"`),
		gemCase("system instruction with a call", list(gu), `,"systemInstruction":{"parts":[`+call("call_a", "f")+`]}`),

		// Tool definitions, per API.
		chatCase("two tools", `[{"type":"function","function":{"name":"a","description":"A","parameters":{"type":"object"},"strict":true}},{"type":"function","function":{"name":"b"}}]`),
		chatCase("empty", `[]`),
		chatCase("not an array", `{}`),
		chatCase("too many before a bad entry", `[1,2,3,4,5]`),
		chatCase("an entry not an object", `[1]`),
		chatCase("a type missing", `[{"function":{"name":"a"}}]`),
		chatCase("a type not function", `[{"type":"web"}]`),
		chatCase("a function missing", `[{"type":"function"}]`),
		chatCase("a bad name", `[{"type":"function","function":{"name":"a b"}}]`),
		chatCase("a name not a string", `[{"type":"function","function":{"name":1,"description":2}}]`),
		chatCase("a repeated name", `[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"a","description":2}}]`),
		chatCase("a description not a string", `[{"type":"function","function":{"name":"a","description":2,"parameters":3}}]`),
		chatCase("parameters not an object", `[{"type":"function","function":{"name":"a","parameters":3,"strict":"x"}}]`),
		chatCase("a schema the upstream cannot take", `[{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"x":{"$ref":"#/nope"}}},"strict":"x"}}]`),
		chatCase("a bad name before a bad entry", `[{"type":"function","function":{"name":"a b"}},7]`),
		chatCase("strict not a boolean", `[{"type":"function","function":{"name":"a","strict":"x"}}]`),

		msgCase("tools: two", list(u), `,"tools":[{"name":"a","description":"A","input_schema":{"type":"object"},"strict":true},{"type":"custom","name":"b","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}]`),
		msgCase("tools: empty", list(u), `,"tools":[]`),
		msgCase("tools: not an array", list(u), `,"tools":{}`),
		msgCase("tools: too many after a bad entry", list(u), `,"tools":[{"name":"a","input_schema":{}},{"name":"b","input_schema":{}},{"name":"c","input_schema":{}},{"name":"d","input_schema":{}},{"name":"e","input_schema":3}]`),
		msgCase("tools: too many", list(u), `,"tools":[{"name":"a","input_schema":{}},{"name":"b","input_schema":{}},{"name":"c","input_schema":{}},{"name":"d","input_schema":{}},{"name":"e","input_schema":{}}]`),
		msgCase("tools: an entry not an object", list(u), `,"tools":[1]`),
		msgCase("tools: a type not a string", list(u), `,"tools":[{"type":1,"name":"a","input_schema":{}}]`),
		msgCase("tools: a server tool", list(u), `,"tools":[{"type":"web_search_20250305","name":"web_search"}]`),
		msgCase("tools: a server tool of a bad name", list(u), `,"tools":[{"type":"web_search_ x","name":"web_search"}]`),
		msgCase("tools: an unknown type", list(u), `,"tools":[{"type":"magic","name":"a"}]`),
		msgCase("tools: no schema", list(u), `,"tools":[{"name":"a"}]`),
		msgCase("tools: a bad name", list(u), `,"tools":[{"name":"a b","description":1,"input_schema":{}}]`),
		msgCase("tools: a repeated name", list(u), `,"tools":[{"name":"a","input_schema":{}},{"name":"a","input_schema":{}}]`),
		msgCase("tools: a description not a string", list(u), `,"tools":[{"name":"a","description":1,"input_schema":{},"strict":"x"}]`),
		msgCase("tools: a schema the upstream cannot take", list(u), `,"tools":[{"name":"a","input_schema":{"type":"object","properties":{"x":{"$ref":"#/nope"}}},"strict":"x"}]`),
		msgCase("tools: strict not a boolean", list(u), `,"tools":[{"name":"a","input_schema":{},"strict":"x"}]`),
		msgCase("tools: a bad name before a bad entry", list(u), `,"tools":[{"name":"a b","input_schema":{}},7]`),
		msgCase("tools: html in a schema", list(u), `,"tools":[{"name":"a","input_schema":{"type":"object","description":"<a&b>"}}]`),

		gemCase("tools: two", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a","description":"A","parametersJsonSchema":{"type":"object"}}]},{"functionDeclarations":[{"name":"b","parameters":{"type":"OBJECT"}},{"name":"c"}]}]`),
		gemCase("tools: empty", list(gu), `,"tools":[]`),
		gemCase("tools: empty declarations", list(gu), `,"tools":[{"functionDeclarations":[]},{"functionDeclarations":null},{}]`),
		gemCase("tools: not an array", list(gu), `,"tools":{}`),
		gemCase("tools: too many after a bad entry", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"},{"name":"e","parameters":3}]},7]`),
		gemCase("tools: too many", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a"},{"name":"b"},{"name":"c"}]},{"functionDeclarations":[{"name":"d"},{"name":"e"}]}]`),
		gemCase("tools: an entry not an object", list(gu), `,"tools":[1]`),
		gemCase("tools: declarations not an array", list(gu), `,"tools":[{"functionDeclarations":{}}]`),
		gemCase("tools: a declaration not an object", list(gu), `,"tools":[{"functionDeclarations":[1]}]`),
		gemCase("tools: a server tool", list(gu), `,"tools":[{"googleSearch":{}}]`),
		gemCase("tools: a null server tool", list(gu), `,"tools":[{"googleSearch":null,"functionDeclarations":[{"name":"a"}]}]`),
		gemCase("tools: an unknown member", list(gu), `,"tools":[{"magic":{}}]`),
		gemCase("tools: an unknown member of a bad name", list(gu), `,"tools":[{"ma gic":{}}]`),
		gemCase("tools: a bad name", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a b","description":1}]}]`),
		gemCase("tools: a repeated name", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a"}]},{"functionDeclarations":[{"name":"a","description":1}]}]`),
		gemCase("tools: a description not a string", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a","description":1,"parameters":3}]}]`),
		gemCase("tools: both schemas", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a","parameters":{},"parametersJsonSchema":{}}]}]`),
		gemCase("tools: a json schema not an object", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a","parametersJsonSchema":3}]}]`),
		gemCase("tools: parameters not an object", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a","parameters":3}]}]`),
		gemCase("tools: a bad name before a bad entry", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a b"},7]}]`),
		gemCase("tools: a schema the upstream cannot take", list(gu), `,"tools":[{"functionDeclarations":[{"name":"a","parametersJsonSchema":{"type":"object","properties":{"x":{"$ref":"#/nope"}}}}]}]`),

		respCase("two", `[{"type":"function","name":"a","description":"A","parameters":{"type":"object"},"strict":true},{"type":"custom","name":"b"},{"type":"web_search"},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"c"}]}]`),
		respCase("not an array", `{}`),
		respCase("null", `null`),
		respCase("too many after a bad entry", `[{"type":"function","name":"a"},{"type":"function","name":"b"},{"type":"function","name":"c"},{"type":"function","name":"d"},{"type":"function","name":"e","parameters":3}]`),
		respCase("too many", `[{"type":"function","name":"a"},{"type":"function","name":"b"},{"type":"function","name":"c"},{"type":"function","name":"d"},{"type":"function","name":"e"}]`),
		respCase("a bad name", `[{"type":"function","name":"a b","description":1}]`),
		respCase("a repeated name", `[{"type":"function","name":"a"},{"type":"function","name":"a","description":1}]`),
		respCase("a description not a string", `[{"type":"function","name":"a","description":1,"parameters":3}]`),
		respCase("parameters not an object", `[{"type":"function","name":"a","parameters":3,"strict":"x"}]`),
		respCase("a bad name before a bad entry", `[{"type":"function","name":"a","description":1},7]`),
		respCase("strict not a boolean", `[{"type":"function","name":"a","strict":"x"}]`),
	}
	var got bytes.Buffer
	names := map[string]bool{}
	for _, c := range cases {
		if names[c.name] {
			t.Fatalf("two cases named %q", c.name)
		}
		names[c.name] = true
		svc := &fakeService{}
		h, _ := newServer(t, svc)
		rec := serve(h, c.req())
		got.WriteString("### " + c.name + "\n" + strconv.Itoa(rec.Code) + " ")
		if rec.Code == http.StatusOK {
			_, req := svc.Last()
			got.Write(reached(req))
		} else {
			got.Write(bytes.TrimSpace(rec.Body.Bytes()))
		}
		got.WriteString("\n")
	}
	// The request id differs on every run.
	got2 := regexp.MustCompile(`"request_id":"[0-9a-f]+"`).ReplaceAll(got.Bytes(), []byte(`"request_id":"ID"`))
	golden(t, "pairing.golden", got2)
}
