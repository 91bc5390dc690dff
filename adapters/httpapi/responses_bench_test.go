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

// benchmarkResponses is one JSON Responses request through the handler (the
// decode and translation of the body, the turn of five deltas, the response
// object).
func benchmarkResponses(b *testing.B, body string) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := testConfig()
	cfg.MaxTools, cfg.MaxBodyBytes = 64, 1<<20
	h := httpapi.NewServer(cfg, fiveDeltas(), log)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, respRequest(body))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// responsesTools is benchTools(n) in the Responses shape.
func responsesTools(b *testing.B, n int) string {
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
		out = append(out, `{"type":"function","name":`+string(name)+`,"description":`+string(desc)+`,"parameters":`+string(d.Function.Parameters)+`}`)
	}
	return "[" + strings.Join(out, ",") + "]"
}

func respBenchBody(input, extra string) string {
	return `{"model":"` + model + `","instructions":"You are careful.","input":` + input + extra + `}`
}

const respBenchHistory = `[{"type":"message","role":"user","content":[{"type":"input_text","text":"Read the README please"}]},` +
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading it."}]},` +
	`{"type":"function_call","call_id":"call_1","name":"tool_a","arguments":"{\"path\":\"/README.md\",\"mode\":\"text\"}"},` +
	`{"type":"function_call_output","call_id":"call_1","output":"# pmgate\nA gateway."},` +
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"<system-reminder>be brief</system-reminder>"}]}]`

func BenchmarkResponsesHandlerText(b *testing.B) {
	benchmarkResponses(b, respBenchBody(`"hi"`, ""))
}

func BenchmarkResponsesHandlerTools(b *testing.B) {
	benchmarkResponses(b, respBenchBody(`"hi"`, `,"tools":`+responsesTools(b, 16)))
}

func BenchmarkResponsesHandlerToolResults(b *testing.B) {
	benchmarkResponses(b, respBenchBody(respBenchHistory, `,"tools":`+responsesTools(b, 16)))
}
