package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/otel"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/keyring"
	"github.com/pmgate/pmgate/ports"
)

// reloadable are the settings a running serve applies on reload (SIGHUP, or a
// changed env file): the upstream credential and what only the upstream
// adapter reads of it, the single API key, the probe report (read again, so a
// fresh probe renews upstream_verified without a restart), readiness, the log
// level and the upstream's trust. PROVIDER_API_KEY changes live only while no
// PROVIDER_KEYS_FILE is in force or named. Requests already running finish on the
// values they started with; new ones use the new. Every other setting needs a
// restart, and a reload that sees one changed names it in the log.
var reloadable = []string{
	"POSTMAN_SESSION_COOKIE", "POSTMAN_ACCESS_TOKEN", "POSTMAN_USER_AGENT", "POSTMAN_APP_VERSION",
	"POSTMAN_WEB_SESSION_TERMINAL_RULE", "PROVIDER_API_KEY", "PROBE_REPORT", "LOG_LEVEL",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// envFilePollInterval is how often serve looks for a changed env file.
const envFilePollInterval = 2 * time.Second

// liveState is what a reload may replace in a running gateway. It is the
// app's upstream: each request takes the adapter current when it starts and
// keeps it to its end.
type liveState struct {
	log      *slog.Logger
	events   *app.Observers   // the gateway's one observer, given to every adapter built
	opts     []postman.Option // the caller's extra adapter options (tests: trust and dialer)
	upstream atomic.Pointer[ports.Upstream]
	verif    atomic.Pointer[func() (bool, map[string]any)]
	draining atomic.Bool
	keys     *httpapi.Keyring
	tracer   *otel.Tracer // nil: tracing off
	strategy string       // the upstream strategy (it never changes live)

	mu  sync.Mutex // serializes reloads
	cfg config     // the configuration in force
	// startEnv is the environment the process started with (what the
	// settings that need a restart still hold); env is the one of the last
	// applied reload.
	startEnv, env func(string) string
	// seen is the environment the last accepted reload read: a setting
	// waiting for a restart is logged by the reload that found it changed,
	// not again by every later one.
	seen func(string) string
}

// Chat sends through the adapter in force when the request starts. With
// tracing on, the dispatch (until the stream exists) and the stream (until it
// ends) are spans of the request.
func (l *liveState) Chat(ctx context.Context, req ports.UpstreamRequest) (ports.Stream, error) {
	up := *l.upstream.Load()
	if l.tracer == nil {
		return up.Chat(ctx, req)
	}
	dctx, sp := l.tracer.Start(ctx, ports.SpanDispatch)
	chatType := "USER_QUERY"
	if req.Continuation != nil {
		chatType = "TOOL_RESPONSE"
	}
	sp.SetString(ports.AttrChatType, chatType)
	sp.SetString(ports.AttrStrategy, l.strategy)
	s, err := up.Chat(dctx, req)
	if err != nil {
		sp.Fail(string(errs.CodeOf(err)))
		sp.End()
		return nil, err
	}
	sp.End()
	_, ss := l.tracer.Start(ctx, ports.SpanStream)
	return &tracedStream{Stream: s, span: ss}, nil
}

// rateWindow is the rate-limit window of the adapter in force (docs/UPSTREAM.md):
// an adapter built by a reload starts without one, since a new credential
// may be another account.
func (l *liveState) rateWindow() ports.RateWindow {
	if w, ok := (*l.upstream.Load()).(interface{ RateWindow() ports.RateWindow }); ok {
		return w.RateWindow()
	}
	return ports.RateWindow{}
}

// credits is the plan report of the adapter in force (docs/USAGE.md): an
// adapter built by a reload starts without one, since a new credential may be
// another account.
func (l *liveState) credits() ports.CreditReport {
	if c, ok := (*l.upstream.Load()).(interface{ Credits() ports.CreditReport }); ok {
		return c.Credits()
	}
	return ports.CreditReport{}
}

// tracedStream ends its span at the stream's end: a proven end, an error, or
// Close.
type tracedStream struct {
	ports.Stream
	span  ports.Span
	ended atomic.Bool
}

func (t *tracedStream) Next(ctx context.Context) (chat.Event, error) {
	ev, err := t.Stream.Next(ctx)
	if err != nil && t.ended.CompareAndSwap(false, true) {
		if !errors.Is(err, io.EOF) {
			t.span.Fail(string(errs.CodeOf(err)))
		}
		t.span.End()
	}
	return ev, err
}

// Buffered and OutcomeNote pass the stream's own on.
func (t *tracedStream) Buffered() bool           { return ports.IsBuffered(t.Stream) }
func (t *tracedStream) OutcomeNote() []slog.Attr { return ports.OutcomeNoteOf(t.Stream) }

func (t *tracedStream) Close() error {
	if t.ended.CompareAndSwap(false, true) {
		t.span.End()
	}
	return t.Stream.Close()
}

// newClient builds the Postman adapter of cfg: the process logger, the
// gateway's observer, the trust of SSL_CERT_FILE/SSL_CERT_DIR, then the caller's
// options.
func (l *liveState) newClient(cfg config) (*postman.Client, error) {
	base := []postman.Option{postman.WithLogger(l.log), postman.WithRedactedSecrets(cfg.apiKey),
		postman.WithMaxIdleConns(cfg.maxConcurrent), postman.WithObserver(l.events)}
	pool, err := rootPool(cfg.sslCertFile, cfg.sslCertDir)
	if err != nil {
		return nil, err
	}
	if pool != nil {
		base = append(base, postman.WithRootCAs(pool))
	}
	return postman.New(cfg.upstream, append(base, l.opts...)...)
}

func (l *liveState) setVerification(f func() (bool, map[string]any)) { l.verif.Store(&f) }

// verification is /health's upstream_verified from the probe report in force.
func (l *liveState) verification() (bool, map[string]any) { return (*l.verif.Load())() }

func (l *liveState) verified() bool { ok, _ := l.verification(); return ok }

// enableReload makes the gateway reload its configuration on SIGHUP (hup,
// from notifyHUP, registered by the caller before the gateway started) and
// when the env file changes, until it stops; it then stops hup. last is the
// env file's stamp taken before the configuration in force was read from it:
// any later change differs from it.
func (g *gateway) enableReload(hup chan os.Signal, src source, env func(string) string, lc *logControl, last stamp) {
	g.live.startEnv, g.live.env, g.live.seen = env, env, env
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer signal.Stop(hup)
		t := time.NewTicker(envFilePollInterval)
		defer t.Stop()
		for {
			reason := "sighup"
			select {
			case <-g.runCtx.Done():
				return
			case <-hup:
			case <-t.C:
				if src.envPath == "" {
					continue
				}
				st := fileStamp(src.envPath)
				if st == last {
					continue
				}
				last, reason = st, "env_file_changed"
			}
			g.reload(src, lc, reason)
		}
	}()
}

// stamp is what identifies a version of a file without reading it.
type stamp struct {
	size int64
	mod  time.Time
}

func fileStamp(path string) stamp {
	if path == "" {
		return stamp{}
	}
	st, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	return stamp{size: st.Size(), mod: st.ModTime()}
}

// reload reads the configuration again and applies what may change live. A
// configuration that is refused changes nothing; the log says why.
func (g *gateway) reload(src source, lc *logControl, reason string) {
	l := g.live
	l.mu.Lock()
	defer l.mu.Unlock()
	refused := func(err error) {
		var problems []string
		for _, p := range problemsOf(err) {
			problems = append(problems, problemText(p))
		}
		g.log.Warn("configuration reload refused; the previous configuration stays in force", "reason", reason,
			"code", string(errs.CodeOf(err)), "problems", strings.Join(problems, "; "))
	}
	cfg, env, err := src.load()
	if err != nil {
		refused(err)
		return
	}
	strategyChanged := l.startEnv("POSTMAN_TRANSPORT_STRATEGY") != env("POSTMAN_TRANSPORT_STRATEGY")
	// PROVIDER_API_KEY is the key only while no key file is in force or
	// named: a swap between the two (either way) waits for a restart, and
	// until then the key file's slots (or the single key) stay as they are.
	singleKey := l.cfg.keysFile == "" && cfg.keysFile == ""
	var applied, restart []string
	for _, name := range knownSettings() {
		live := slices.Contains(reloadable, name) && (!strategyChanged || !upstreamSetting(name)) &&
			(singleKey || name != "PROVIDER_API_KEY")
		switch {
		case live && l.env(name) != env(name):
			applied = append(applied, name)
		case !live && l.startEnv(name) != env(name) && l.seen(name) != env(name):
			// Another strategy has other credentials: all of it waits. A
			// change an earlier reload already named is not named again.
			restart = append(restart, name)
		}
	}
	next := l.cfg
	lc.addSecrets(cfg.secrets()...)
	if slices.ContainsFunc(applied, upstreamSetting) {
		up := cfg.upstream
		up.Strategy, up.WorkspaceID, up.Models, up.Limits = next.upstream.Strategy, next.upstream.WorkspaceID, next.upstream.Models, next.upstream.Limits
		// The parallel decision is the start-up one (its setting waits for a
		// restart; a verified report's measurement is decided once), not a
		// fresh parse's.
		up.ParallelToolCalls, up.ParallelMeasured = next.upstream.ParallelToolCalls, next.upstream.ParallelMeasured
		nc := next
		nc.upstream, nc.sslCertFile, nc.sslCertDir = up, cfg.sslCertFile, cfg.sslCertDir
		client, err := l.newClient(nc)
		if err != nil {
			refused(err)
			return
		}
		var u ports.Upstream = client
		l.upstream.Store(&u)
		next = nc
	}
	if slices.Contains(applied, "PROVIDER_API_KEY") {
		l.keys.Replace([]keyring.Slot{{ID: "default", Digest: sha256.Sum256([]byte(cfg.apiKey))}})
		next.apiKey = cfg.apiKey
	}
	if slices.Contains(applied, "LOG_LEVEL") {
		lc.setLevel(cfg.logLevel)
		next.logLevel = cfg.logLevel
	}
	next.probeReport = cfg.probeReport
	l.setVerification(probeVerification(next, time.Now)) // the report is read again, changed or not
	l.cfg = next
	if len(applied) > 0 {
		l.env = mixEnv(applied, env, l.env)
	}
	l.seen = env
	g.log.Info("configuration reloaded", "reason", reason, "applied", strings.Join(applied, ","),
		"restart_needed", strings.Join(restart, ","))
}

// upstreamSetting reports whether a reloadable setting is the upstream
// adapter's (applying it builds a new adapter).
func upstreamSetting(name string) bool {
	return name != "PROVIDER_API_KEY" && name != "PROBE_REPORT" && name != "LOG_LEVEL"
}

// mixEnv is the environment in force after a reload: the applied names from
// env, everything else from before.
func mixEnv(applied []string, env, before func(string) string) func(string) string {
	return func(k string) string {
		if slices.Contains(applied, k) {
			return env(k)
		}
		return before(k)
	}
}

// notifyHUP catches SIGHUP into a new channel, which holds one until it is
// read: without a registration SIGHUP would end the process.
func notifyHUP() chan os.Signal {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup
}
