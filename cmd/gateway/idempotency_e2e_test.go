package main

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// TestAnIdempotencyKeyGetsTheRecordedOutcome drives the IETF draft's
// semantics through the HTTP API: the same key and body while the first is
// answered → 409 idempotency_key_in_use; after it → the recorded answer,
// disclosed by x-pmgate-replayed; another body → 422 idempotency_key_reused;
// a malformed key → 400. One dispatch in all.
func TestAnIdempotencyKeyGetsTheRecordedOutcome(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	s := serveWith(t, emu, "web_session", nil)
	body := userBody("keyed question #delay_ms=800", false, "")

	first := make(chan *http.Response, 1)
	go func() { first <- s.post(t, body, "Idempotency-Key", "k-1") }()
	time.Sleep(300 * time.Millisecond)
	status, _, e := turnResult(t, s, body, "Idempotency-Key", "k-1")
	is.Equal(status, 409)
	is.Equal(e.Error.Code, "idempotency_key_in_use")

	r := <-first
	is.Equal(r.StatusCode, 200)
	want, _ := io.ReadAll(r.Body)
	again := s.post(t, body, "Idempotency-Key", "k-1")
	is.Equal(again.StatusCode, 200)
	is.Equal(again.Header.Get("x-pmgate-replayed"), "true")
	got, _ := io.ReadAll(again.Body)
	is.Equal(string(field(t, got, "choices")), string(field(t, want, "choices"))) // the recorded answer

	status, _, e = turnResult(t, s, userBody("another question", false, ""), "Idempotency-Key", "k-1")
	is.Equal(status, 422)
	is.Equal(e.Error.Code, "idempotency_key_reused")
	status, _, e = turnResult(t, s, body, "Idempotency-Key", "")
	is.Equal(status, 400)
	is.Equal(e.Error.Code, "invalid_request")
	is.Equal(emu.Count(emulator.KindUserQuery), 1) // one dispatch in all
}

// field is one member of a JSON object, as raw bytes.
func field(t *testing.T, body []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return m[name]
}
