package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
)

func TestTheLongestIdleConnectionIsTheOneClosedAtTheCap(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.AllowedHosts = nil })
	_, addr := listen(t, h, 2)
	oldest, oldestR := keepAlive(t, addr)
	time.Sleep(20 * time.Millisecond) // idle since clearly apart
	newer, newerR := keepAlive(t, addr)
	time.Sleep(100 * time.Millisecond) // both are idle now (the server marks it after the answer)
	keepAlive(t, addr)                 // at the cap: one idle connection must make room
	_ = oldest.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := oldestR.ReadByte()
	is.True(errors.Is(err, io.EOF)) // the longest-idle one was closed by the gateway (not a timeout)
	getOnConn(t, newer, newerR)     // the newer one still serves
}

func TestAHighSurrogateFollowedByAnotherHighSurrogateIsRefused(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	rec := post(h, withMessages(`[{"role":"user","content":"a\ud83d\ud83db"}]`))
	is.Equal(rec.Code, http.StatusBadRequest)
	is.Equal(decodeError(t, rec.Body.Bytes()).param(), "messages[0].content")
	is.Equal(post(h, withMessages(`[{"role":"user","content":"a\ud83d\ude00b"}]`)).Code, http.StatusOK) // a real pair passes
}

func TestAnOriginOfAnotherSchemeIsRefused(t *testing.T) {
	h, _ := newServer(t, &fakeService{})
	for _, origin := range []string{"ws://localhost", "wss://localhost", "file://localhost", "ftp://127.0.0.1", "chrome-extension://localhost"} {
		t.Run(origin, func(t *testing.T) {
			is := is.New(t)
			r := chatRequest(withFields(""))
			r.Host = "localhost"
			r.Header.Set("Origin", origin)
			rec := serve(h, r)
			is.Equal(rec.Code, http.StatusForbidden)
			is.Equal(decodeError(t, rec.Body.Bytes()).Code, "origin_not_allowed")
		})
	}
}

func TestResponsesDefaultsParallelToolCallsToTrue(t *testing.T) {
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	body := `{"model":"` + model + `","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`
	r := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+apiKey)
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusOK)
	_, req := svc.Last()
	is.True(req.ParallelToolCalls) // omitted means allowed, as OpenAI documents
}

func TestEveryAdminAnswerHasTheBrowserHeadersEvenBeforeRouting(t *testing.T) {
	h, _ := newServer(t, fiveDeltas(), withAdmin(ops.NewMonitor(ops.MonitorConfig{})))
	for name, c := range map[string]struct {
		path, host, origin string
		want               int
	}{
		"foreign host":   {"/admin", "evil.example", "", 421},
		"foreign origin": {"/admin/api/overview", "localhost", "http://evil.example", 403},
		"unclean path":   {"/admin/./static/x", "localhost", "", 404},
		"dot-dot path":   {"/admin/static/../api/live", "localhost", "", 404},
		// Paths whose clean form is under /admin but which do not start with it.
		"double slash":          {"//admin", "localhost", "", 404},
		"dot segment first":     {"/./admin/api/live", "localhost", "", 404},
		"dot-dot into /admin":   {"/x/../admin", "localhost", "", 404},
		"double slash, foreign": {"//admin/static/app.js", "evil.example", "", 421},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			r := httptest.NewRequest(http.MethodGet, "http://localhost/", nil)
			r.URL.Path, r.Host = c.path, c.host
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			rec := serve(h, r)
			is.Equal(rec.Code, c.want)
			is.Equal(rec.Header().Get("X-Frame-Options"), "DENY")
			is.True(strings.Contains(rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'"))
			is.Equal(rec.Header().Get("Cache-Control"), "no-store")
			is.Equal(rec.Header().Get("X-Content-Type-Options"), "nosniff")
		})
	}
}

func TestAChunkedRequestWithAContentLengthClosesTheConnection(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.AllowedHosts = nil })
	_, addr := listen(t, h, 4)
	c, err := net.Dial("tcp", addr)
	is.NoErr(err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	body := withFields("")
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"+
		"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", apiKey, len(body), len(body), body)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	is.NoErr(err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	is.True(resp.Close) // answered with Connection: close (RFC 9112 §6.1)
	_, err = br.ReadByte()
	is.True(errors.Is(err, io.EOF)) // and closed: the smuggled request is never answered
}

func TestALogLineThatHasARequestIDGetsNoSecond(t *testing.T) {
	is := is.New(t)
	var buf lockedBuffer
	log := slog.New(httpapi.WithRequestID(slog.NewJSONHandler(&buf, nil)))
	svc := &fakeService{ChatFn: func(ctx context.Context, _ app.Principal, _ chat.Request) (app.Turn, error) {
		id := httpapi.RequestID(ctx)
		log.InfoContext(ctx, "own attribute", "request_id", id)       // the adapter's own
		log.With("request_id", id).InfoContext(ctx, "logger with it") // a logger built With it
		log.InfoContext(ctx, "plain")                                 // added once
		return script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), nil
	}}
	h, _ := newServer(t, svc)
	is.Equal(post(h, withFields("")).Code, http.StatusOK)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	is.Equal(len(lines), 3)
	for _, l := range lines {
		is.Equal(strings.Count(l, `"request_id"`), 1) // exactly once on every line
	}
}
