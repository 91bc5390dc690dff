package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
)

// listen serves h behind a Listener capped at max on a loopback port.
func listen(t *testing.T, h http.Handler, max int) (*httpapi.Listener, string) {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := httpapi.NewListener(tcp, max, nil)
	srv := httpapi.NewHTTPServer(h, ln, nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return ln, tcp.Addr().String()
}

// keepAlive opens a connection and completes one GET /health on it, leaving
// it idle; it returns the connection and its reader.
func keepAlive(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	getOnConn(t, c, br)
	return c, br
}

func getOnConn(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	fmt.Fprint(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET /health: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /health: %d", resp.StatusCode)
	}
}

func TestIdleKeepAliveConnectionsMakeRoomAtTheCap(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.AllowedHosts = nil })
	ln, addr := listen(t, h, 4)
	var conns []net.Conn
	var readers []*bufio.Reader
	for range 4 {
		c, br := keepAlive(t, addr)
		conns, readers = append(conns, c), append(readers, br)
	}
	is.Equal(ln.Open(), 4)
	for range 8 { // each new client takes the place of the longest-idle one
		keepAlive(t, addr)
		is.True(ln.Open() <= 4) // never more than the cap
	}
	_ = conns[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := readers[0].ReadByte()
	is.True(err != nil) // the oldest idle connection was closed by the gateway
}

// A connection waiting at the cap takes the place of a busy one as soon as
// that one turns idle, not when the idle timeout (30 s) closes it.
func TestAWaitingConnectionTakesThePlaceOfOneThatTurnsIdle(t *testing.T) {
	is := is.New(t)
	release, started := make(chan struct{}), make(chan struct{})
	svc := &fakeService{ChatFn: func(ctx context.Context, _ app.Principal, _ chat.Request) (app.Turn, error) {
		close(started)
		<-release
		return script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), nil
	}}
	h, _ := newServer(t, svc, func(c *httpapi.Config) { c.AllowedHosts = nil })
	ln, addr := listen(t, h, 1)
	busy, err := net.Dial("tcp", addr)
	is.NoErr(err)
	t.Cleanup(func() { busy.Close() })
	_ = busy.SetDeadline(time.Now().Add(10 * time.Second))
	body := withFields("")
	fmt.Fprintf(busy, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", apiKey, len(body), body)
	<-started
	second := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", addr) // accepted by the kernel; waits for room
		if err != nil {
			second <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // well below the idle timeout
		fmt.Fprint(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("the second connection was served while the first was busy at a cap of 1: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	br := bufio.NewReader(busy)
	resp, err := http.ReadResponse(br, nil)
	is.NoErr(err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 200) // the busy one is answered and kept alive
	is.NoErr(<-second)             // the waiting one is served once it is idle
	_, err = br.ReadByte()
	is.True(err != nil) // and the idle one was closed for it
	is.True(ln.Open() <= 1)
}

func TestBusyConnectionsMakeNewOnesWaitNotFail(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	svc := &fakeService{ChatFn: func(ctx context.Context, _ app.Principal, _ chat.Request) (app.Turn, error) {
		started.Done()
		<-release
		return script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), nil
	}}
	h, _ := newServer(t, svc, func(c *httpapi.Config) { c.AllowedHosts = nil })
	ln, addr := listen(t, h, 2)
	busy := func() chan int {
		out := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(withFields("")))
			req.Header.Set("Authorization", "Bearer "+apiKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
			if err != nil {
				out <- -1
				return
			}
			resp.Body.Close()
			out <- resp.StatusCode
		}()
		return out
	}
	a, b := busy(), busy()
	started.Wait()
	third := make(chan int, 1)
	go func() {
		c, err := net.Dial("tcp", addr) // the kernel accepts; the gateway does not serve it yet
		if err != nil {
			third <- -1
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			third <- -1
			return
		}
		third <- resp.StatusCode
	}()
	select {
	case <-third:
		t.Fatal("a third connection was served while two were busy at a cap of 2")
	case <-time.After(300 * time.Millisecond):
	}
	is.Equal(ln.Open(), 2) // the cap holds
	close(release)
	is.Equal(<-a, 200)
	is.Equal(<-b, 200)
	is.Equal(<-third, 200) // served as soon as a connection closed
}

func TestNetHTTPsOwnAnswersHaveTheOpenAIShape(t *testing.T) {
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.AllowedHosts = nil })
	_, addr := listen(t, h, 8)
	cases := map[string]struct {
		raw    string
		status int
		code   string
	}{
		"431": {"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + strings.Repeat("b", 1<<21) + "\r\n\r\n", 431, "request_too_large"},
		"400": {"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n", 400, "invalid_request"},
		"417": {"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: tea\r\n\r\n", 417, "invalid_request"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			conn, err := net.Dial("tcp", addr)
			is.NoErr(err)
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			go func() { _, _ = io.WriteString(conn, c.raw) }()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			is.NoErr(err)
			is.Equal(resp.StatusCode, c.status)
			is.Equal(resp.Header.Get("Content-Type"), "application/json")
			is.True(resp.Header.Get("x-request-id") != "")
			is.Equal(resp.Header.Get("x-should-retry"), "false") // written by the one error writer, like every refusal
			is.True(resp.Close)                                  // Connection: close
			body, _ := io.ReadAll(resp.Body)
			is.Equal(resp.ContentLength, int64(len(body)))
			e := decodeError(t, body)
			is.Equal(e.Code, c.code)
			is.Equal(len(e.Keys), 4) // message, type, param, code
			is.Equal(e.param(), "<null>")
		})
	}
}

func TestEveryRouteRefusesAForeignHostOrOrigin(t *testing.T) {
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.AllowedHosts = []string{"gw.example"} })
	routes := []string{"GET /health", "GET /v1/models", "POST /v1/chat/completions", "GET /nope", "DELETE /health"}
	for _, route := range routes {
		method, path, _ := strings.Cut(route, " ")
		t.Run(route, func(t *testing.T) {
			is := is.New(t)
			for host, want := range map[string]int{"evil.example": 421, "evil.example:80": 421, "localhost.evil.example": 421, "": 421,
				"gw.example.evil": 421, "128.0.0.1": 421} {
				r := chatRequest(withFields(""))
				r.Method, r.URL.Path, r.Host = method, path, host
				rec := serve(h, r)
				is.Equal(rec.Code, want)
				is.Equal(decodeError(t, rec.Body.Bytes()).Code, "host_not_allowed")
				is.True(rec.Header().Get("x-request-id") != "")
			}
			for _, origin := range []string{"http://evil.example", "https://evil.example", "null", "file://", "http://gw.example.evil"} {
				r := chatRequest(withFields(""))
				r.Method, r.URL.Path, r.Host = method, path, "127.0.0.1:8788"
				r.Header.Set("Origin", origin)
				rec := serve(h, r)
				is.Equal(rec.Code, 403)
				is.Equal(decodeError(t, rec.Body.Bytes()).Code, "origin_not_allowed")
			}
			for _, host := range []string{"localhost", "LocalHost:1", "127.0.0.1", "127.9.9.9:80", "[::1]", "[::1]:8788", "gw.example", "GW.EXAMPLE:443", "gw.example."} {
				r := chatRequest(withFields(""))
				r.Method, r.URL.Path, r.Host = method, path, host
				r.Header.Set("Origin", "http://"+host)
				rec := serve(h, r)
				is.True(rec.Code != 421 && rec.Code != 403) // a served name passes
				for k := range rec.Header() {
					is.True(!strings.HasPrefix(strings.ToLower(k), "access-control-")) // never a CORS header
				}
			}
		})
	}
}

func TestAnUnspecifiedListenAddressServesEveryIPLiteralButNoForeignName(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.AllowedHosts = []string{"0.0.0.0"} })
	for host, ok := range map[string]bool{"192.168.1.20:8788": true, "[fe80::1]:8788": true, "evil.example": false} {
		r := httptestGet("/health")
		r.Host = host
		rec := serve(h, r)
		is.Equal(rec.Code == 200, ok)
	}
}

func TestParseAllowedHosts(t *testing.T) {
	is := is.New(t)
	got, ok := httpapi.ParseAllowedHosts(" gw.internal, [::1] ,10.0.0.1,Example.COM.,")
	is.True(ok)
	is.Equal(got, []string{"gw.internal", "::1", "10.0.0.1", "example.com"})
	for _, bad := range []string{"*.example.com", "gw.internal:8788", "http://gw", "a b", "-x.example", strings.Repeat("a", 64) + ".example"} {
		_, ok := httpapi.ParseAllowedHosts(bad)
		is.True(!ok) // no wildcard, port, scheme, space or invalid label
	}
}

func TestUncleanPathsAre404NotRedirects(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	for _, p := range []string{"//health", "/v1//models", "/v1/./models", "/v1/x/../models", "/health/", "/v1/models/"} {
		rec := serve(h, httptestGet(p))
		is.Equal(rec.Code, 404)
		is.Equal(rec.Header().Get("Location"), "")
		is.Equal(decodeError(t, rec.Body.Bytes()).Code, "invalid_request")
	}
}

func httptestGet(path string) *http.Request {
	r, _ := http.NewRequest("GET", "http://example.com/", nil)
	r.URL.Path = path
	r.RequestURI = path
	r.Header.Set("Authorization", "Bearer "+apiKey)
	return r
}

// gateHandler is a slog handler whose access lines ("msg":"request") wait
// until open is closed; it records the messages it handled.
type gateHandler struct {
	open chan struct{}
	mu   sync.Mutex
	msgs []string
}

func (g *gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (g *gateHandler) WithAttrs([]slog.Attr) slog.Handler       { return g }
func (g *gateHandler) WithGroup(string) slog.Handler            { return g }
func (g *gateHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "request" {
		<-g.open
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.msgs = append(g.msgs, r.Message)
	return nil
}

func (g *gateHandler) count(msg string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, m := range g.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// A client gets the whole response — a JSON answer, a stream to its last
// chunk — before the request's access line is written: the line never
// delays an answer. It is written before the next request on the
// connection is read, and exactly once.
func TestTheAccessLineIsWrittenAfterTheResponse(t *testing.T) {
	is := is.New(t)
	gate := &gateHandler{open: make(chan struct{})}
	h := httpapi.NewServer(testConfig(), returning(script(app.Delta{Text: "hi"}, app.Delta{Finish: app.FinishStop}), nil), slog.New(gate))
	_, addr := listen(t, h, 4)
	c, err := net.Dial("tcp", addr)
	is.NoErr(err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	body := streamRequest(false)
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", apiKey, len(body), body)
	resp, err := http.ReadResponse(br, nil)
	is.NoErr(err)
	all, err := io.ReadAll(resp.Body) // to the terminating chunk, while the access line waits
	is.NoErr(err)
	is.True(strings.HasSuffix(string(all), "data: [DONE]\n\n"))
	is.Equal(gate.count("request"), 0) // not written yet: the response did not wait for it
	close(gate.open)
	getOnConn(t, c, br)                 // the next request on the connection
	is.True(gate.count("request") >= 1) // the first line was written before it was read
	deadline := time.Now().Add(5 * time.Second)
	for gate.count("request") < 2 && time.Now().Before(deadline) { // the /health line follows its response
		time.Sleep(time.Millisecond)
	}
	is.Equal(gate.count("request"), 2) // one line per request
}

// A reader of the log waits for the answered requests' access lines with
// Settled instead of polling: it returns while none is pending, waits while
// one is, and returns as soon as the line is written.
func TestSettledWaitsForTheAccessLinesStillToBeWritten(t *testing.T) {
	is := is.New(t)
	gate := &gateHandler{open: make(chan struct{})}
	h := httpapi.NewServer(testConfig(), returning(script(app.Delta{Text: "hi"}, app.Delta{Finish: app.FinishStop}), nil), slog.New(gate))
	ln, addr := listen(t, h, 4)
	is.NoErr(ln.Settled(t.Context())) // nothing answered yet
	c, err := net.Dial("tcp", addr)
	is.NoErr(err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	body := streamRequest(false)
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", apiKey, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	is.NoErr(err)
	_, err = io.ReadAll(resp.Body)
	is.NoErr(err)

	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	is.Equal(ln.Settled(short), context.DeadlineExceeded) // the line is still to be written
	is.NoErr(c.Close())                                   // the connection's end runs the request's after-response work, held at the log
	time.AfterFunc(100*time.Millisecond, func() { close(gate.open) })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	is.NoErr(ln.Settled(ctx))          // woken when the line was written
	is.Equal(gate.count("request"), 1) // written before Settled returned
}
