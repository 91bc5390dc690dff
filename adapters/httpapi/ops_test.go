package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

func TestModelsListsTheConfiguredIDs(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	r.Header.Set("x-api-key", apiKey)
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusOK)                                                                                                                                                                   // listed
	is.Equal(rec.Body.String(), `{"object":"list","data":[{"id":"pm-test","object":"model","created":0,"owned_by":"pmgate"},{"id":"pm-other","object":"model","created":0,"owned_by":"pmgate"}]}`+"\n") // the OpenAI list, in configured order
}

func TestHealthNeedsNoKeyAndMergesExtraFields(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) {
		c.Health = func(context.Context) map[string]any {
			return map[string]any{"correlation_groups": 3, "status": "overridden?"}
		}
	})
	rec := serve(h, httptest.NewRequest(http.MethodGet, "/health", nil))
	is.Equal(rec.Code, http.StatusOK) // no key needed
	var got map[string]any
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &got)) // the health body is JSON
	is.Equal(got["status"], "ok")                    // the fixed fields win
	is.Equal(got["strategy"], "access_token")        // the configured strategy
	is.Equal(got["upstream_verified"], false)        // never claims the upstream was verified
	is.Equal(got["correlation_groups"], float64(3))  // extra fields are merged
}

func TestHealthShowsVerificationOnlyFromTheConfiguredSource(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	verified := false
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) {
		c.Health = func(context.Context) map[string]any { return map[string]any{"upstream_verified": "forged"} }
		c.Verification = func() (bool, map[string]any) {
			if verified {
				return true, map[string]any{"upstream_verified_at": "2026-12-01T09:00:00Z", "upstream_report_digest": "sha256:ab", "other": 1}
			}
			return false, map[string]any{"upstream_verified_reason": "freshness: too old"}
		}
	})
	var got map[string]any
	is.NoErr(json.Unmarshal(serve(h, httptest.NewRequest(http.MethodGet, "/health", nil)).Body.Bytes(), &got))
	is.Equal(got["upstream_verified"], false)                       // not verified
	is.Equal(got["upstream_verified_reason"], "freshness: too old") // with the reason
	verified = true
	got = nil
	is.NoErr(json.Unmarshal(serve(h, httptest.NewRequest(http.MethodGet, "/health", nil)).Body.Bytes(), &got))
	is.Equal(got["upstream_verified"], true)                      // verified
	is.Equal(got["upstream_verified_at"], "2026-12-01T09:00:00Z") // its time
	is.Equal(got["upstream_report_digest"], "sha256:ab")          // its digest
	is.Equal(got["other"], nil)                                   // only verification fields pass
	is.Equal(got["upstream_verified_reason"], nil)
}

func TestUnknownPathIsAnOpenAIShaped404(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, logs := newServer(t, &fakeService{})
	rec := serve(h, httptest.NewRequest(http.MethodGet, "/v1/completions-sk-should-not-be-logged", nil))
	is.Equal(rec.Code, http.StatusNotFound) // unknown route
	e := decodeError(t, rec.Body.Bytes())
	is.Equal(e.Code, "invalid_request")                        // OpenAI-shaped, code invalid_request
	is.Equal(e.Type, "invalid_request_error")                  // with the catalog type
	is.Equal(len(e.Keys), 4)                                   // all four keys
	is.True(!strings.Contains(logs.String(), "sk-should-not")) // the client's path is not logged
}

func TestWrongMethodIs405WithAllow(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	rec := serve(h, httptest.NewRequest(http.MethodGet, "/v1/chat/completions", nil))
	is.Equal(rec.Code, http.StatusMethodNotAllowed)                    // wrong method
	is.Equal(rec.Header().Get("Allow"), "POST")                        // the allowed method is named
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "invalid_request") // OpenAI-shaped
	rec = serve(h, httptest.NewRequest(http.MethodDelete, "/health", nil))
	is.Equal(rec.Code, http.StatusMethodNotAllowed)  // on every route
	is.Equal(rec.Header().Get("Allow"), "GET, HEAD") // with its methods
}

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestEveryResponseCarriesARequestID(t *testing.T) {
	t.Parallel()
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.MaxBodyBytes = 1024 })
	noKey := chatRequest(withFields(""))
	noKey.Header.Del("Authorization")
	cases := map[string]*http.Request{
		"200":    chatRequest(withFields("")),
		"401":    noKey,
		"404":    httptest.NewRequest(http.MethodGet, "/nope", nil),
		"405":    httptest.NewRequest(http.MethodPut, "/v1/models", nil),
		"413":    chatRequest(withFields(`,"user":"` + strings.Repeat("a", 2000) + `"`)),
		"400":    chatRequest(`{`),
		"health": httptest.NewRequest(http.MethodGet, "/health", nil),
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			rec := serve(h, r)
			is.True(hexID.MatchString(rec.Header().Get("x-request-id"))) // 16 random bytes in hex
		})
	}
}

func TestClientRequestIDIsAdoptedWhenItIsVisibleASCII(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, logs := newServer(t, &fakeService{})
	r := chatRequest(withFields(""))
	r.Header.Set("x-request-id", "client-req_42")
	rec := serve(h, r)
	is.Equal(rec.Header().Get("x-request-id"), "client-req_42") // the client's id is echoed
	lines := logs.Lines(t)
	is.True(len(lines) > 0) // the request was logged
	for _, l := range lines {
		is.Equal(l["request_id"], "client-req_42") // every log line carries it
	}
}

func TestUnsuitableClientRequestIDIsReplaced(t *testing.T) {
	t.Parallel()
	h, _ := newServer(t, &fakeService{})
	for name, id := range map[string]string{"space": "a b", "too long": strings.Repeat("x", 129), "non-ASCII": "é"} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			r := chatRequest(withFields(""))
			r.Header.Set("x-request-id", id)
			is.True(hexID.MatchString(serve(h, r).Header().Get("x-request-id"))) // a generated id replaces it
		})
	}
}

func TestRequestIDIsInTheServiceContext(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	var seen string
	h, _ := newServer(t, &fakeService{ChatFn: func(ctx context.Context, _ app.Principal, _ chat.Request) (app.Turn, error) {
		seen = httpapi.RequestID(ctx)
		return script(app.Delta{Finish: app.FinishStop}), nil
	}})
	rec := post(h, withFields(""))
	is.Equal(seen, rec.Header().Get("x-request-id")) // the service sees the response's request id
}

func TestRetryableFailuresCarryRetryAfterAndNoShouldRetry(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(nil, errs.New(errs.CorrelationCapacityExceeded)))
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusServiceUnavailable) // the catalog status
	is.Equal(rec.Header().Get("retry-after"), "1")    // a retryable 503 says when
	is.Equal(rec.Header().Get("x-should-retry"), "")  // and does not forbid the retry
}

// rateLimited is an upstream error that knows the upstream's Retry-After.
type rateLimited struct{ after time.Duration }

func (e rateLimited) Error() string             { return "rate limited" }
func (e rateLimited) RetryAfter() time.Duration { return e.after }

func TestRetryAfterComesFromTheErrorWhenItKnowsIt(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(nil, errs.Wrap(rateLimited{after: 6500 * time.Millisecond}, errs.UpstreamRateLimited)))
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusTooManyRequests) // the catalog status
	is.Equal(rec.Header().Get("retry-after"), "7") // the upstream's delay, rounded up to seconds
}

func TestRetryableFailureWithoutTooManyRequestsHasNoRetryAfter(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(nil, errs.New(errs.UpstreamUnavailable)))
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusBadGateway)        // the catalog status
	is.Equal(rec.Header().Get("x-should-retry"), "") // retryable: no x-should-retry
	is.Equal(rec.Header().Get("retry-after"), "")    // and only 429/503 say when
}

func TestConcurrencyLimitAnswers429WithRetryAfter(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	started := make(chan struct{})
	release := make(chan struct{})
	blocked := newTurn(func(ctx context.Context) (app.Delta, error) {
		<-release
		return app.Delta{}, errs.New(errs.UpstreamTimeout)
	})
	calls := 0
	svc := &fakeService{ChatFn: func(context.Context, app.Principal, chat.Request) (app.Turn, error) {
		calls++
		close(started)
		return blocked, nil
	}}
	h, _ := newServer(t, svc, func(c *httpapi.Config) { c.MaxConcurrent = 1 })
	srv := httptest.NewServer(h)
	defer srv.Close()

	first := make(chan int)
	go func() {
		resp, err := srv.Client().Do(httpRequest(t, srv.URL, withFields("")))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-started
	resp, err := srv.Client().Do(httpRequest(t, srv.URL, withFields("")))
	is.NoErr(err) // the second request gets an answer
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusTooManyRequests)             // the second request is refused
	is.Equal(decodeError(t, body).Code, "concurrency_limit_exceeded") // with the stable code
	is.Equal(resp.Header.Get("retry-after"), "1")                     // and a retry delay
	is.Equal(resp.Header.Get("x-should-retry"), "")                   // retryable
	close(release)
	is.Equal(<-first, http.StatusGatewayTimeout) // the first request ran to its own end
	is.Equal(calls, 1)                           // the refused request never reached the service
}

// httpRequest is an authenticated chat POST to a live test server.
func httpRequest(t *testing.T, base, body string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+apiKey)
	r.Header.Set("Content-Type", "application/json")
	return r
}

func TestClientDisconnectClosesTheTurnWithinOneSecond(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	var turn *fakeTurn
	n := 0
	turn = newTurn(func(context.Context) (app.Delta, error) {
		n++
		if n == 1 {
			return app.Delta{Text: "first"}, nil
		}
		<-turn.closed // ignores ctx on purpose: only Close unblocks it
		return app.Delta{}, errs.New(errs.ClientCancelled)
	})
	h, _ := newServer(t, returning(turn, nil))
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	resp, err := srv.Client().Do(httpRequest(t, srv.URL, streamRequest(false)).WithContext(ctx))
	is.NoErr(err) // the stream request is answered
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	is.NoErr(err)                              // the first event arrives
	is.True(strings.HasPrefix(line, "data: ")) // the stream has started
	cancel()
	resp.Body.Close()
	select {
	case <-turn.closed:
	case <-time.After(time.Second):
		t.Fatal("Turn.Close was not called within 1 s of the client disconnect")
	}
}

func TestClientDisconnectBeforeAnyOutputClosesTheTurn(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	waiting := make(chan struct{})
	var turn *fakeTurn
	turn = newTurn(func(context.Context) (app.Delta, error) {
		close(waiting)
		<-turn.closed
		return app.Delta{}, errs.New(errs.ClientCancelled)
	})
	h, _ := newServer(t, returning(turn, nil))
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := srv.Client().Do(httpRequest(t, srv.URL, withFields("")).WithContext(ctx))
		done <- err
	}()
	<-waiting
	cancel()
	is.True(<-done != nil) // the client gave up
	select {
	case <-turn.closed:
	case <-time.After(time.Second):
		t.Fatal("Turn.Close was not called within 1 s of the client disconnect")
	}
}

func TestRequestTimeoutClosesTheTurnAndAnswers504(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	var turn *fakeTurn
	turn = newTurn(func(context.Context) (app.Delta, error) {
		<-turn.closed // a turn that ignores its context
		return app.Delta{}, io.ErrUnexpectedEOF
	})
	h, _ := newServer(t, returning(turn, nil), func(c *httpapi.Config) { c.RequestTimeout = 50 * time.Millisecond })
	start := time.Now()
	rec := post(h, withFields(""))
	is.True(time.Since(start) < time.Second)                            // the deadline ends the request
	is.True(turn.Closed())                                              // by closing the turn
	is.Equal(rec.Code, http.StatusGatewayTimeout)                       // answered as a timeout
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "upstream_timeout") // with the stable code
	is.Equal(rec.Header().Get("x-should-retry"), "false")               // deterministic per the catalog
}

func TestRequestTimeoutIsTheServiceContextDeadline(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	var left time.Duration
	h, _ := newServer(t, &fakeService{ChatFn: func(ctx context.Context, _ app.Principal, _ chat.Request) (app.Turn, error) {
		dl, ok := ctx.Deadline()
		if ok {
			left = time.Until(dl)
		}
		return nil, ctx.Err()
	}}, func(c *httpapi.Config) { c.RequestTimeout = 3 * time.Second })
	post(h, withFields(""))
	is.True(left > 2*time.Second && left <= 3*time.Second) // the service's context has the configured deadline
}

func TestTurnIsClosedAfterASuccessfulResponse(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	turn := script(app.Delta{Text: "x"}, app.Delta{Finish: app.FinishStop})
	h, _ := newServer(t, returning(turn, nil))
	post(h, withFields(""))
	is.True(turn.Closed()) // the upstream is always released
}

func TestPanicIsAnsweredAsInternalErrorAndLoggedWithoutTheBody(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, logs := newServer(t, &fakeService{ChatFn: func(context.Context, app.Principal, chat.Request) (app.Turn, error) {
		panic("boom with private-marker")
	}})
	rec := post(h, withMessages(`[{"role":"user","content":"body-content-marker"}]`))
	is.Equal(rec.Code, http.StatusInternalServerError)                // a panic is a 500
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "internal_error") // internal_error
	is.True(strings.Contains(logs.String(), "handler panic"))         // it is logged
	is.True(!strings.Contains(logs.String(), "body-content-marker"))  // without the request body
	is.True(!strings.Contains(logs.String(), "private-marker"))       // and with the panic value redacted
}

func TestAccessLogHasOnlySafeFields(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, logs := newServer(t, returning(script(app.Delta{Text: "answer-marker"}, app.Delta{Finish: app.FinishStop}), nil))
	rec := post(h, withFields(`,"stream":true`))
	is.Equal(rec.Code, http.StatusOK) // served
	var access map[string]any
	for _, l := range logs.Lines(t) {
		if l["msg"] == "request" {
			access = l
		}
	}
	is.True(access != nil) // one access line
	keys := map[string]bool{}
	for k := range access {
		keys[k] = true
	}
	is.Equal(keys, map[string]bool{"time": true, "level": true, "msg": true, "request_id": true, "method": true, "path": true, "status": true, "code": true, "duration_ms": true, "stream": true, "bytes": true, "principal_slot": true}) // exactly the safe fields
	is.Equal(access["principal_slot"], "default")                                                                                                                                                                                         // the slot name, not the key
	is.Equal(access["stream"], true)                                                                                                                                                                                                      // the stream flag
	is.Equal(access["bytes"], float64(rec.Body.Len()))                                                                                                                                                                                    // bytes out
	is.True(!strings.Contains(logs.String(), "answer-marker"))                                                                                                                                                                            // no content
	is.True(!strings.Contains(logs.String(), "hi"))                                                                                                                                                                                       // no request body
}

func TestNoAPIKeyInAnyResponseOrLogLine(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	wrong := "pmg-WRONG-secret-9876543210"
	h, logs := newServer(t, returning(script(errs.New(errs.UpstreamAuthFailed)), nil))
	var bodies []string
	for _, r := range []*http.Request{
		chatRequest(withFields("")),
		chatRequest(withFields(`,"stream":true`)),
		chatRequest(`{`),
		httptest.NewRequest(http.MethodGet, "/health", nil),
		httptest.NewRequest(http.MethodGet, "/v1/models", nil),
	} {
		rec := serve(h, r)
		bodies = append(bodies, rec.Body.String())
		for k, vs := range rec.Header() {
			bodies = append(bodies, k+": "+strings.Join(vs, ","))
		}
	}
	bad := chatRequest(withFields(""))
	bad.Header.Set("Authorization", "Bearer "+wrong)
	rec := serve(h, bad)
	bodies = append(bodies, rec.Body.String())
	all := strings.Join(bodies, "\n") + logs.String()
	is.True(!strings.Contains(all, apiKey))               // the configured key never appears
	is.True(!strings.Contains(all, wrong))                // nor a presented wrong key
	is.True(!strings.Contains(all, string(principalKey))) // nor the principal key
}
