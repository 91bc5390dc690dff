package ports

import (
	"context"
	"log/slog"
	"sync"
)

// RequestLog is what the one INFO line of a request (the inbound adapter's
// access line, "msg":"request") says beyond the request itself: each layer
// that used to write its own INFO line per request (the conversation decision,
// the upstream stream's outcome) notes a named group of attributes here
// instead, and the access line writes every group once, through the same
// logger (so the same redaction) as every other record.
//
// The inbound adapter creates one per request (WithRequestLog) and reads it
// once, after its handler returned (AppendGroups). Note is safe from any goroutine.
// Only log-safe values belong in it: no content, key or upstream id, exactly
// as for any log attribute.
type RequestLog struct {
	mu     sync.Mutex
	groups []slog.Attr
}

type requestLogKey struct{}

// WithRequestLog returns ctx carrying l, for the layers below to Note into.
func WithRequestLog(ctx context.Context, l *RequestLog) context.Context {
	return context.WithValue(ctx, requestLogKey{}, l)
}

// NoteRequest notes the group name with attrs on the request log that ctx
// carries, replacing a group of the same name (one key per line: strict JSON
// log pipelines reject duplicates). It reports whether ctx carries one: when it
// does not (a caller outside a request), the caller logs the line itself at
// INFO, so that the information is never lost.
func NoteRequest(ctx context.Context, name string, attrs ...slog.Attr) bool {
	l, ok := ctx.Value(requestLogKey{}).(*RequestLog)
	if !ok || l == nil {
		return false
	}
	g := slog.Attr{Key: name, Value: slog.GroupValue(attrs...)}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.groups {
		if l.groups[i].Key == name {
			l.groups[i] = g
			return true
		}
	}
	l.groups = append(l.groups, g)
	return true
}

// AppendGroups appends the groups noted so far to dst, in the order first
// noted.
func (l *RequestLog) AppendGroups(dst []slog.Attr) []slog.Attr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append(dst, l.groups...)
}

// OwnLineLevel is the level of a layer's own line for a group it noted (noted:
// NoteRequest reported an access line): below WARN the access line already
// says it, so the own line is a DEBUG line; a warning or error stays what it
// is, and without an access line the level is unchanged.
func OwnLineLevel(noted bool, level slog.Level) slog.Level {
	if noted && level < slog.LevelWarn {
		return slog.LevelDebug
	}
	return level
}
