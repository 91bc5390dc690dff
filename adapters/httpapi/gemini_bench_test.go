package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/httpapi"
)

// benchmarkGemini is one generateContent request through the handler (the
// decode and translation of the body, the turn of five deltas, the answer).
func benchmarkGemini(b *testing.B, body string) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := testConfig()
	cfg.MaxTools, cfg.MaxBodyBytes = 64, 1<<20
	h := httpapi.NewServer(cfg, fiveDeltas(), log)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, gemRequest("generateContent", "", body))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// geminiTools is benchTools(n) as one entry of functionDeclarations.
func geminiTools(b *testing.B, n int) string {
	var defs []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal([]byte(benchTools(n, "")), &defs); err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, d := range defs {
		name, _ := json.Marshal(d.Function.Name)
		desc, _ := json.Marshal(d.Function.Description)
		out = append(out, `{"name":`+string(name)+`,"description":`+string(desc)+`,"parametersJsonSchema":`+string(d.Function.Parameters)+`}`)
	}
	return `[{"functionDeclarations":[` + strings.Join(out, ",") + `]}]`
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
