package chatapi

import (
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
)

// benchmarkDecodeChat measures the chat request's decode and translation
// alone (no handler, no service), on a body an agent sends: a conversation
// with tool calls and results, and a tool set that is remembered after the
// first request.
func benchmarkDecodeChat(b *testing.B, tools int) {
	in := rules.New(rules.Settings{MaxTools: 64, MaxToolResultBytes: 1 << 20, Models: []string{"pm-test"}})
	var ts []string
	for i := range tools {
		ts = append(ts, `{"type":"function","function":{"name":"tool_`+string(rune('a'+i))+`","description":"Reads a file.",`+
			`"parameters":{"type":"object","properties":{"path":{"type":"string","description":"The absolute path"},`+
			`"limit":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}}}`)
	}
	body := []byte(`{"model":"pm-test","stream":true,"stream_options":{"include_usage":true},"temperature":0.2,"max_tokens":4096,` +
		`"messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":[{"type":"text","text":"Read main.go"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"tool_a","arguments":"{\"path\":\"/src/main.go\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"package main\n\nfunc main() {}\n"},{"role":"user","content":"Now explain it."}],` +
		`"tools":[` + strings.Join(ts, ",") + `]}`)
	allowed := func(string) bool { return true }
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Decode(in, body, allowed); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeChatNoTools(b *testing.B)      { benchmarkDecodeChat(b, 0) }
func BenchmarkDecodeChatSixteenTools(b *testing.B) { benchmarkDecodeChat(b, 16) }
