package pmconfig

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pmgate/pmgate/domain/errs"
)

// RedactingHandler returns a slog.Handler that passes every record through r
// before h sees it: the message and every string value, and the text of every
// error, stringer, byte slice or other non-scalar value (which is logged as
// redacted text). Numbers, booleans, times and durations pass unchanged.
func RedactingHandler(h slog.Handler, r *Redactor) slog.Handler {
	return &redactingHandler{h: h, red: r}
}

type redactingHandler struct {
	h   slog.Handler
	red *Redactor
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
