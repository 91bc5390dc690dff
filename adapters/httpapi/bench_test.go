package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"pmgate/adapters/httpapi"
	"pmgate/app"
	"pmgate/domain/chat"
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
