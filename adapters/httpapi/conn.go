package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pmgate/pmgate/domain/errs"
)

// Connection-level defaults of the HTTP server.
const (
	// DefaultMaxConnections is MAX_CONNECTIONS when unset.
	DefaultMaxConnections = 256
	// readHeaderTimeout bounds the request line and headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes a keep-alive connection that carries no request for
	// this long. SDK clients reuse a connection within seconds (the official
	// Node SDK's pool drops idle sockets after a few seconds, Go's after 90 s
	// and reconnects transparently), so 30 s keeps reuse for agents that send
	// turn after turn without letting idle sockets pile up.
	idleTimeout = 30 * time.Second
)

// NewHTTPServer returns the http.Server for the ingress handler h behind l:
// header timeout, idle timeout, the listener's connection accounting, and no
// built-in answer of net/http that bypasses the handler (OPTIONS * reaches
// the handler, which answers 404 in the OpenAI shape).
func NewHTTPServer(h http.Handler, l *Listener, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:                      h,
		ReadHeaderTimeout:            readHeaderTimeout,
		IdleTimeout:                  idleTimeout,
		DisableGeneralOptionsHandler: true,
		ConnState:                    l.connState,
		ConnContext:                  connContext,
		ErrorLog:                     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Listener caps the open client connections at max. A connection accepted
// while max are open first takes the place of the connection that has been
// idle (keep-alive, between requests) the longest, which is closed; when none
// is idle, it waits until one closes or turns idle (and is then closed in its
// turn), and the connections behind it wait in
// the kernel's accept queue (bounded by the listen backlog) — nothing is
// accepted, read or allocated for them until then. It also rewrites the
// plain-text answers net/http writes on its own (malformed request 400,
// headers too large 431, unsupported transfer encoding 501, unsupported
// Expect 417) into the OpenAI error shape with an x-request-id.
type Listener struct {
	net.Listener
	max int
	log *slog.Logger

	pending atomic.Int64 // afterResponse work not run yet
	// settled wakes the callers of Settled when pending reaches 0; waiting
	// tells a finishing request that there is someone to wake (one atomic
	// load on the request path otherwise).
	settleMu sync.Mutex
	settled  []chan struct{}
	waiting  atomic.Bool

	mu   sync.Mutex
	open int
	idle map[*conn]time.Time // idle since
	// wake tells a waiting Accept that a connection closed or turned idle.
	wake chan struct{}
	done chan struct{}
	once sync.Once
}

// NewListener wraps ln; max ≤ 0 takes DefaultMaxConnections. A nil logger
// discards logs.
func NewListener(ln net.Listener, max int, log *slog.Logger) *Listener {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Listener{Listener: ln, max: max, log: log, idle: map[*conn]time.Time{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		l.mu.Lock()
		if l.open < l.max {
			l.open++
			l.mu.Unlock()
			return &conn{Conn: c, l: l}, nil
		}
		victim := l.oldestIdleLocked()
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close()
			continue
		}
		select {
		case <-l.wake:
		case <-l.done:
			_ = c.Close()
			return nil, net.ErrClosed
		}
	}
}

// Close implements net.Listener; a blocked Accept returns.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Open returns the number of open client connections.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (l *Listener) oldestIdleLocked() *conn {
	var victim *conn
	var since time.Time
	for c, t := range l.idle {
		if victim == nil || t.Before(since) {
			victim, since = c, t
		}
	}
	delete(l.idle, victim)
	return victim
}

// connState is the http.Server hook that tells idle connections apart, and
// that runs what a request left for after its response (afterResponse).
func (l *Listener) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	if st != http.StateNew && st != http.StateActive {
		if f := c.after.Swap(nil); f != nil {
			(*f)()
			l.ran()
		}
	}
	l.mu.Lock()
	if st == http.StateIdle {
		l.idle[c] = time.Now()
	} else {
		delete(l.idle, c)
	}
	l.mu.Unlock()
	if st == http.StateIdle {
		l.signal()
	}
}

// signal wakes an Accept waiting for room, if any.
func (l *Listener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *Listener) release(c *conn) {
	l.mu.Lock()
	l.open--
	delete(l.idle, c)
	l.mu.Unlock()
	l.signal()
}

// conn is one counted client connection.
type conn struct {
	net.Conn
	l    *Listener
	once sync.Once
	// after is what the request being answered left for after its
	// response (afterResponse); run when the connection turns idle or
	// closes.
	after atomic.Pointer[func()]
}

type connKey struct{}

// connContext puts the counted connection on its requests' contexts.
func connContext(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := nc.(*conn); ok {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// afterResponse runs fn once the response to r has reached the connection:
// net/http writes a handler's last bytes (the body it buffered, a chunked
// stream's terminating chunk) only after the handler returned, so work done
// at the end of the handler — the access line, the request's metrics — would
// make every client wait for it. Over HTTP/1 on a counted connection fn runs
// when the connection turns idle (the next request on it is read only
// afterwards) or closes; elsewhere (no such connection, HTTP/2) at once.
func afterResponse(r *http.Request, fn func()) {
	if c, ok := r.Context().Value(connKey{}).(*conn); ok && r.ProtoMajor == 1 {
		c.l.pending.Add(1)
		if prev := c.after.Swap(&fn); prev != nil { // never: one request at a time
			(*prev)()
			c.l.ran()
		}
		return
	}
	fn()
}

// ran counts one request's after-response work as done, and wakes the
// callers of Settled when none is left.
func (l *Listener) ran() {
	if l.pending.Add(-1) != 0 || !l.waiting.Load() {
		return
	}
	l.settleMu.Lock()
	defer l.settleMu.Unlock()
	if l.pending.Load() != 0 {
		return
	}
	for _, ch := range l.settled {
		close(ch)
	}
	l.settled = nil
	l.waiting.Store(false)
}

// Settled returns once every answered request's after-response work (its
// access line) has run, or with ctx's error. A request whose response a
// client has read to the end is waited for until its line is written, so a
// reader of the log that calls Settled first sees that line.
func (l *Listener) Settled(ctx context.Context) error {
	l.settleMu.Lock()
	l.waiting.Store(true) // before the load: a ran that misses it sees the count we saw
	if l.pending.Load() == 0 {
		l.settleMu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	l.settled = append(l.settled, ch)
	l.settleMu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// CloseWrite lets net/http half-close after its 431 answer.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *conn) Write(p []byte) (int, error) {
	if out, ok := c.l.rewriteBuiltin(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// builtinHeaders follow the status line of every plain-text answer net/http
// writes without a handler; the gateway itself never sends text/plain.
const builtinHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// rewriteBuiltin recognizes one of net/http's own answers (the whole answer is
// one Write starting at a response boundary) and returns its OpenAI-shaped
// replacement.
func (l *Listener) rewriteBuiltin(p []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if len(p) < len(proto)+3 || !bytes.HasPrefix(p, []byte(proto)) {
		return nil, false
	}
	status, err := strconv.Atoi(string(p[len(proto) : len(proto)+3]))
	if err != nil {
		return nil, false
	}
	eol := bytes.Index(p, []byte("\r\n"))
	builtin := eol > 0 && bytes.HasPrefix(p[eol:], []byte(builtinHeaders))
	if !builtin && status != http.StatusExpectationFailed { // 417 is written through a response with no body
		return nil, false
	}
	code, detail := errs.InvalidRequest, "The request is not valid HTTP/1.1."
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		code, detail = errs.RequestTooLarge, "The request headers are too large."
	case http.StatusNotImplemented:
		detail = "The transfer encoding is not supported."
	case http.StatusExpectationFailed:
		detail = "Only Expect: 100-continue is supported."
	}
	id := newRequestID()
	a := &rawAnswer{header: http.Header{"Connection": {"close"}, "X-Request-Id": {id}}}
	writeOpenAIError(context.Background(), a, &routeError{errs.New(code), status, detail})
	a.header.Set("Content-Length", strconv.Itoa(a.body.Len()))
	var b bytes.Buffer
	b.WriteString(proto + strconv.Itoa(a.status) + " " + http.StatusText(a.status) + "\r\n")
	_ = a.header.Write(&b) // to a bytes.Buffer: cannot fail
	b.WriteString("\r\n")
	b.Write(a.body.Bytes())
	l.log.Warn("request", slog.String("request_id", id), slog.String("path", "unmatched"),
		slog.Int("status", status), slog.String("code", string(code)))
	return b.Bytes(), true
}

// rawAnswer is the http.ResponseWriter writeOpenAIError fills for a
// connection-level answer, which the connection then writes as raw bytes.
type rawAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *rawAnswer) Header() http.Header         { return a.header }
func (a *rawAnswer) WriteHeader(status int)      { a.status = status }
func (a *rawAnswer) Write(p []byte) (int, error) { return a.body.Write(p) }
