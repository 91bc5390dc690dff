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

// benchmarkMessages is one JSON Messages request through the handler (the
// decode and translation of the body, the turn of five deltas, the Message).
func benchmarkMessages(b *testing.B, body string) { benchmarkAPI(b, body, msgRequest) }

// benchmarkAPI is one request of body (made by req) through the handler.
func benchmarkAPI(b *testing.B, body string, req func(string) *http.Request) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := testConfig()
	cfg.MaxTools, cfg.MaxBodyBytes = 64, 1<<20
	h := httpapi.NewServer(cfg, fiveDeltas(), log)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req(body))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// messagesTools is benchTools(n) in the Messages shape.
func messagesTools(b *testing.B, n int) string {
	return "[" + strings.Join(reshapedTools(b, n, func(name, desc, params string) string {
		return `{"name":` + name + `,"description":` + desc + `,"input_schema":` + params + `}`
	}), ",") + "]"
}

// reshapedTools is each definition of benchTools(n) written by def (its
// name and description as JSON strings, and its schema).
func reshapedTools(b *testing.B, n int, def func(name, desc, params string) string) []string {
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
		out = append(out, def(string(name), string(desc), string(d.Function.Parameters)))
	}
	return out
}

const benchHistory = `[{"role":"user","content":"Read the README please"},` +
	`{"role":"assistant","content":[{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"tool_a","input":{"path":"/README.md","mode":"text"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"# pmgate\nA gateway."}]},{"type":"text","text":"<system-reminder>be brief</system-reminder>"}]}]`

func BenchmarkMessagesRequestText(b *testing.B) {
	benchmarkMessages(b, msgBody(userHi, `,"system":[{"type":"text","text":"You are careful."}]`))
}

func BenchmarkMessagesRequestTools(b *testing.B) {
	benchmarkMessages(b, msgBody(userHi, `,"tools":`+messagesTools(b, 16)))
}

func BenchmarkMessagesRequestToolResults(b *testing.B) {
	benchmarkMessages(b, msgBody(benchHistory, `,"tools":`+messagesTools(b, 16)))
}
