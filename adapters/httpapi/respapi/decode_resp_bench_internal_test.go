package respapi

import (
	"testing"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
)

// BenchmarkDecodeResponses measures the Responses request's decode and
// translation alone (no handler, no service), on a body a Codex-like agent
// sends: the echoed settings (metadata, temperature, reasoning, text) beside
// a short history with a tool call and its output.
func BenchmarkDecodeResponses(b *testing.B) {
	in := rules.New(rules.Settings{MaxTools: 64, MaxToolResultBytes: 1 << 20, Models: []string{"pm-test"}})
	body := []byte(`{"model":"pm-test","stream":true,"store":false,"temperature":0.2,"top_p":1,"max_output_tokens":4096,` +
		`"metadata":{"session":"s1"},"user":"agent","reasoning":{"effort":"medium","summary":"auto"},` +
		`"text":{"verbosity":"low","format":{"type":"text"}},"include":["reasoning.encrypted_content"],"prompt_cache_key":"k1",` +
		`"instructions":"You are a coding agent.","input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Read the README please"}]},` +
		`{"type":"function_call","call_id":"call_1","name":"tool_a","arguments":"{\"path\":\"/README.md\"}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"# pmgate\nA gateway."},` +
		`{"type":"message","role":"user","content":"Now explain it."}]}`)
	allowed := func(string) bool { return true }
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Decode(in, body, allowed); err != nil {
			b.Fatal(err)
		}
	}
}
