package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// fiveDeltas is a service whose every turn is five text deltas and a stop.
func fiveDeltas() *fakeService {
	return &fakeService{ChatFn: func(context.Context, app.Principal, chat.Request) (app.Turn, error) {
		return script(
			app.Delta{Text: "The "}, app.Delta{Text: "quick "}, app.Delta{Text: "brown "},
			app.Delta{Text: "fox "}, app.Delta{Text: "jumps."},
			app.Delta{Finish: app.FinishStop, Usage: &chat.Usage{PromptTokens: i64(10), CompletionTokens: i64(5), TotalTokens: i64(15)}},
		), nil
	}}
}

func benchmarkChat(b *testing.B, body string) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil)) // the access log is part of the measured path
	h := httpapi.NewServer(testConfig(), fiveDeltas(), log)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+apiKey)
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkChatCompletionsJSON(b *testing.B) {
	benchmarkChat(b, withFields(""))
}

func BenchmarkChatCompletionsSSE(b *testing.B) {
	benchmarkChat(b, streamRequest(true))
}

// benchTools is n tools in the upstream's vocabulary, each about 1 KiB: the
// schema check runs for every tool of every request.
func benchTools(n int, extra string) string {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"function","function":{"name":"tool_` + string(rune('a'+i)) + `","description":"A tool","parameters":` +
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,"required":["path","mode"],"properties":{` +
			`"path":{"type":"string","description":"The absolute path of the file to read"` + extra + `},` +
			`"offset":{"type":"integer","minimum":0,"description":"The line number to start reading from"},` +
			`"limit":{"type":"integer","exclusiveMinimum":0,"description":"The number of lines to read"},` +
			`"mode":{"type":"string","enum":["text","binary","auto"]},` +
			`"tags":{"type":"array","items":{"type":"string","minLength":1},"maxItems":16},` +
			`"options":{"type":"object","properties":{"follow":{"type":"boolean"},"encoding":{"anyOf":[{"type":"string"},{"type":"null"}]}}}}}}}`)
	}
	b.WriteString("]")
	return b.String()
}

func benchmarkTools(b *testing.B, tools string, policy toolschema.Policy) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := testConfig()
	cfg.MaxTools, cfg.MaxBodyBytes, cfg.ToolSchemaPolicy = 64, 1<<20, policy
	h := httpapi.NewServer(cfg, fiveDeltas(), log)
	body := withTools(tools)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+apiKey)
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// Sixteen tools already in the vocabulary, under each policy.
func BenchmarkSixteenToolsStrict(b *testing.B) {
	benchmarkTools(b, benchTools(16, ""), toolschema.PolicyStrict)
}
func BenchmarkSixteenToolsLower(b *testing.B) {
	benchmarkTools(b, benchTools(16, ""), toolschema.PolicyLower)
}

// Sixteen tools whose path carries a pattern and a format, lowered.
func BenchmarkSixteenAnnotatedToolsLower(b *testing.B) {
	benchmarkTools(b, benchTools(16, `,"pattern":"^/","format":"uri-reference"`), toolschema.PolicyLower)
}
