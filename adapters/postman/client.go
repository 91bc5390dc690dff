package postman

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/secret"
	"github.com/pmgate/pmgate/ports"
)

// Client is the Postman upstream adapter: it implements ports.Upstream for the
// configured strategy. It is safe for concurrent use.
type Client struct {
	cfg       pmconfig.Config
	obs       ports.Observer // WithObserver; nil without one
	url       string
	rule      completion.Rule
	hc        *http.Client
	traceable bool             // the transport reports WroteRequest (a *http.Transport)
	red       *secret.Redactor // for error texts; the logger redacts its own records
	log       *slog.Logger
	now       func() time.Time
	peek      time.Duration
	maxConns  int
	evidence  bool // WithStreamEvidence
	// window is the rate-limit window the service's last answer announced
	// (ratelimit.go).
	window rateWindow
	// credits is the plan report of the service's last usage event
	// (credits.go).
	credits *credits
}

var (
	_ ports.Upstream = (*Client)(nil)
	_ ports.Stream   = (*Stream)(nil)
)

// Option configures New.
type Option func(*options)

type options struct {
	transport http.RoundTripper
	obs       ports.Observer
	evidence  bool
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	roots     *x509.CertPool
	logger    *slog.Logger
	secrets   []string
	now       func() time.Time
	peek      time.Duration
	maxConns  int
}

// WithObserver reports every upstream exchange to obs (one
// ports.EventExchange), once, when its outcome is known: a request refused
// before any stream, or a stream at its outcome (a proven end, a failure, a
// timeout or Close). It is called on the goroutine that ended the exchange,
// with the request's context, so obs must not block: the wiring passes the
// fan-out (app.Observers).
func WithObserver(obs ports.Observer) Option { return func(o *options) { o.obs = obs } }

// WithStreamEvidence makes every stream's exchange event carry its
// ports.StreamEvidence (event types, terminal evidence, which completion rules
// of the strategy would have completed it): the live probe records it. It
// costs a few allocations per stream, so only the probe asks for it.
func WithStreamEvidence() Option { return func(o *options) { o.evidence = true } }

// WithMaxIdleConns sizes the pool of idle upstream connections kept for reuse;
// the wiring passes MAX_CONCURRENT_REQUESTS so that a full load of concurrent
// requests does not pay a TLS handshake each (default 16).
func WithMaxIdleConns(n int) Option { return func(o *options) { o.maxConns = n } }

// WithTransport replaces the whole HTTP transport (tests). It cannot be combined
// with WithDialContext or WithRootCAs. A *http.Transport that disables TLS
// verification is refused. With a transport other than *http.Transport the
// adapter cannot observe whether a request was written, so its errors are never
// marked ports.ErrNotSent after the request was handed to it.
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// WithDialContext replaces the dialer of the adapter's own transport, for tests
// and the demo (for example mapping <sub>.postman.co:443 to a loopback
// emulator). The URL, the TLS server name and verification are unchanged.
func WithDialContext(dial func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(o *options) { o.dial = dial }
}

// WithRootCAs replaces the system trust store (tests and the demo).
// Verification itself always stays on.
func WithRootCAs(pool *x509.CertPool) Option { return func(o *options) { o.roots = pool } }

// WithLogger sets the logger; by default nothing is logged. The adapter logs
// through it as it is: the process logger redacts every record and attaches
// the request id of the record's context, and the adapter logs every record of
// a request with that request's context. Its records hold only safe fields
// (no content, no secret, no upstream id).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRedactedSecrets adds secrets (for example PROVIDER_API_KEY) to the ones
// removed from the text of the adapter's errors; the configured upstream
// secret is always included.
func WithRedactedSecrets(secrets ...string) Option {
	return func(o *options) { o.secrets = append(o.secrets, secrets...) }
}

// withClock sets the clock used for Retry-After dates (tests).
func withClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// withPeekTimeout sets how long an error body may take to read (tests).
func withPeekTimeout(d time.Duration) Option { return func(o *options) { o.peek = d } }

// New returns a Client for a configuration produced by pmconfig.Parse.
//
// Errors: config_invalid when the configuration yields no chat URL, maps no
// model, has an unknown strategy or a non-positive timeout or limit (Limits
// unset), or the options conflict.
func New(cfg pmconfig.Config, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	u := cfg.ChatURL()
	if u == nil {
		return nil, errs.Newf(errs.ConfigInvalid, "the configuration yields no chat URL")
	}
	if len(cfg.Models) == 0 {
		return nil, errs.Newf(errs.ConfigInvalid, "the configuration maps no model")
	}
	if cfg.RequestTimeout <= 0 || cfg.MaxBodyBytes <= 0 || cfg.MaxEventBytes <= 0 || cfg.MaxOutputBytes <= 0 ||
		cfg.MaxToolArgumentBytes <= 0 || cfg.MaxToolResultBytes <= 0 {
		return nil, errs.Newf(errs.ConfigInvalid, "the configuration has no request timeout or a non-positive limit")
	}
	rule, err := cfg.Rule()
	if err != nil {
		return nil, err
	}

	rt := o.transport
	traceable := false
	switch {
	case rt != nil && (o.dial != nil || o.roots != nil):
		return nil, errs.Newf(errs.ConfigInvalid, "WithTransport cannot be combined with WithDialContext or WithRootCAs")
	case rt != nil:
		if t, ok := rt.(*http.Transport); ok {
			if t.TLSClientConfig != nil && t.TLSClientConfig.InsecureSkipVerify {
				return nil, errs.Newf(errs.ConfigInvalid, "a transport without TLS verification is refused")
			}
			traceable = true
		}
	default:
		rt = newTransport(o.dial, o.roots, o.maxConns)
		traceable = true
	}

	red := secret.NewRedactor(append(cfg.Secrets(), o.secrets...)...)
	logger := o.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	now := o.now
	if now == nil {
		now = time.Now
	}
	peek := o.peek
	if peek <= 0 {
		peek = defaultPeekTimeout
	}
	return &Client{
		cfg:  cfg,
		url:  u.String(),
		rule: rule,
		hc: &http.Client{
			Transport: rt,
			// Redirects are never followed: a 3xx is returned as it is and
			// refused, so the credential never reaches another host or path.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		traceable: traceable,
		obs:       o.obs,
		red:       red,
		log:       logger,
		now:       now,
		peek:      peek,
		evidence:  o.evidence,
		credits:   &credits{log: logger, now: now, label: string(cfg.Strategy)},
	}, nil
}

// newTransport is the adapter's own transport: TLS verification on (system
// roots unless pool is set), HTTP/1.1 only (so that no HTTP/2 retry path can
// replay a written request), no environment proxy, no transparent compression
// (the headers stay exactly the configured ones).
func newTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error), pool *x509.CertPool, maxIdle int) *http.Transport {
	if maxIdle <= 0 {
		maxIdle = 16
	}
	if dial == nil {
		d := &net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
		TLSHandshakeTimeout:   15 * time.Second,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		ForceAttemptHTTP2:     false,
		DisableCompression:    true,
		MaxIdleConns:          maxIdle,
		MaxIdleConnsPerHost:   maxIdle,
		IdleConnTimeout:       60 * time.Second,
		ExpectContinueTimeout: 0,
	}
}

// Cancellation causes of the request context.
var (
	errTimeoutCause = errors.New("postman: request timeout")
	errClientCause  = errors.New("postman: client cancelled")
	errClosedCause  = errors.New("postman: stream closed")
)

// Chat implements ports.Upstream: it sends one request and returns its stream
// (a *Stream). See Open.
func (c *Client) Chat(ctx context.Context, req ports.UpstreamRequest) (ports.Stream, error) {
	s, err := c.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Open sends one request and returns its stream. Nothing is ever retried: the
// request is written at most once.
//
// Errors (before a stream exists): model_not_found, invalid_request,
// upstream_request_too_large (marked ports.ErrNotSent); upstream_unavailable
// (connection refused, DNS, TLS, all marked ports.ErrNotSent);
// upstream_connection_lost (after the request was written);
// upstream_timeout and client_cancelled (marked ports.ErrNotSent when nothing
// was written); upstream_redirect_rejected, upstream_web_session_auth_failed or
// upstream_auth_failed, upstream_rate_limited (see RetryAfter),
// upstream_quota_exhausted, upstream_request_rejected, upstream_server_error,
// upstream_status_error, upstream_content_type_error.
func (c *Client) Open(ctx context.Context, req ports.UpstreamRequest) (*Stream, error) {
	body, err := BuildBody(c.cfg, req)
	if err != nil {
		c.logFailure(ctx, 0, err, 0)
		return nil, err
	}
	m, _ := c.cfg.Model(req.Chat.Model) // BuildBody proved it exists
	if err := c.windowRefusal(req); err != nil {
		d, _ := RetryAfter(err)
		c.logFailure(ctx, 0, err, d)
		return nil, err
	}

	parent, cancelCause := context.WithCancelCause(ctx)
	rctx, cancelTimeout := context.WithTimeoutCause(parent, c.cfg.RequestTimeout, errTimeoutCause)
	cancel := func(cause error) {
		cancelCause(cause)
		cancelTimeout()
	}

	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, trace), http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		cancel(errClosedCause)
		err = notSent(errs.Wrap(err, errs.InternalError))
		c.logFailure(ctx, 0, err, 0)
		return nil, err
	}
	hreq.Header = c.cfg.Headers()

	started := time.Now()
	resp, err := c.hc.Do(hreq)
	if c.log.Enabled(ctx, slog.LevelDebug) {
		chatType := "USER_QUERY"
		if req.Continuation != nil {
			chatType = "TOOL_RESPONSE"
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		c.log.LogAttrs(ctx, slog.LevelDebug, "upstream request sent",
			slog.String("strategy", string(c.cfg.Strategy)), slog.String("chat_type", chatType), slog.Int("body_bytes", len(body)),
			slog.Bool("written", wrote.Load()), slog.Int("status", status), slog.Int64("headers_ms", time.Since(started).Milliseconds()))
	}
	if resp != nil {
		c.window.record(parseRateWindow(resp.Header, c.now()))
	}
	if err != nil {
		sent := wrote.Load() || !c.traceable
		err = c.transportError(rctx, err, sent)
		cancel(errClosedCause)
		c.logFailure(ctx, 0, err, 0)
		return nil, err
	}
	if err := c.classify(resp, cancel, req.Continuation != nil); err != nil {
		if resp.StatusCode >= 300 && resp.StatusCode < 500 {
			// A redirect or 4xx is the upstream refusing the request before
			// processing it: a claimed continuation may return to PENDING.
			err = notAccepted(err)
		}
		_ = resp.Body.Close()
		cancel(errClosedCause)
		d, _ := RetryAfter(err)
		c.logFailure(ctx, resp.StatusCode, err, d)
		return nil, err
	}

	s := &Stream{
		body:     resp.Body,
		obs:      c.obs,
		cancel:   cancel,
		rctx:     rctx,
		log:      c.log,
		logCtx:   context.WithoutCancel(ctx),
		strategy: c.cfg.Strategy,
		status:   resp.StatusCode,
		evidence: c.evidence,
		chatType: chatTypeUserQuery,
		noted:    req.Noted,
	}
	var convID string
	if req.Continuation != nil {
		s.chatType, convID = chatTypeToolResponse, req.Continuation.ConversationID
	}
	s.d = newDecoder(resp.Body, decoderConfig{
		rule:         c.rule,
		maxEvent:     c.cfg.MaxEventBytes,
		maxOutput:    c.cfg.MaxOutputBytes,
		maxToolArgs:  c.cfg.MaxToolArgumentBytes,
		tools:        toolNameMap(req.Chat.Tools),
		observed:     m.Observed,
		classifyRead: s.classifyRead,
		onFinal:      s.finished,
		convID:       convID,
		evidence:     c.evidence || c.log.Enabled(ctx, slog.LevelDebug), // the debug log names the row
		mask:         c.red.String,
		onCredits:    func(r ports.CreditReport) { c.credits.record(s.logCtx, r) },
	})
	return s, nil
}

// transportError classifies an error of Do. sent says the request may have been
// written (or that the transport cannot tell).
func (c *Client) transportError(rctx context.Context, err error, sent bool) error {
	msg := c.red.String(err.Error())
	var out error
	switch {
	case rctx.Err() != nil:
		out = errs.Newf(contextCode(rctx), "%s", msg)
	case !sent:
		out = errs.Newf(errs.UpstreamUnavailable, "%s", msg)
	default:
		out = errs.Newf(errs.UpstreamConnectionLost, "%s", msg)
	}
	cause := transportCause(err)
	if rctx.Err() != nil {
		cause = causeCancelled
		if contextCode(rctx) == errs.UpstreamTimeout {
			cause = causeTimeout
		}
	}
	out = diagnose(out, cause, "")
	if !sent {
		out = notSent(out)
	}
	return out
}

// contextCode maps a done request context to upstream_timeout or
// client_cancelled.
func contextCode(rctx context.Context) errs.Code {
	cause := context.Cause(rctx)
	if errors.Is(cause, errTimeoutCause) || errors.Is(cause, context.DeadlineExceeded) {
		return errs.UpstreamTimeout
	}
	return errs.ClientCancelled
}

// maxErrorPeek bounds what is read of an error body, only to look for quota
// phrases and rejection texts; the body is never reflected anywhere. The read
// is also bounded in time: a body slower than the peek timeout is classified by
// its status alone.
const (
	maxErrorPeek       = 4 << 10
	defaultPeekTimeout = 2 * time.Second
)

// classify maps a response to an error before any stream body is read; nil
// means a 2xx event stream. cancel aborts the request (a slow error body).
// continuation says whether the request carried tool results: a 503 is then
// not retryable (the upstream may have processed them), while a fresh turn's
// 503 is, with the upstream's Retry-After when it sent one.
func (c *Client) classify(resp *http.Response, cancel func(error), continuation bool) error {
	st := resp.StatusCode
	status := safeInt(st)
	switch {
	case st >= 200 && st < 300:
		mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if err != nil || mt != "text/event-stream" {
			return errs.Newf(errs.UpstreamContentTypeError, "HTTP status %d without an event stream", status)
		}
		return nil
	case st >= 300 && st < 400:
		return errs.Newf(errs.UpstreamRedirectRejected, "HTTP status %d", status)
	case st == http.StatusForbidden && firewallPage(resp.Header, c.peekBody(resp.Body, cancel)):
		// The service's firewall answered, not the origin: the credential is
		// not the cause, and the same content would be blocked again.
		return errs.Newf(errs.UpstreamFirewallBlocked, "HTTP status %d with the firewall's block page", status)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		if c.cfg.Strategy == pmconfig.StrategyWebSession {
			return errs.Newf(errs.UpstreamWebSessionAuthFailed, "HTTP status %d", status)
		}
		return errs.Newf(errs.UpstreamAuthFailed, "HTTP status %d", status)
	case st == http.StatusTooManyRequests:
		d := parseRetryAfter(resp.Header.Get("Retry-After"), c.now())
		if resp.Header.Get("Retry-After") == "" {
			// Without Retry-After, the window's own reset is a better wait
			// than the fixed default (docs/UPSTREAM.md).
			if held := parseRateWindow(resp.Header, c.now()).HeldFor(c.now()); held > 0 {
				d = min(max(held, minRetryAfter), maxRetryAfter)
			}
		}
		return &retryAfterError{cause: errs.Newf(errs.UpstreamRateLimited, "HTTP status %d, retry after %d s", status, safeInt(int(d/time.Second))), after: d}
	case st == http.StatusPaymentRequired:
		return errs.Newf(errs.UpstreamQuotaExhausted, "HTTP status %d", status)
	}
	body := c.peekBody(resp.Body, cancel)
	errType := upstreamErrorType(body) // the type only: the text never leaves here
	if code := classifyText(bytes.ToLower(body)); code != "" {
		return diagnose(errs.Newf(code, "HTTP status %d", status), "", errType)
	}
	switch {
	case st == http.StatusServiceUnavailable && continuation:
		return diagnose(errs.Newf(errs.UpstreamOverloadedContinuation, "HTTP status %d", status), "", errType)
	case st == http.StatusServiceUnavailable:
		err := diagnose(errs.Newf(errs.UpstreamOverloaded, "HTTP status %d", status), "", errType)
		if v := resp.Header.Get("Retry-After"); v != "" {
			return &retryAfterError{cause: err, after: parseRetryAfter(v, c.now())}
		}
		return err
	case st == 400 || st == 409 || st == 413 || st == 422:
		return diagnose(errs.Newf(errs.UpstreamRequestRejected, "HTTP status %d", status), "", errType)
	case st >= 500:
		return diagnose(errs.Newf(errs.UpstreamServerError, "HTTP status %d", status), "", errType)
	}
	return diagnose(errs.Newf(errs.UpstreamStatusError, "HTTP status %d", status), "", errType)
}

// peekBody reads at most maxErrorPeek bytes of an error body for at most the peek
// timeout (then the request is cancelled, which ends the read).
func (c *Client) peekBody(body io.Reader, cancel func(error)) []byte {
	t := time.AfterFunc(c.peek, func() { cancel(errClosedCause) })
	defer t.Stop()
	b, _ := io.ReadAll(io.LimitReader(body, maxErrorPeek))
	return b
}

// Retry-After bounds.
const (
	minRetryAfter     = time.Second
	maxRetryAfter     = time.Hour
	defaultRetryAfter = 30 * time.Second
)

// parseRetryAfter reads Retry-After as delay seconds or an HTTP date, clamped to
// 1 s – 1 h; absent or unreadable gives 30 s.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return defaultRetryAfter
	}
	var d time.Duration
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else {
		t, err := http.ParseTime(v)
		if err != nil {
			return defaultRetryAfter
		}
		d = t.Sub(now)
	}
	return min(max(d, minRetryAfter), maxRetryAfter)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// RetryAfter is the bounded delay itself; the ingress finds it structurally
// (any error with this method) and sends it to the client as retry-after.
func (e *retryAfterError) RetryAfter() time.Duration { return e.after }

// RetryAfter returns the bounded delay an upstream_rate_limited error carries.
func RetryAfter(err error) (time.Duration, bool) {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.after, true
	}
	return 0, false
}

// logFailure logs a request that ended before a stream existed, with the
// request's context (whose request id the process logger attaches): only the
// strategy, HTTP status (0 without a response), stable code, the
// diagnosis (a transport cause token such as tls_unknown_authority,
// dns_not_found, connection_refused or timeout; the upstream's error type) and
// retry-after.
func (c *Client) logFailure(ctx context.Context, status int, err error, retry time.Duration) {
	attrs := []slog.Attr{
		slog.String("strategy", string(c.cfg.Strategy)),
		slog.Int("status", status),
		slog.String("code", string(errs.CodeOf(err))),
	}
	if cause, typ := diagnosisOf(err); cause != "" || typ != "" {
		if cause != "" {
			attrs = append(attrs, slog.String("cause", cause))
		}
		if typ != "" {
			attrs = append(attrs, slog.String("upstream_error_type", typ))
		}
		if h := settingHint(typ); h != "" {
			attrs = append(attrs, slog.String("hint", h))
		}
	}
	if retry > 0 {
		attrs = append(attrs, slog.Int64("retry_after_s", int64(retry/time.Second)))
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "upstream request failed", attrs...)
	if c.obs != nil {
		c.obs.Observe(ctx, ports.Event{Kind: ports.EventExchange,
			Exchange: ports.Exchange{Strategy: string(c.cfg.Strategy), Outcome: string(errs.CodeOf(err))}})
	}
}
