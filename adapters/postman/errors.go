package postman

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"

	"pmgate/adapters/postman/pmconfig"
)

// safeInt is an integer that prints unredacted (sizes, counts, statuses).
type safeInt int

// SafeValue marks the int as safe for logs.
func (safeInt) SafeValue() {}

// retryAfterError carries the bounded Retry-After of an upstream_rate_limited
// error. It adds no text: the message, the code and the redaction are the
// cause's.
type retryAfterError struct {
	cause error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.cause.Error() }
func (e *retryAfterError) Unwrap() error { return e.cause }

// SafeFormatError prints nothing of its own and hands over to the cause.
func (e *retryAfterError) SafeFormatError(errors.Printer) error { return e.cause }

// Format implements fmt.Formatter through cockroachdb/errors.
func (e *retryAfterError) Format(s fmt.State, verb rune) { errors.FormatError(e, s, verb) }

// redactingHandler passes every log record of the adapter through the
// redactor: the message and every string (or stringer, error, any) value.
type redactingHandler struct {
	h   slog.Handler
	red *pmconfig.Redactor
}

func (r *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, l)
}

func (r *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, r.red.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(r.attr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = r.attr(a)
	}
	return &redactingHandler{h: r.h.WithAttrs(red), red: r.red}
}

func (r *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{h: r.h.WithGroup(name), red: r.red}
}

func (r *redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.red.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, ga := range g {
			out[i] = r.attr(ga)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		return slog.String(a.Key, r.red.String(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
