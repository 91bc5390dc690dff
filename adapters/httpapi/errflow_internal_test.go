package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
)

// A handler that began its answer and then returns a failure gets no second
// write: the answer stays what the handler wrote, and the failure is noted
// (the access line's code; an internal one logged). Before the answer began,
// the same failure is the error answer.
func TestAFailureAfterTheAnswerBeganIsNotWrittenAgain(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		code errs.Code
	}{
		{"coded", errs.New(errs.UpstreamOverloaded), errs.UpstreamOverloaded},
		{"internal", errors.New("cause"), errs.InternalError},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			var logs bytes.Buffer
			s := &server{log: slog.New(slog.NewJSONHandler(&logs, nil))}
			ri := &reqInfo{id: "r1"}
			r := httptest.NewRequest(http.MethodGet, "/x", nil).WithContext(context.WithValue(context.Background(), ctxKey{}, ri))
			began := s.handle(func(w http.ResponseWriter, _ *http.Request) error {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte("data: one\n\n"))
				return c.err
			})
			rec := httptest.NewRecorder()
			began.ServeHTTP(&recorder{ResponseWriter: rec}, r)
			is.Equal(rec.Code, http.StatusOK)
			is.Equal(rec.Body.String(), "data: one\n\n")                    // nothing after the handler's own bytes
			is.Equal(rec.Header().Get("Content-Type"), "text/event-stream") // its headers untouched
			is.Equal(ri.code, c.code)                                       // noted for the access line
			is.Equal(strings.Contains(logs.String(), "internal error"), c.code == errs.InternalError)

			ri.code = ""
			rec = httptest.NewRecorder()
			s.handle(func(http.ResponseWriter, *http.Request) error { return c.err }).ServeHTTP(&recorder{ResponseWriter: rec}, r)
			is.Equal(rec.Code, errs.MustEntry(c.code).Status) // before any byte: the error answer
			is.True(strings.Contains(rec.Body.String(), `"code":"`+string(c.code)+`"`))
			is.Equal(ri.code, c.code)
		})
	}
}
