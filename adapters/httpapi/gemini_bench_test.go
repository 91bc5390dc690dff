package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// benchmarkGemini is one generateContent request through the handler (the
// decode and translation of the body, the turn of five deltas, the answer).
func benchmarkGemini(b *testing.B, body string) {
	benchmarkAPI(b, body, func(body string) *http.Request { return gemRequest("generateContent", "", body) })
}

// geminiTools is benchTools(n) as one entry of functionDeclarations.
func geminiTools(b *testing.B, n int) string {
	return `[{"functionDeclarations":[` + strings.Join(reshapedTools(b, n, func(name, desc, params string) string {
		return `{"name":` + name + `,"description":` + desc + `,"parametersJsonSchema":` + params + `}`
	}), ",") + `]}]`
}

const gemBenchHistory = `[{"role":"user","parts":[{"text":"Read the README please"}]},` +
	`{"role":"model","parts":[{"text":"Reading it."},{"functionCall":{"id":"call_1","name":"tool_a","args":{"path":"/README.md","mode":"text"}}}]},` +
	`{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"tool_a","response":{"output":"# pmgate\nA gateway."}}},{"text":"be brief"}]}]`

func BenchmarkGeminiRequestText(b *testing.B) {
	benchmarkGemini(b, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"You are careful."}]}}`)
}

func BenchmarkGeminiRequestTools(b *testing.B) {
	benchmarkGemini(b, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":`+geminiTools(b, 16)+`}`)
}

func BenchmarkGeminiRequestToolResults(b *testing.B) {
	benchmarkGemini(b, `{"contents":`+gemBenchHistory+`,"tools":`+geminiTools(b, 16)+`}`)
}
