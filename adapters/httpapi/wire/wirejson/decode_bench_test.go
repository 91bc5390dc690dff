package wirejson_test

import (
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/gemini"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/messages"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/responses"
)

// The one strict decode of each API's request body alone (no translation),
// on the bodies an agent sends: a short history with a tool call and its
// result. The tools are benchmarked apart (BenchmarkWireToolEntries): in a
// body they are checked and kept as sent, a cost this decode does not
// change, and read into entries only when the ingress does not remember
// them yet, as on a cold process's first request.

const schema = `{"type":"object","properties":{"path":{"type":"string","description":"The absolute path"},` +
	`"limit":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`

func tools(n int, def func(name string) string) string {
	var ts []string
	for i := range n {
		ts = append(ts, def(`"tool_`+string(rune('a'+i))+`"`))
	}
	return "[" + strings.Join(ts, ",") + "]"
}

var (
	chatBody = `{"model":"pm-test","stream":true,"stream_options":{"include_usage":true},"temperature":0.2,"max_tokens":4096,` +
		`"messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":[{"type":"text","text":"Read main.go"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"tool_a","arguments":"{\"path\":\"/src/main.go\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"package main\n\nfunc main() {}\n"},{"role":"user","content":"Now explain it."}],` +
		`"tools":` + tools(16, func(name string) string {
		return `{"type":"function","function":{"name":` + name + `,"description":"Reads a file.","parameters":` + schema + `}}`
	}) + `}`
	responsesBody = `{"model":"pm-test","stream":true,"store":false,"temperature":0.2,"top_p":1,"max_output_tokens":4096,` +
		`"metadata":{"session":"s1"},"user":"agent","reasoning":{"effort":"medium","summary":"auto"},` +
		`"text":{"verbosity":"low","format":{"type":"text"}},"include":["reasoning.encrypted_content"],"prompt_cache_key":"k1",` +
		`"instructions":"You are a coding agent.","tool_choice":"auto","input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Read the README please"}]},` +
		`{"type":"function_call","call_id":"call_1","name":"tool_a","arguments":"{\"path\":\"/README.md\"}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"# pmgate\nA gateway."},` +
		`{"type":"message","role":"user","content":"Now explain it."}],` +
		`"tools":` + tools(16, func(name string) string {
		return `{"type":"function","name":` + name + `,"description":"Reads a file.","parameters":` + schema + `,"strict":false}`
	}) + `}`
	messagesBody = `{"model":"pm-test","max_tokens":4096,"stream":true,"temperature":0.2,"metadata":{"user_id":"u1"},"system":[{"type":"text","text":"You are careful."}],` +
		`"messages":[{"role":"user","content":"Read the README please"},` +
		`{"role":"assistant","content":[{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"tool_a","input":{"path":"/README.md","mode":"text"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"# pmgate\nA gateway."}]},{"type":"text","text":"<system-reminder>be brief</system-reminder>"}]}],` +
		`"tools":` + tools(16, func(name string) string {
		return `{"name":` + name + `,"description":"Reads a file.","input_schema":` + schema + `}`
	}) + `}`
	geminiBody = `{"contents":[{"role":"user","parts":[{"text":"Read the README please"}]},` +
		`{"role":"model","parts":[{"text":"Reading it."},{"functionCall":{"id":"call_1","name":"tool_a","args":{"path":"/README.md","mode":"text"}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"tool_a","response":{"output":"# pmgate\nA gateway."}}},{"text":"be brief"}]}],` +
		`"systemInstruction":{"parts":[{"text":"You are careful."}]},"generationConfig":{"temperature":0.2,"maxOutputTokens":4096,"thinkingConfig":{"thinkingBudget":1024}},` +
		`"tools":[{"functionDeclarations":` + tools(16, func(name string) string {
		return `{"name":` + name + `,"description":"Reads a file.","parametersJsonSchema":` + schema + `}`
	}) + `}]}`
)

func benchDecode[T any](b *testing.B, body string, decode func([]byte) (T, error)) {
	raw := []byte(body)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// withoutTools is body with its tools member, the last, left out.
func withoutTools(body string) string {
	return body[:strings.LastIndex(body, `,"tools":`)] + "}"
}

func BenchmarkWireChat(b *testing.B) { benchDecode(b, withoutTools(chatBody), chat.Decode) }
func BenchmarkWireResponses(b *testing.B) {
	benchDecode(b, withoutTools(responsesBody), responses.Decode)
}
func BenchmarkWireMessages(b *testing.B) { benchDecode(b, withoutTools(messagesBody), messages.Decode) }
func BenchmarkWireGemini(b *testing.B)   { benchDecode(b, withoutTools(geminiBody), gemini.Decode) }

// BenchmarkWireToolEntries reads each API's sixteen tools into entries.
func BenchmarkWireToolEntries(b *testing.B) {
	c, _ := chat.Decode([]byte(chatBody))
	r, _ := responses.Decode([]byte(responsesBody))
	m, _ := messages.Decode([]byte(messagesBody))
	g, _ := gemini.Decode([]byte(geminiBody))
	b.ReportAllocs()
	for b.Loop() {
		if len(c.Tools.Entries()) != 16 || len(r.Tools.Entries()) != 16 || len(m.Tools.Entries()) != 16 ||
			len(g.Tools.Entries()[0].V.FunctionDeclarations.Items) != 16 {
			b.Fatal("not sixteen tools")
		}
	}
}
