package ports

import "log/slog"

// Each request has one INFO line (the inbound adapter's access line,
// "msg":"request"); what it says beyond the request itself comes back to the
// inbound adapter as values: the use case returns the named groups of
// attributes it noted (app.Summary's Notes: the conversation decision), and
// the upstream stream's outcome reaches the use case from its stream
// (OutcomeNoter). The access line writes every group once, through the same
// logger (so the same redaction) as every other record. Only log-safe values
// belong in a group: no content, key or upstream id, exactly as for any log
// attribute.

// OutcomeNoter is implemented by a Stream that describes its outcome for the
// request's access line (the group "upstream"): OutcomeNote returns the
// attributes once the outcome is known, nil before. It is safe to call from
// any goroutine. A stream asked for a noted outcome (UpstreamRequest.Noted)
// writes its own line of a completed stream at debug.
type OutcomeNoter interface {
	OutcomeNote() []slog.Attr
}

// OwnLineLevel is the level of a layer's own line for a group it noted (noted:
// an access line writes the group): below WARN the access line already
// says it, so the own line is a DEBUG line; a warning or error stays what it
// is, and without an access line the level is unchanged.
func OwnLineLevel(noted bool, level slog.Level) slog.Level {
	if noted && level < slog.LevelWarn {
		return slog.LevelDebug
	}
	return level
}

// OutcomeNoteOf returns s's OutcomeNote, or nil when s is no OutcomeNoter. A
// wrapping stream passes it on: OutcomeNote() []slog.Attr { return
// ports.OutcomeNoteOf(inner) }.
func OutcomeNoteOf(s Stream) []slog.Attr {
	if n, ok := s.(OutcomeNoter); ok {
		return n.OutcomeNote()
	}
	return nil
}
