package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/internal/testkit"
)

const (
	apiKey   = "pmg-test-SECRET-key-0123456789"
	model    = "pm-test"
	basicMsg = `[{"role":"user","content":"hi"}]`
)

var principalKey = []byte("principal-key-of-at-least-32-bytes!!")

// fakeService is a hand-written app.ChatService: ChatFn decides, and every
// call is recorded.
type fakeService struct {
	ChatFn func(ctx context.Context, p app.Principal, req chat.Request) (app.Turn, error)

	mu    sync.Mutex
	calls int
	req   chat.Request
	p     app.Principal
	rep   *app.Repeat
}

var _ app.ChatService = (*fakeService)(nil)

func (f *fakeService) Chat(ctx context.Context, p app.Principal, req chat.Request, rep *app.Repeat) (app.Turn, error) {
	f.mu.Lock()
	f.calls++
	f.req, f.p, f.rep = req, p, rep
	f.mu.Unlock()
	if f.ChatFn == nil {
		return script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), nil
	}
	return f.ChatFn(ctx, p, req)
}

// Repeat is what the last call was told of a request a client may send
// again (nil for none).
func (f *fakeService) Repeat() *app.Repeat {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rep
}

// Calls is how many times Chat was called.
func (f *fakeService) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Last returns the principal and request of the last call.
func (f *fakeService) Last() (app.Principal, chat.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.p, f.req
}

// returning makes a service that answers every call with t (and err).
func returning(t app.Turn, err error) *fakeService {
	return &fakeService{ChatFn: func(context.Context, app.Principal, chat.Request) (app.Turn, error) { return t, err }}
}

// fakeTurn is a hand-written app.Turn: NextFn decides; Close is recorded and
// may run concurrently with Next (as the server does on cancellation). With
// TryFn it is an app.TryTurn that TryFn decides; without, its every delta is
// at hand (it never waits, as a replayed answer).
type fakeTurn struct {
	NextFn func(ctx context.Context) (app.Delta, error)
	TryFn  func(ctx context.Context) (app.Delta, bool, error)

	once   sync.Once
	closed chan struct{}
}

var _ app.Turn = (*fakeTurn)(nil)

func newTurn(next func(ctx context.Context) (app.Delta, error)) *fakeTurn {
	return &fakeTurn{NextFn: next, closed: make(chan struct{})}
}

func (t *fakeTurn) Next(ctx context.Context) (app.Delta, error) { return t.NextFn(ctx) }
func (t *fakeTurn) TryNext(ctx context.Context) (app.Delta, bool, error) {
	if t.TryFn == nil {
		d, err := t.NextFn(ctx)
		return d, true, err
	}
	return t.TryFn(ctx)
}
func (t *fakeTurn) Close() { t.once.Do(func() { close(t.closed) }) }

// Closed says whether Close was called.
func (t *fakeTurn) Closed() bool {
	select {
	case <-t.closed:
		return true
	default:
		return false
	}
}

// script returns a turn that yields each step in order, app.Delta values as
// deltas and error values as errors, and io.EOF afterwards. Each step comes
// as if in an upstream read of its own (TryNext says it is not at hand yet),
// except a step after together, which arrives with the one before.
func script(steps ...any) *fakeTurn {
	var mu sync.Mutex
	i := 0
	var next func() (app.Delta, error)
	t := newTurn(func(context.Context) (app.Delta, error) {
		mu.Lock()
		defer mu.Unlock()
		if i < len(steps) && steps[i] == together {
			i++
		}
		return next()
	})
	t.TryFn = func(context.Context) (app.Delta, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(steps) || steps[i] != together {
			return app.Delta{}, false, nil
		}
		i++
		d, err := next()
		return d, true, err
	}
	next = func() (app.Delta, error) {
		if i >= len(steps) {
			return app.Delta{}, io.EOF
		}
		s := steps[i]
		i++
		switch v := s.(type) {
		case app.Delta:
			return v, nil
		case error:
			return app.Delta{}, v
		}
		panic("script: step must be app.Delta or error")
	}
	return t
}

// together, between two steps of a script, makes them arrive together.
var together any = struct{ together bool }{true}

// lockedBuffer collects log output written from server goroutines.
type lockedBuffer struct{ testkit.SyncBuffer }

// Lines returns the JSON log records.
func (b *lockedBuffer) Lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func testConfig() httpapi.Config {
	return httpapi.Config{
		APIKeys:            map[string]string{"default": apiKey},
		PrincipalKey:       principalKey,
		Models:             []string{model, "pm-other"},
		Strategy:           "access_token",
		MaxBodyBytes:       64 << 10,
		MaxTools:           4,
		MaxToolResultBytes: 1024,
		MaxConcurrent:      4,
		RequestTimeout:     5 * time.Second,
		AllowedHosts:       []string{"example.com"}, // httptest.NewRequest's Host
	}
}

// newServer builds the handler around svc with the test configuration, as
// changed by mutate; logs go to the returned buffer (JSON, debug level).
func newServer(t testing.TB, svc app.ChatService, mutate ...func(*httpapi.Config)) (http.Handler, *lockedBuffer) {
	t.Helper()
	cfg := testConfig()
	for _, m := range mutate {
		m(&cfg)
	}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return httpapi.NewServer(cfg, svc, log), logs
}

// chatRequest returns an authenticated JSON POST of body.
func chatRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+apiKey)
	r.Header.Set("Content-Type", "application/json")
	return r
}

// serve runs one request through h.
func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// post serves an authenticated chat request with body.
func post(h http.Handler, body string) *httptest.ResponseRecorder {
	return serve(h, chatRequest(body))
}

// withFields returns a minimal valid request with extra top-level fields
// (a JSON fragment starting with a comma, or "").
func withFields(extra string) string {
	return `{"model":"` + model + `","messages":` + basicMsg + extra + `}`
}

// withMessages returns a request with the given messages array.
func withMessages(msgs string) string {
	return `{"model":"` + model + `","messages":` + msgs + `}`
}

// withTools returns a request declaring the given tools array.
func withTools(tools string) string {
	return withFields(`,"tools":` + tools)
}

// withSchema returns a request with one tool whose parameters are schema.
func withSchema(schema string) string {
	return withTools(`[{"type":"function","function":{"name":"f","parameters":` + schema + `}}]`)
}

// apiError is the decoded OpenAI error body, with the raw keys for presence
// checks.
type apiError struct {
	Message string
	Type    string
	Param   *string
	Code    string
	Keys    map[string]json.RawMessage
}

func decodeError(t testing.TB, body []byte) apiError {
	t.Helper()
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(body, &outer); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, body)
	}
	var e apiError
	if err := json.Unmarshal(outer["error"], &e.Keys); err != nil {
		t.Fatalf("no error object: %s", body)
	}
	if err := json.Unmarshal(outer["error"], &e); err != nil {
		t.Fatalf("error object: %v", err)
	}
	return e
}

// param returns the param of an error, or "<null>".
func (e apiError) param() string {
	if e.Param == nil {
		return "<null>"
	}
	return *e.Param
}

// i64 returns a pointer to n.
func i64(n int64) *int64 { return &n }

// errAt returns an uncoded error whose detail is an argument (redacted in
// logs), as an adapter would wrap a foreign error.
func errAt(detail string) error { return errors.Newf("upstream: %s", detail) }
