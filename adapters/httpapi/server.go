package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
	"github.com/pmgate/pmgate/ports"
)

// Config is what the ingress needs to know of the configuration. The wiring in
// cmd/gateway fills it from the environment (docs/CONFIGURATION.md).
//
// Zero values of MaxBodyBytes, MaxToolResultBytes, MaxConcurrent,
// RequestTimeout and BodyReadTimeout take the documented defaults (32 MiB,
// 256 KiB, 16, 120 s, 30 s). MaxTools is used as given: 0 means no tool may be
// declared.
type Config struct {
	// Keys is the live set of API key slots (PROVIDER_KEYS_FILE, reloaded by
	// the wiring). When nil, APIKeys is used as a fixed set.
	Keys               *Keyring
	APIKeys            map[string]string // slot id -> key: the fixed form (PROVIDER_API_KEY is slot "default")
	PrincipalKey       []byte            // CORRELATION_PRINCIPAL_KEY (≥32 bytes)
	Models             []string          // public model ids
	Strategy           string            // for /health
	MaxBodyBytes       int64
	MaxTools           int
	MaxToolResultBytes int
	MaxConcurrent      int
	RequestTimeout     time.Duration
	// BodyReadTimeout bounds how long the request body may take to arrive
	// (BODY_READ_TIMEOUT_MS); a slower body is 408 request_timeout.
	BodyReadTimeout time.Duration
	// AllowedHosts are the Host names and IP literals served besides the
	// loopback ones (PROVIDER_HOST and ALLOWED_HOSTS); see hostPolicy.
	AllowedHosts []string
	// ToolSchemaPolicy is TOOL_SCHEMA_POLICY; "" means toolschema.DefaultPolicy.
	ToolSchemaPolicy toolschema.Policy
	// WidenCombinators is POSTMAN_SCHEMA_COMBINATORS=widen (toolschema.Options).
	WidenCombinators bool
	// Health returns extra /health fields (may be nil), e.g. correlation
	// counts and the credit report. The three fixed fields (status, strategy, upstream_verified)
	// cannot be overridden by it.
	Health func(ctx context.Context) map[string]any
	// Monitor, when set, is told of every answered request (operator.go;
	// adapters/ops keeps the metrics and the control page's recent lists).
	Monitor Monitor
	// Metrics, when set, serves GET /metrics behind an admin key;
	// MetricsOpen (METRICS_AUTH=none) serves it without a key.
	Metrics     http.Handler
	MetricsOpen bool
	// Admin, when set (ADMIN_ENABLED), is the control page served under
	// /admin (operator.go).
	Admin ControlPage
	// Usage, when set, keeps the usage ledger of every chat request
	// (docs/USAGE.md).
	Usage *app.Usage
	// Verification reports whether the upstream was verified by a probe report
	// and the fields that go with it (time and digest, or the reason it is
	// not); nil means never verified.
	Verification func() (verified bool, fields map[string]any)
	// UsageEstimatesOff is USAGE_ESTIMATES=false: usage shows only counts
	// the upstream reported, never an estimate (chat.Estimate).
	UsageEstimatesOff bool
	// MessagesPingInterval is how often a silent Messages stream sends a
	// ping event (0: msgapi.DefaultPingInterval).
	MessagesPingInterval time.Duration
	// Readiness, when set, decides GET /readyz (probes.go); nil: always ready.
	Readiness func(ctx context.Context) Readiness
	// Tracer, when set, traces every request (the request span and its
	// admission); nil turns tracing off at the cost of a nil check.
	Tracer ports.Tracer
}

// The defaults of docs/CONFIGURATION.md for zero Config values.
const (
	defaultMaxBodyBytes       = 32 << 20
	defaultMaxToolResultBytes = 256 << 10
	defaultMaxConcurrent      = 16
	defaultRequestTimeout     = 120 * time.Second
	defaultBodyReadTimeout    = 30 * time.Second
	minPrincipalKeyBytes      = 32
)

// server holds the dependencies of the handlers. Its fields never change
// after NewServer.
type server struct {
	cfg   Config
	svc   app.ChatService
	log   *slog.Logger
	keys  *Keyring
	in    *rules.Settings // what the translations read
	sem   chan struct{}
	hosts hostPolicy
	now   func() time.Time
}

// NewServer returns the OpenAI-compatible ingress (docs/API.md) in front of
// svc. Every route is declared in routes.go.
//
// It panics on mis-wiring: a nil service, no API key slot or an empty key, or
// a principal key shorter than 32 bytes. A nil logger discards logs.
func NewServer(cfg Config, svc app.ChatService, log *slog.Logger) http.Handler {
	if svc == nil {
		panic("httpapi: nil chat service")
	}
	if cfg.Keys == nil && len(cfg.APIKeys) == 0 {
		panic("httpapi: no API key slot configured")
	}
	if cfg.Keys == nil && len(cfg.PrincipalKey) < minPrincipalKeyBytes {
		panic("httpapi: principal key shorter than 32 bytes")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = defaultMaxBodyBytes
	}
	if cfg.MaxToolResultBytes <= 0 {
		cfg.MaxToolResultBytes = defaultMaxToolResultBytes
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = defaultMaxConcurrent
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = defaultRequestTimeout
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = defaultBodyReadTimeout
	}
	s := &server{
		cfg:   cfg,
		svc:   svc,
		log:   slog.New(WithRequestID(log.Handler())),
		in:    settingsOf(cfg),
		sem:   make(chan struct{}, cfg.MaxConcurrent),
		hosts: newHostPolicy(cfg.AllowedHosts),
		now:   time.Now,
	}
	if s.keys = cfg.Keys; s.keys == nil {
		s.keys = StaticKeyring(cfg.PrincipalKey, cfg.APIKeys)
	}
	if cfg.Monitor != nil {
		cfg.Monitor.Watch(routeTemplates, func() int { return len(s.sem) }, cap(s.sem))
	}
	return s.middleware(s.routes())
}

// settingsOf are the settings of cfg that the translations read.
func settingsOf(cfg Config) *rules.Settings {
	return rules.New(rules.Settings{Models: cfg.Models, MaxTools: cfg.MaxTools, MaxToolResultBytes: cfg.MaxToolResultBytes,
		ToolSchema: toolschema.Options{Policy: cfg.ToolSchemaPolicy, WidenCombinators: cfg.WidenCombinators}})
}

// ctxKey is the type of this package's context keys.
type ctxKey struct{}

// reqInfo is the per-request record the access line, the metrics and the
// span read once the answer is done. Handlers never write it: the middleware
// makes it (the id), the route's adapter writes the route's shape, the key
// slot and what a turn did (serve, turn, from serveTurn's returned facts),
// and the one writer of an error its code (noteError). Only safe fields: no
// body, no content, no key, no upstream id.
type reqInfo struct {
	id         string
	slot       string
	code       errs.Code
	stream     bool
	model      string      // a configured public id, once the request was validated
	toolCalls  int         // tool calls shown to the client
	firstToken time.Time   // the first text or tool-call delta; zero when none
	shape      *errShape   // the route's error shape (nil: OpenAI's)
	usage      string      // how the shown usage was obtained (usageHeader's values); "" when none was shown
	notes      []slog.Attr // the groups the service's summary noted for the access line (app.Summary)
}

func infoFrom(ctx context.Context) *reqInfo {
	if ri, ok := ctx.Value(ctxKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{} // detached; writes are discarded
}

// RequestID returns the request id of a request context, or "" outside one.
// Every response carries it as x-request-id and every log line of the request
// carries it as request_id.
func RequestID(ctx context.Context) string {
	if ri, ok := ctx.Value(ctxKey{}).(*reqInfo); ok {
		return ri.id
	}
	return ""
}

// WithRequestID wraps a slog handler so that every record logged with a
// request context carries request_id, exactly once: a record (or a logger
// built With) that already has a top-level request_id keeps its own, so that
// strict JSON log pipelines, which reject duplicate keys, accept every line.
// The server wraps its own logger with it; the wiring may wrap the app's
// logger too, and wrapping twice is a no-op.
func WithRequestID(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{Handler: h}
}

const requestIDKey = "request_id"

type requestIDHandler struct {
	slog.Handler
	has     bool // a WithAttrs already added request_id at the top level
	grouped bool // inside WithGroup: an added attribute would land in the group
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" && !h.has && !h.grouped && !recordHasRequestID(r) {
		r.AddAttrs(slog.String(requestIDKey, id))
	}
	return h.Handler.Handle(ctx, r)
}

func recordHasRequestID(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == requestIDKey
		return !found
	})
	return found
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	has := h.has
	for _, a := range as {
		has = has || (!h.grouped && a.Key == requestIDKey)
	}
	return requestIDHandler{Handler: h.Handler.WithAttrs(as), has: has, grouped: h.grouped}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{Handler: h.Handler.WithGroup(name), has: h.has, grouped: h.grouped || name != ""}
}

// maxClientRequestID bounds an x-request-id the gateway adopts from a client.
const maxClientRequestID = 128

// requestID adopts the client's x-request-id when it is 1–128 visible ASCII
// characters (0x21–0x7E: no space, no control, nothing that could split a log
// line or a header), so that a caller can correlate its own logs; otherwise it
// generates 16 random bytes in hex.
func requestID(r *http.Request) string {
	if v := r.Header.Get("x-request-id"); v != "" && len(v) <= maxClientRequestID && visibleASCII(v) {
		return v
	}
	return newRequestID()
}

// newRequestID is 16 random bytes in hex.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go ≥ 1.24)
	return hex.EncodeToString(b[:])
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// recorder remembers the status and counts the bytes written, for the access
// log; Unwrap lets http.ResponseController reach the connection's Flush.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(p []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	n, err := rw.ResponseWriter.Write(p)
	rw.bytes += int64(n)
	return n, err
}

func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// middleware gives every request its id (context, x-request-id, logs), one
// access-log line with safe fields only, and recovery from handler panics.
// Before any route it refuses a Host or browser Origin that is not served
// (hostPolicy) and a path that is not in clean form (404, never a redirect).
func (s *server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		ri := &reqInfo{id: requestID(r)}
		ctx := context.WithValue(r.Context(), ctxKey{}, ri)
		var span ports.Span
		if s.cfg.Tracer != nil { // off: one nil check, nothing else
			ctx, span = s.cfg.Tracer.StartRequest(ctx, ri.id)
		}
		r = r.WithContext(ctx)
		w.Header().Set("x-request-id", ri.id)
		rw := &recorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.LogAttrs(ctx, slog.LevelError, "handler panic",
					slog.String("panic", string(redact.Sprint(v).Redact())),
					slog.String("stack", string(debug.Stack())))
				if rw.status == 0 {
					s.writeError(rw, r, errors.AssertionFailedf("httpapi: handler panic"))
				}
			}
			// The request's metrics are in before its response ends (a
			// scrape after a request counts it); its line and span may follow.
			s.observe(r, rw, ri, start)
			afterResponse(r, func() {
				s.accessLog(ctx, r, rw, ri, start)
				if span != nil {
					endRequestSpan(span, r, rw, ri)
				}
			})
		}()
		if strings.HasPrefix(r.URL.Path, pathAdmin) {
			setAdminHeaders(w.Header())
		} else if !cleanPath(r.URL.Path) && strings.HasPrefix(path.Clean(r.URL.Path), pathAdmin) {
			setAdminHeaders(w.Header()) // `//admin`, `/./admin`: refused below, still an /admin answer
		}
		// A request with a chunked body may have carried a Content-Length
		// too (net/http drops that header before any handler can see it);
		// RFC 9112 §6.1 says such a connection must be closed after the
		// answer, so that bytes after the chunked body are never read as
		// another request. Closing after every chunked request is the only
		// way to catch that case; SDKs send Content-Length, not chunks.
		if len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		err := s.checkHost(r)
		if err == nil && !cleanPath(r.URL.Path) {
			err = noRoute(r.URL.Path)
		}
		if err != nil {
			s.writeError(rw, r, err)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// cleanPath reports whether p is an absolute path in clean form: no empty,
// "." or ".." segment and no trailing slash (except "/" itself, and the
// control page's "/admin/", which a person types). net/http's mux would
// answer the others with a redirect to the cleaned path.
func cleanPath(p string) bool {
	return p == pathAdmin+"/" || p != "" && p[0] == '/' && path.Clean(p) == p
}

func (s *server) accessLog(ctx context.Context, r *http.Request, rw *recorder, ri *reqInfo, start time.Time) {
	status := rw.status
	if status == 0 {
		status = http.StatusOK
	}
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("method", r.Method),
		slog.String("path", routeOf(r)),
		slog.Int("status", status),
		slog.String("code", string(ri.code)),
		slog.Int64("duration_ms", s.now().Sub(start).Milliseconds()),
		slog.Bool("stream", ri.stream),
		slog.Int64("bytes", rw.bytes),
		slog.String("principal_slot", ri.slot),
	)
	if ri.usage != "" {
		attrs = append(attrs, slog.String("usage", ri.usage))
	}
	attrs = append(attrs, ri.notes...)
	s.log.LogAttrs(ctx, level, "request", attrs...)
}

// routeOf names the route for logs: the matched pattern's path for known
// routes and a constant otherwise, so that a client-chosen path (which could
// hold anything) never reaches a log line.
func routeOf(r *http.Request) string {
	switch r.URL.Path {
	case pathChat, pathResponses, pathMessages, pathCount, pathModels, pathHealth, pathMetrics, pathLivez, pathReadyz:
		return r.URL.Path
	}
	if route := geminiRouteOf(r.URL.Path); route != "" {
		return route
	}
	if strings.HasPrefix(r.URL.Path, pathModels+"/") {
		return pathModels + "/{id}"
	}
	return adminRouteOf(r.URL.Path)
}
