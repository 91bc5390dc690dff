package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/secret"
)

// newLogger builds the process logger, the one every package logs through:
// JSON or text; every record passes once through redaction of the configured
// secrets (the upstream secret and PROVIDER_API_KEY) and the credential
// patterns, and carries the request id of its request context once.
func newLogger(cfg config, w io.Writer) *slog.Logger {
	log, _ := newLoggerControl(cfg, w)
	return log
}

// logControl is what a reload may change of the process logger: its level,
// and the secrets it redacts (a reload adds the new ones and keeps the old).
type logControl struct {
	level   slog.LevelVar
	mu      sync.Mutex
	secrets []string
	red     atomic.Pointer[secret.Redactor]
}

// String redacts s with the current secrets.
func (c *logControl) String(s string) string { return c.red.Load().String(s) }

// setLevel sets the level of every logger of the process.
func (c *logControl) setLevel(l slog.Level) { c.level.Set(l) }

// addSecrets makes the logger redact secrets too, besides every earlier one.
func (c *logControl) addSecrets(secrets ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range secrets {
		if s != "" && !slices.Contains(c.secrets, s) {
			c.secrets = append(c.secrets, s)
		}
	}
	c.red.Store(secret.NewRedactor(c.secrets...))
}

// newLoggerControl is newLogger with the control a reload uses.
func newLoggerControl(cfg config, w io.Writer) (*slog.Logger, *logControl) {
	lc := &logControl{}
	lc.setLevel(cfg.logLevel)
	lc.addSecrets(cfg.secrets()...)
	opts := &slog.HandlerOptions{Level: &lc.level}
	var h slog.Handler
	if cfg.logFormat == "text" {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(httpapi.WithRequestID(&redactor{h: h, red: lc})), lc
}

// secrets are the values no output of the process may contain.
func (c config) secrets() []string {
	s := c.upstream.Secrets()
	if c.apiKey != "" {
		s = append(s, c.apiKey)
	}
	return s
}

// redactingHandler returns a slog.Handler that passes every record through r
// before h sees it: the message and every string value, and the text of every
// error, stringer, byte slice or other non-scalar value (which is logged as
// redacted text). Numbers, booleans, times and durations pass unchanged.
func redactingHandler(h slog.Handler, r *secret.Redactor) slog.Handler {
	return &redactor{h: h, red: r}
}

type redactor struct {
	h   slog.Handler
	red interface{ String(string) string } // a *secret.Redactor, or a logControl's current one
}

func (r *redactor) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, l)
}

func (r *redactor) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, r.red.String(rec.Message), rec.PC)
	// One AddAttrs for all: the record grows its overflow once, not per attribute.
	var buf [16]slog.Attr
	as := buf[:0]
	rec.Attrs(func(a slog.Attr) bool {
		as = append(as, r.attr(a))
		return true
	})
	out.AddAttrs(as...)
	return r.h.Handle(ctx, out)
}

func (r *redactor) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = r.attr(a)
	}
	return &redactor{h: r.h.WithAttrs(red), red: r.red}
}

func (r *redactor) WithGroup(name string) slog.Handler {
	return &redactor{h: r.h.WithGroup(name), red: r.red}
}

func (r *redactor) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.red.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, ga := range g {
			out[i] = r.attr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, r.red.String(errs.Redact(x)))
		case []byte:
			return slog.String(a.Key, r.red.String(string(x)))
		default:
			return slog.String(a.Key, r.red.String(fmt.Sprint(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
