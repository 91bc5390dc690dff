package httpapi_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
)

// failingPage is a control page whose JSON endpoints fail with err, and which
// has no usage ledger.
type failingPage struct{ err error }

func (p failingPage) Index() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("page")) })
}
func (p failingPage) Assets() map[string]http.Handler                   { return nil }
func (p failingPage) Overview(http.ResponseWriter, *http.Request) error { return p.err }
func (p failingPage) Live(http.ResponseWriter, *http.Request) error     { return p.err }
func (p failingPage) Usage(http.ResponseWriter, *http.Request) error    { return p.err }
func (p failingPage) ServesUsage() bool                                 { return false }

// A control page handler returns its failure and the router writes it: once,
// in the API's error shape, with the page's browser policy, an internal cause
// kept out of the body and in the log; a page without a ledger has no usage
// endpoint (404, as an unknown path).
func TestTheRouterWritesTheErrorAControlPageHandlerReturns(t *testing.T) {
	is := is.New(t)
	h, logs := newServer(t, fiveDeltas(), func(c *httpapi.Config) {
		c.Admin = failingPage{err: errors.New("secret-cause-of-the-failure")}
	})
	for _, path := range []string{"/admin/api/overview", "/admin/api/live"} {
		rec := get(h, path, "Authorization", "Bearer "+apiKey)
		is.Equal(rec.Code, http.StatusInternalServerError)
		e := decodeError(t, rec.Body.Bytes())
		is.Equal(e.Code, "internal_error")
		is.True(!strings.Contains(rec.Body.String(), "secret-cause"))      // not shown
		is.Equal(strings.Count(rec.Body.String(), `"error"`), 1)           // written once
		is.Equal(rec.Header().Get("X-Frame-Options"), "DENY")              // the page's policy on its errors
		is.True(strings.Contains(logs.String(), `"msg":"internal error"`)) // logged (redacted)
	}
	rec := get(h, "/admin/api/usage", "Authorization", "Bearer "+apiKey)
	is.Equal(rec.Code, http.StatusNotFound)
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "invalid_request")
	is.Equal(get(h, "/admin/api/live").Code, http.StatusUnauthorized) // the key is checked before the handler runs
	is.Equal(get(h, "/admin").Body.String(), "page")
}
