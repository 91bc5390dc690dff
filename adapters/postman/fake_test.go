package postman_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

const okStream = "data: {\"eventType\":\"textChunk\",\"data\":{\"textContent\":\"ok\"}}\n\n" +
	"data: {\"eventType\":\"usage\",\"data\":{\"totalTokens\":1}}\n\ndata: [DONE]\n\n"

// capture records the requests a fake receives.
type capture struct {
	mu   sync.Mutex
	reqs []captured
}

type captured struct {
	host   string
	path   string
	header http.Header
	body   []byte
}

func (c *capture) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, captured{host: r.Host, path: r.URL.Path, header: r.Header.Clone(), body: b})
		c.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		next.ServeHTTP(w, r)
	})
}

func (c *capture) all() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reqs)
}

func headerNames(h http.Header) []string {
	var names []string
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func TestHeadersAreExactlyTheStrategysAllowlist(t *testing.T) {
	t.Parallel()
	cases := []struct {
		strategy string
		names    []string
	}{
		{"web_session", []string{"Accept", "Content-Length", "Content-Type", "Cookie", "Origin", "Referer", "User-Agent", "X-Pstmn-Req-Service"}},
		{"access_token", []string{"Accept", "Content-Length", "Content-Type", "User-Agent", "X-Access-Token", "X-Pstmn-Req-Service"}},
	}
	for _, c := range cases {
		t.Run(c.strategy, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			var cap capture
			f := newFakeTLS(t, cap.handler(sseHandler(okStream)))
			cl := f.client(t, c.strategy, postman.WithRedactedSecrets(downstreamKey))
			for range 2 {
				_, d, err := open(t, cl, userText("hi"))
				is.NoErr(err)           // the fake answers a stream
				is.Equal(d.err, io.EOF) // which completes
			}
			reqs := cap.all()
			is.Equal(len(reqs), 2) // one request per call, never a retry
			for _, r := range reqs {
				h := r.header
				is.Equal(headerNames(h), c.names)                            // exactly the allowlisted headers
				is.Equal(h.Get("Content-Type"), "application/json")          // JSON body
				is.Equal(h.Get("Accept"), "text/event-stream")               // SSE answer
				is.Equal(h.Get("X-Pstmn-Req-Service"), "agent-mode-service") // the service header
				is.Equal(len(h.Values("Authorization")), 0)                  // never an Authorization header
				for _, vs := range h {
					for _, v := range vs {
						is.True(!strings.Contains(v, downstreamKey)) // the downstream key is never forwarded
					}
				}
				if c.strategy == "web_session" {
					is.Equal(h.Values("Cookie"), []string{"postman.sid=" + cookie}) // the one session cookie
					is.Equal(len(h.Values("X-Access-Token")), 0)                    // no token on web_session
					is.Equal(h.Get("Origin"), "https://"+webHost)                   // Origin derived from the subdomain
					is.Equal(h.Get("Referer"), "https://"+webHost+"/")              // Referer derived from the subdomain
					is.Equal(r.host, webHost)                                       // the exact host
					is.Equal(r.path, "/_gw/chat")                                   // the exact path
				} else {
					is.Equal(h.Values("X-Access-Token"), []string{token}) // the one token
					is.Equal(len(h.Values("Cookie")), 0)                  // no cookie on access_token
					is.Equal(r.path, "/_gw/chat")                         // the configured path
				}
			}
		})
	}
}

func TestBodyUsesOnlyConfigurationConstantsAndNormalizedInput(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{"web_session", "access_token"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			var cap capture
			f := newFakeTLS(t, cap.handler(sseHandler(okStream)))
			hostile := `hi","platform":"DESKTOP_MACOS","conversationId":"conv-evil","workspaceId":"evil","selectedModel":"X"} postman.sid=abc`
			req := userText(hostile)
			req.Chat.Tools = []chat.Tool{{Name: "t1", Description: `"workspaceId":"evil"`, Parameters: []byte(`{"type":"object","properties":{"workspaceId":{"type":"string"}}}`), UpstreamParameters: []byte(`{"type":"object","properties":{"workspaceId":{"type":"string"}}}`)}}
			_, _, err := open(t, f.client(t, strategy), req)
			is.NoErr(err) // sent
			var body struct {
				Input struct {
					ChatType       string  `json:"chatType"`
					Query          string  `json:"query"`
					ConversationID *string `json:"conversationId"`
					Product        string  `json:"product"`
				} `json:"input"`
				Platform         string `json:"platform"`
				MandatoryContext struct {
					WorkspaceID string `json:"workspaceId"`
				} `json:"mandatoryContext"`
				DevModeOptions struct {
					SelectedModel string `json:"selectedModel"`
				} `json:"devModeOptions"`
			}
			reqs := cap.all()
			is.Equal(len(reqs), 1)                                     // one request
			is.NoErr(json.Unmarshal(reqs[0].body, &body))              // valid JSON
			is.Equal(body.Input.ChatType, "USER_QUERY")                // constant
			is.Equal(body.Input.Query, hostile)                        // the user text, verbatim, only in query
			is.True(body.Input.ConversationID == nil)                  // a fresh turn has no conversation
			is.Equal(body.Input.Product, "workspace_v12")              // constant
			is.Equal(body.Platform, "WEB")                             // constant
			is.Equal(body.MandatoryContext.WorkspaceID, workspace)     // from the configuration
			is.Equal(body.DevModeOptions.SelectedModel, upstreamModel) // from the model mapping
		})
	}
}

func TestRedirectIsRejectedAndNotFollowed(t *testing.T) {
	t.Parallel()
	var targetHits atomic.Int32
	target := newFakeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
		sseHandler(okStream)(w, r)
	}))
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, strategy := range []string{"web_session", "access_token"} {
			t.Run(fmt.Sprintf("%s/%d", strategy, status), func(t *testing.T) {
				is := is.New(t)
				f := newFakeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, target.srv.URL+"/_gw/chat", status)
				}))
				_, _, err := open(t, f.client(t, strategy), userText("hi"))
				is.True(errs.Has(err, errs.UpstreamRedirectRejected)) // any 3xx is refused
				is.True(!errors.Is(err, ports.ErrNotSent))            // the request did reach the first host
			})
		}
	}
	is := is.New(t)
	is.Equal(targetHits.Load(), int32(0)) // the redirect target never received anything
}

// statusHandler answers status with body and headers.
func statusHandler(status int, contentType, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestStatusClasses(t *testing.T) {
	t.Parallel()
	const jsonCT = "application/json"
	cases := []struct {
		name       string
		status     int
		ct, body   string
		web, token errs.Code
	}{
		{"401", 401, jsonCT, `{"error":"Unauthorized"}`, errs.UpstreamWebSessionAuthFailed, errs.UpstreamAuthFailed},
		{"403", 403, jsonCT, `{"error":"Forbidden"}`, errs.UpstreamWebSessionAuthFailed, errs.UpstreamAuthFailed},
		{"403 with a quota text is still auth", 403, jsonCT, `monthly AI credit limit`, errs.UpstreamWebSessionAuthFailed, errs.UpstreamAuthFailed},
		{"429", 429, jsonCT, `{}`, errs.UpstreamRateLimited, errs.UpstreamRateLimited},
		{"402", 402, jsonCT, `{}`, errs.UpstreamQuotaExhausted, errs.UpstreamQuotaExhausted},
		{"400", 400, jsonCT, `{"error":"bad"}`, errs.UpstreamRequestRejected, errs.UpstreamRequestRejected},
		{"409", 409, jsonCT, `{}`, errs.UpstreamRequestRejected, errs.UpstreamRequestRejected},
		{"413", 413, jsonCT, `{}`, errs.UpstreamRequestRejected, errs.UpstreamRequestRejected},
		{"422", 422, jsonCT, `{}`, errs.UpstreamRequestRejected, errs.UpstreamRequestRejected},
		{"400 with a quota phrase", 400, jsonCT, `{"error":{"message":"USAGE_LIMIT_EXCEEDED"}}`, errs.UpstreamQuotaExhausted, errs.UpstreamQuotaExhausted},
		{"500", 500, jsonCT, `{}`, errs.UpstreamServerError, errs.UpstreamServerError},
		{"502", 502, "text/html", `<html>bad gateway</html>`, errs.UpstreamServerError, errs.UpstreamServerError},
		{"503 with a quota phrase", 503, "text/plain", `Enable pay-as-you-go to continue`, errs.UpstreamQuotaExhausted, errs.UpstreamQuotaExhausted},
		{"500 with a rejection text", 500, jsonCT, `{"message":"Agent Mode accepts upto 10000 characters as input."}`, errs.UpstreamRequestRejected, errs.UpstreamRequestRejected},
		{"404", 404, jsonCT, `{}`, errs.UpstreamStatusError, errs.UpstreamStatusError},
		{"418", 418, "", ``, errs.UpstreamStatusError, errs.UpstreamStatusError},
		{"200 JSON", 200, jsonCT, `{"error":{"message":"Agent Mode is temporarily unavailable"}}`, errs.UpstreamContentTypeError, errs.UpstreamContentTypeError},
		{"200 without content type", 200, "", okStream, errs.UpstreamContentTypeError, errs.UpstreamContentTypeError},
		{"200 HTML", 200, "text/html; charset=utf-8", `<html></html>`, errs.UpstreamContentTypeError, errs.UpstreamContentTypeError},
		{"204", 204, "", ``, errs.UpstreamContentTypeError, errs.UpstreamContentTypeError},
		{"200 event stream with charset", 200, "text/event-stream; charset=utf-8", okStream, "", ""},
	}
	for _, c := range cases {
		for _, strategy := range []string{"web_session", "access_token"} {
			t.Run(strategy+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				is := is.New(t)
				f := newFakeTLS(t, statusHandler(c.status, c.ct, c.body))
				want := c.token
				if strategy == "web_session" {
					want = c.web
				}
				s, d, err := open(t, f.client(t, strategy), userText("hi"))
				if want == "" {
					is.NoErr(err)           // an event stream opens
					is.Equal(d.err, io.EOF) // and completes
					return
				}
				is.True(s == nil)                          // no stream
				is.Equal(errs.CodeOf(err), want)           // the status class
				is.True(!errors.Is(err, ports.ErrNotSent)) // a response means the request was sent
				refused := c.status >= 300 && c.status < 500
				is.Equal(errors.Is(err, ports.ErrNotAccepted), refused)         // only a redirect or 4xx proves the upstream refused it unprocessed
				is.True(!strings.Contains(err.Error(), c.body) || c.body == "") // the body is never reflected
			})
		}
	}
}

func TestRetryAfterParsingIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 12, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		header string
		want   time.Duration
	}{
		{"", 30 * time.Second},
		{"7", 7 * time.Second},
		{"1", time.Second},
		{"0", time.Second},
		{"3600", time.Hour},
		{"3601", time.Hour},
		{"99999999999999999999999", time.Hour},
		{"-5", 30 * time.Second},
		{"1.5", 30 * time.Second},
		{" 7", 30 * time.Second},
		{"soon", 30 * time.Second},
		{now.Add(120 * time.Second).Format(http.TimeFormat), 120 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), time.Second},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), time.Hour},
		{now.Add(90 * time.Second).Format(time.RFC850), 90 * time.Second},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.header), func(t *testing.T) {
			is := is.New(t)
			is.Equal(postman.ParseRetryAfter(c.header, now), c.want) // seconds or HTTP date, 1 s–1 h, default 30 s
		})
	}
}

func TestRateLimitedErrorExposesRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 12, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		header string
		want   time.Duration
	}{
		{"", 30 * time.Second},
		{"12", 12 * time.Second},
		{now.Add(5 * time.Minute).Format(http.TimeFormat), 5 * time.Minute},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.header), func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			var h []string
			if c.header != "" {
				h = []string{"Retry-After", c.header}
			}
			f := newFakeTLS(t, statusHandler(429, "application/json", `{}`, h...))
			_, _, err := open(t, f.client(t, "access_token", postman.WithClock(func() time.Time { return now })), userText("hi"))
			is.True(errs.Has(err, errs.UpstreamRateLimited)) // 429
			d, ok := postman.RetryAfter(err)
			is.True(ok)         // the delay is attached
			is.Equal(d, c.want) // and bounded
			_, ok = postman.RetryAfter(errs.New(errs.UpstreamServerError))
			is.True(!ok) // other errors carry none
		})
	}
}

// leakyHandler echoes every credential it can in its answers.
func leakyHandler(mode string) http.HandlerFunc {
	secrets := fmt.Sprintf("cookie=%s token=%s postman.sid=%s Bearer sk-live-LEAKED x-access-token: %s Authorization: Bearer %s", cookie, token, cookie, token, downstreamKey)
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		esc, _ := json.Marshal(secrets)
		switch mode {
		case "401", "400", "500", "429":
			status := map[string]int{"401": 401, "400": 400, "500": 500, "429": 429}[mode]
			statusHandler(status, "application/json", `{"error":{"message":`+string(esc)+`}}`)(w, r)
		case "json200":
			statusHandler(200, "application/json", `{"error":{"message":`+string(esc)+`}}`)(w, r)
		case "failure":
			sseHandler("data: {\"eventType\":\"textChunk\",\"data\":{\"textContent\":\"ok\"}}\n\n"+
				"data: {\"eventType\":\"failure\",\"data\":{\"errorType\":\"FORBIDDEN\",\"userMessage\":"+string(esc)+",\"message\":"+string(esc)+"}}\n\n")(w, r)
		case "error":
			sseHandler("data: {\"eventType\":\"error\",\"data\":{\"error\":{\"message\":"+string(esc)+"},\"code\":"+string(esc)+"}}\n\n")(w, r)
		case "unknown":
			sseHandler("data: {\"eventType\":"+string(esc)+",\"data\":{}}\n\n")(w, r)
		}
	}
}

func TestSecretsNeverLeakIntoErrorsLogsOrEvents(t *testing.T) {
	t.Parallel()
	forbidden := []string{cookie, token, downstreamKey, "sk-live-LEAKED"}
	for _, mode := range []string{"401", "400", "500", "429", "json200", "failure", "error", "unknown"} {
		for _, strategy := range []string{"web_session", "access_token"} {
			t.Run(strategy+"/"+mode, func(t *testing.T) {
				t.Parallel()
				is := is.New(t)
				var logs logBuffer
				f := newFakeTLS(t, leakyHandler(mode))
				c := f.client(t, strategy, postman.WithLogger(newLogger(&logs)), postman.WithRedactedSecrets(downstreamKey))
				s, d, err := open(t, c, userText("hi"))
				if err == nil {
					err = d.err
				}
				is.True(err != nil && err != io.EOF) // every mode fails
				var seen []string
				seen = append(seen, err.Error(), errs.Redact(err), fmt.Sprintf("%+v", err), fmt.Sprintf("%v", err), logs.String())
				for _, ev := range d.events {
					seen = append(seen, fmt.Sprintf("%+v", ev))
					if ev.ToolCall != nil {
						seen = append(seen, fmt.Sprintf("%+v", *ev.ToolCall))
					}
				}
				if s != nil {
					label, _ := s.ModelObserved()
					seen = append(seen, s.ConversationID(), label)
				}
				for _, text := range seen {
					for _, secret := range forbidden {
						is.True(!strings.Contains(text, secret)) // no secret in errors, logs or events
					}
				}
				is.True(strings.Contains(logs.String(), `"code":"`+string(errs.CodeOf(err))+`"`)) // the log names the stable code
			})
		}
	}
}

type ridKey struct{}

// ridHandler stands in for the process logger's request-id handler: it adds
// the request id a context carries under ridKey.
type ridHandler struct{ slog.Handler }

func (h ridHandler) Handle(ctx context.Context, r slog.Record) error {
	if id, ok := ctx.Value(ridKey{}).(string); ok {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func TestLogsCarryOnlyTheAllowedFields(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	var logs logBuffer
	emu := startEmu(t)
	// The process logger attaches the request id of a record's context; the
	// adapter must log every record of a request with that request's context.
	c := webClient(t, emu, nil, postman.WithLogger(slog.New(ridHandler{newLogger(&logs).Handler()})))
	ctx := context.WithValue(context.Background(), ridKey{}, "req-42")
	for _, text := range []string{"hello secret-user-text", "hello secret-user-text #scenario=failure_after_text", "#scenario=rate_limited"} {
		s, err := c.Open(ctx, userText(text))
		if err == nil {
			drain(t, s)
			_ = s.Close()
		}
	}
	allowed := map[string]bool{"time": true, "level": true, "msg": true, "request_id": true, "strategy": true, "status": true,
		"code": true, "retry_after_s": true, "event_type": true, "bytes_in": true, "output_bytes": true, "argument_bytes": true,
		"model_observed": true, "model_match": true,
		// the diagnosis and the debug lifecycle
		"cause": true, "upstream_error_type": true, "hint": true, "chat_type": true, "body_bytes": true, "written": true,
		"headers_ms": true, "event_kind": true, "rule": true, "row": true, "state": true,
		// the plan the service reported, and a warning threshold it crossed
		"credit_report": true, "threshold_percent": true, "used_ratio": true, "usage_state": true, "reported_at": true, "cycle_end": true}
	var lines, debug, credit []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, `"msg":"`+thresholdMsg+`"`) {
			credit = append(credit, line)
		} else if strings.Contains(line, `"level":"DEBUG"`) {
			debug = append(debug, line)
		} else {
			lines = append(lines, line)
		}
	}
	is.Equal(len(lines), 3)  // one record per request
	is.Equal(len(credit), 1) // and the plan's 50 % threshold, once
	// at debug level: "sent" for each request, "first event" and "completion"
	// for each of the two that became streams
	is.Equal(len(debug), 7)
	is.Equal(strings.Count(strings.Join(debug, "\n"), `"msg":"upstream request sent"`), 3)
	is.Equal(strings.Count(strings.Join(debug, "\n"), `"msg":"completion"`), 2)
	for _, line := range append(append(lines, debug...), credit...) {
		var rec map[string]any
		is.NoErr(json.Unmarshal([]byte(line), &rec)) // JSON records
		for k := range rec {
			is.True(allowed[k]) // only the allowed fields
		}
		is.Equal(rec["request_id"], "req-42")                // the request id from the context
		is.Equal(rec["strategy"], "web_session")             // the strategy
		is.True(!strings.Contains(line, "conv-"))            // no conversation id
		is.True(!strings.Contains(line, upstreamModel))      // no model label
		is.True(!strings.Contains(line, "secret-user-text")) // no user content
	}
	is.True(strings.Contains(lines[1], `"code":"upstream_failure"`)) // the failure's stable code
	is.True(strings.Contains(lines[2], `"retry_after_s":7`))         // the bounded retry-after
	is.True(strings.Contains(lines[0], `"model_match":true`))        // the model observation as booleans
}
