package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

var updateRoutes = flag.Bool("update-routes", false, "rewrite testdata/routes.golden")

// routePage is a control page whose every answer is fixed text, and whose
// JSON endpoints fail for an inference key's view of them (they are never
// reached without an admin key).
type routePage struct{}

func (routePage) Index() http.Handler { return fixed("index") }
func (routePage) Assets() map[string]http.Handler {
	return map[string]http.Handler{"app.js": fixed("asset")}
}
func (routePage) Overview(w http.ResponseWriter, _ *http.Request) error {
	_, _ = w.Write([]byte("overview"))
	return nil
}
func (routePage) Live(http.ResponseWriter, *http.Request) error {
	return errors.New("page-secret")
}
func (routePage) Usage(w http.ResponseWriter, _ *http.Request) error {
	_, _ = w.Write([]byte("usage"))
	return nil
}
func (routePage) ServesUsage() bool { return true }

func fixed(s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(s)) })
}

// waitError is an upstream refusal that knows its wait.
type waitError struct{ error }

func (waitError) RetryAfter() time.Duration { return 7 * time.Second }
func (e waitError) Unwrap() error           { return e.error }

// modeService answers by the request's x-test-mode header, which the server
// ignores: "refuse" (a 429 that knows its wait), "fail" (a turn failing
// before any delta), "empty" (a turn with nothing), anything else a text.
type modeService struct{}

type modeKey struct{}

func (modeService) Chat(ctx context.Context, _ app.Principal, _ chat.Request, _ *app.Repeat) (app.Turn, error) {
	switch ctx.Value(modeKey{}) {
	case "refuse":
		return nil, waitError{errs.New(errs.UpstreamRateLimited)}
	case "fail":
		return script(errs.New(errs.UpstreamOverloaded)), nil
	case "empty":
		return script(app.Delta{Finish: app.FinishStop}), nil
	}
	return script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), nil
}

// withMode puts the request's x-test-mode into its context for modeService.
func withMode(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), modeKey{}, r.Header.Get("x-test-mode"))))
	})
}

var (
	routePaths = []string{"/", "/v1/chat/completions", "/v1/responses", "/v1/models", "/v1/models/pm-test", "/v1/models/nope",
		"/v1/models/pm-test:generateContent", "/v1/models/pm-test:countTokens", "/v1/models/pm-test:streamGenerateContent?alt=sse",
		"/v1/models/pm-test:other", "/v1/messages", "/v1/messages?beta=true", "/v1/messages/count_tokens", "/v1/messages/other",
		"/v1beta/models", "/v1beta/models/pm-test", "/v1beta/models/nope", "/v1beta/models/pm-test:generateContent",
		"/v1beta/models/nope:generateContent", "/v1beta/models/pm-test:streamGenerateContent",
		"/v1beta/models/pm-test:streamGenerateContent?alt=sse", "/v1beta/models/pm-test:countTokens", "/v1beta/models/pm-test:other",
		"/v1beta/other", "/v1beta/models/a/b", "/livez", "/readyz", "/health", "/metrics", "/admin", "/admin/", "/admin/static/app.js",
		"/admin/api/overview", "/admin/api/live", "/admin/api/usage", "/admin/other", "/chat/completions", "/v1/v1/chat/completions",
		"/messages", "/models/x", "/v1/chat/completions/", "//v1/models", "/v1/./models", "/admin//x"}
	routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut}
	routeAuths   = []string{"none", "bearer", "admin", "goog", "query", "x-api-key", "wrong", "foreign-host", "foreign-origin"}
	routeBodies  = map[string]string{
		"chat":      `{"model":"pm-test","messages":[{"role":"user","content":"hi"}]}`,
		"responses": `{"model":"pm-test","input":"hi"}`,
		"messages":  `{"model":"pm-test","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
		"gemini":    `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
	}
	// What varies from one answer to the next: ids and times.
	routeRandom = regexp.MustCompile(`(chatcmpl-|resp_|msg_|fc_|"responseId":")[A-Z2-7]{26}|"created(_at)?":[0-9]+`)
)

func bodyFor(path string) string {
	switch {
	case strings.HasPrefix(path, "/v1/chat"):
		return routeBodies["chat"]
	case strings.HasPrefix(path, "/v1/responses"):
		return routeBodies["responses"]
	case strings.HasPrefix(path, "/v1/messages"):
		return routeBodies["messages"]
	}
	return routeBodies["gemini"]
}

func routeRequest(method, path, auth, ct, body, mode string) *http.Request {
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, "http://example.com/", nil)
	} else {
		r = httptest.NewRequest(method, "http://example.com/", strings.NewReader(body))
	}
	// httptest.NewRequest would clean nothing, but it parses the target; set
	// the raw target so that unclean paths reach the server as sent.
	u, err := r.URL.Parse(path)
	if err != nil {
		panic(err)
	}
	r.URL, r.RequestURI = u, path
	r.Header.Set("x-request-id", "req-fixed")
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	if mode != "" {
		r.Header.Set("x-test-mode", mode)
	}
	switch auth {
	case "bearer":
		r.Header.Set("Authorization", "Bearer "+editorKey)
	case "admin":
		r.Header.Set("Authorization", "Bearer "+routerKey)
	case "goog":
		r.Header.Set("x-goog-api-key", editorKey)
	case "query":
		u := *r.URL
		q := u.Query()
		q.Set("key", editorKey)
		u.RawQuery = q.Encode()
		r.URL, r.RequestURI = &u, u.RequestURI()
	case "x-api-key":
		r.Header.Set("x-api-key", editorKey)
	case "wrong":
		r.Header.Set("Authorization", "Bearer pmg-not-a-key")
	case "foreign-host":
		r.Host = "evil.test"
		r.Header.Set("Authorization", "Bearer "+editorKey)
	case "foreign-origin":
		r.Header.Set("Origin", "http://evil.test")
		r.Header.Set("Authorization", "Bearer "+editorKey)
	}
	return r
}

// accessOf is what the log says of one request: the access line's route,
// status and code, and whether an internal error was logged.
func accessOf(lines string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			b.WriteString("log: not JSON\n")
			continue
		}
		switch m["msg"] {
		case "request":
			fmt.Fprintf(&b, "log: request path=%v status=%v code=%v\n", m["path"], m["status"], m["code"])
		case "internal error":
			b.WriteString("log: internal error\n")
		}
	}
	return b.String()
}

func routeAnswer(rec *httptest.ResponseRecorder) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n", rec.Code)
	keys := make([]string, 0, len(rec.Header()))
	for k := range rec.Header() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(rec.Header()[k], " | "))
	}
	b.WriteString(routeRandom.ReplaceAllString(rec.Body.String(), "$1<random>"))
	return b.String()
}

// Every route's answer, byte for byte (status, every header, the body with
// its ids and times masked), for every method, key form and body kind, in
// two configurations: the table the error-flow refactor (handlers returning
// errors, the API surface as data) was checked against, recorded before it.
// -update-routes rewrites it.
func TestEveryRouteAnswersAsRecorded(t *testing.T) {
	type config struct {
		name string
		mut  func(*httpapi.Config)
	}
	configs := []config{
		{"full", func(c *httpapi.Config) {
			c.Admin, c.Metrics = routePage{}, fixed("metrics")
		}},
		{"bare", func(c *httpapi.Config) {
			c.UsageEstimatesOff, c.MetricsOpen, c.Metrics = true, true, fixed("metrics")
		}},
	}
	// Each distinct answer is written once, after the cases that name it.
	var out strings.Builder
	ids := map[string]int{}
	var answers []string
	for _, cfg := range configs {
		h, logs := newServer(t, modeService{}, withKeyring(scopedKeyring()), cfg.mut)
		h = withMode(h)
		one := func(method, path, auth, ct, body, mode string) {
			rec := httptest.NewRecorder()
			before := len(logs.String())
			h.ServeHTTP(rec, routeRequest(method, path, auth, ct, body, mode))
			a := routeAnswer(rec) + "\n" + accessOf(logs.String()[before:])
			id, ok := ids[a]
			if !ok {
				id = len(answers)
				ids[a] = id
				answers = append(answers, a)
			}
			fmt.Fprintf(&out, "%s %s %s auth=%s ct=%q body=%d mode=%s -> A%d\n", cfg.name, method, path, auth, ct, len(body), mode, id)
		}
		for _, path := range routePaths {
			for _, method := range routeMethods {
				for _, auth := range routeAuths {
					body := ""
					if method == http.MethodPost || method == http.MethodPut {
						body = bodyFor(path)
					}
					one(method, path, auth, "application/json", body, "refuse")
				}
			}
			for _, auth := range []string{"bearer", "goog"} {
				for _, mode := range []string{"ok", "fail", "empty"} {
					one(http.MethodPost, path, auth, "application/json", bodyFor(path), mode)
				}
				one(http.MethodPost, path, auth, "", bodyFor(path), "ok")
				one(http.MethodPost, path, auth, "application/json", "{", "ok")
				one(http.MethodPost, path, auth, "application/json", `{"model":"nope"}`, "ok")
			}
		}
	}
	for id, a := range answers {
		fmt.Fprintf(&out, "\n=== A%d\n%s\n", id, a)
	}
	const golden = "testdata/routes.golden"
	if *updateRoutes {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				from := max(0, i-8)
				t.Fatalf("answers differ from %s at line %d:\n--- want\n%s\n--- got\n%s", golden, i+1,
					strings.Join(wl[from:min(len(wl), i+4)], "\n"), strings.Join(gl[from:min(len(gl), i+4)], "\n"))
			}
		}
		t.Fatalf("answers differ from %s in length: %d lines, want %d", golden, len(gl), len(wl))
	}
}
