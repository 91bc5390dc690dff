package sse_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
)

type flushCounter struct {
	*httptest.ResponseRecorder
	flushes []int
}

func (f *flushCounter) Flush() { f.flushes = append(f.flushes, f.Body.Len()) }

// The one batching rule: events are held until Flush (the turn waits) or
// End (the last write, not flushed); nothing is written before Start.
func TestEventsAreHeldUntilTheTurnWaitsAndTheEndIsOneWrite(t *testing.T) {
	is := is.New(t)
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	w := sse.New(rec, func(h http.Header) { h.Set("x-mine", "1") })
	is.True(errors.Is(w.Event("a", 1), sse.ErrNotStarted)) // before the headers
	is.NoErr(w.Flush())                                    // nothing to flush
	w.Start()
	is.Equal(rec.Header().Get("Content-Type"), "text/event-stream")
	is.Equal(rec.Header().Get("x-mine"), "1") // the stream's own headers, at Start
	is.NoErr(w.Event("a", map[string]string{"t": "<&>"}))
	is.NoErr(w.Event("", 2))
	is.Equal(rec.Body.Len(), 0) // held
	is.NoErr(w.Flush())
	is.Equal(rec.Body.String(), "event: a\ndata: {\"t\":\"<&>\"}\n\ndata: 2\n\n") // one write, no HTML escaping
	is.Equal(rec.flushes, []int{rec.Body.Len()})
	is.NoErr(w.Data("[DONE]"))
	is.NoErr(w.End())
	is.Equal(len(rec.flushes), 1) // the end is written, not flushed
	is.Equal(rec.Body.String()[len(rec.Body.String())-len("data: [DONE]\n\n"):], "data: [DONE]\n\n")
}

type brokenWriter struct{ *httptest.ResponseRecorder }

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("gone") }

// After a failed write every later one fails the same way.
func TestAFailedWriteStaysFailed(t *testing.T) {
	is := is.New(t)
	w := sse.New(brokenWriter{httptest.NewRecorder()}, nil)
	w.Start()
	is.NoErr(w.Event("a", 1))
	err := w.Flush()
	is.True(err != nil)
	is.Equal(w.Event("b", 2), err)
	is.Equal(w.End(), err)
}
