package postman

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// Stream is one upstream response stream; it implements ports.Stream. It is
// not safe for concurrent use of Next; Close may be called from another
// goroutine to abort a blocked Next.
type Stream struct {
	mu       sync.Mutex
	obs      ports.Observer // WithObserver; nil for a reader stream or without one
	d        *decoder
	body     io.ReadCloser     // nil for a reader stream
	cancel   func(cause error) // cancels the request context; nil for a reader stream
	rctx     context.Context   // the request context; nil for a reader stream
	log      *slog.Logger      // never nil
	strategy pmconfig.Strategy // "" for a reader stream
	logCtx   context.Context   // the request's context without its cancellation, for log records; nil for a reader stream
	status   int               // HTTP status
	lastCtx  context.Context   // the context Next watches
	stop     func() bool       // stops the watch of lastCtx
	closed   bool
	logged   bool
	evidence bool        // WithStreamEvidence: the exchange event carries the summary's evidence
	chatType string      // input.chatType of the request
	first    bool        // the first event was returned (debug log)
	noted    bool        // UpstreamRequest.Noted: the caller's access line carries note
	note     []slog.Attr // the outcome for the access line, once known (OutcomeNote)
}

// Buffered implements ports.Buffered: Next returns without reading the
// body when an event of an earlier read is queued or the outcome is known.
func (s *Stream) Buffered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d.buffered()
}

// OutcomeNote implements ports.OutcomeNoter: the attributes of the stream's
// end line ("upstream stream complete" or "failed"), nil before its outcome.
func (s *Stream) OutcomeNote() []slog.Attr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.note
}

// newReaderStream decodes a body from any reader, without HTTP (tests, fuzzing
// and benchmarks). tools nil means no tools were advertised.
func newReaderStream(r io.Reader, cfg decoderConfig) *Stream {
	s := &Stream{log: slog.New(slog.DiscardHandler)}
	cfg.onFinal = s.finished
	s.d = newDecoder(r, cfg)
	return s
}

// Next returns the next decoded event. It returns io.EOF only after the
// completion machine proved a complete stream at a real EOF; every other end is
// an error with the outcome's stable code (see ports.Stream). Cancelling ctx
// closes the upstream connection and ends the stream with client_cancelled.
func (s *Stream) Next(ctx context.Context) (chat.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.d.final == nil {
		if err := ctx.Err(); err != nil {
			return chat.Event{}, s.d.abort(eventOfContextErr(err))
		}
		s.watch(ctx)
	}
	ev, err := s.d.next()
	if err == nil && !s.first {
		s.first = true
		s.log.LogAttrs(s.logContext(), slog.LevelDebug, "upstream first event",
			slog.String("strategy", string(s.strategy)), slog.Int("event_kind", int(ev.Kind)))
	}
	if err != nil && err != io.EOF && s.d.errType != "" {
		if s.d.errType == conversationNotFound {
			// The service forgot the conversation: its own code, so that the
			// turn retires its anchor and no agent retries it.
			err = errs.Wrap(err, errs.UpstreamConversationLost)
		}
		err = diagnose(err, "", s.d.errType) // the client error may name the setting to check
	}
	return ev, err
}

// conversationNotFound is the failure type of a turn naming a conversation
// the service no longer knows.
const conversationNotFound = "CONVERSATION_NOT_FOUND"

func eventOfContextErr(err error) completion.Event {
	if errors.Is(err, context.DeadlineExceeded) {
		return completion.Timeout
	}
	return completion.Abort
}

// watch makes the cancellation of ctx close the upstream request. The watch is
// registered once per distinct context, so a caller that passes the same
// context to every Next pays for it once.
func (s *Stream) watch(ctx context.Context) {
	if s.cancel == nil || ctx.Done() == nil || ctx == s.lastCtx {
		return
	}
	if s.stop != nil {
		s.stop()
	}
	s.lastCtx = ctx
	s.stop = context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.cancel(errTimeoutCause)
			return
		}
		s.cancel(errClientCause)
	})
}

// classifyRead maps a body read error, io.EOF included, using the request
// context's cause: once the request context is done, nothing the body reports
// (not even a clean EOF) is the upstream's own end.
func (s *Stream) classifyRead(err error) completion.Event {
	if s.rctx != nil && s.rctx.Err() != nil {
		cause := context.Cause(s.rctx)
		switch {
		case errors.Is(cause, errTimeoutCause), errors.Is(cause, context.DeadlineExceeded):
			return completion.Timeout
		default:
			return completion.Abort
		}
	}
	return classifyPlainRead(err)
}

// finished runs once when the outcome is known: it releases the connection and
// logs the end.
func (s *Stream) finished() {
	if s.body != nil {
		_ = s.body.Close()
	}
	if s.cancel != nil {
		s.cancel(errClosedCause)
	}
	if s.stop != nil {
		s.stop()
	}
	if s.logged {
		return
	}
	s.logged = true
	o := s.d.tr.Outcome()
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("strategy", string(s.strategy)),
		slog.Int("status", s.status),
	)
	level := slog.LevelInfo
	msg := "upstream stream complete"
	outcome := ports.OutcomeCompleted
	if !o.Complete {
		level, msg = slog.LevelWarn, "upstream stream failed"
		code := o.Code
		if code == "" {
			code = errs.CodeOf(s.d.final)
		}
		attrs = append(attrs, slog.String("code", string(code)))
		outcome = string(code)
	}
	if s.d.lastType != evNone {
		attrs = append(attrs, slog.String("event_type", s.d.lastType.String()))
	}
	attrs = append(attrs,
		slog.Int64("bytes_in", s.d.bytesIn),
		slog.Int("output_bytes", s.d.outBytes),
		slog.Int("argument_bytes", s.d.argBytes),
		slog.Bool("model_observed", s.d.labelSeen),
	)
	if s.d.labelSeen {
		attrs = append(attrs, slog.Bool("model_match", s.d.labelMatch))
	}
	if r := s.d.credit; r.Known {
		attrs = append(attrs, creditAttrs(r))
	}
	var gate *GateError
	if errors.As(s.d.final, &gate) {
		attrs = append(attrs, gate.LogAttrs())
	}
	if s.d.errType != "" {
		attrs = append(attrs, slog.String("upstream_error_type", s.d.errType))
		if h := settingHint(s.d.errType); h != "" {
			attrs = append(attrs, slog.String("hint", h))
		}
	}
	lctx := s.logContext()
	// The request's access line carries the outcome as its group "upstream"
	// (OutcomeNote) when the caller said so; then a completed stream's own
	// line is a debug line. A failure stays a warning.
	s.note = attrs
	level = ports.OwnLineLevel(s.noted, level)
	s.log.LogAttrs(lctx, level, msg, attrs...)
	if s.log.Enabled(lctx, slog.LevelDebug) {
		row := ""
		if s.d.ev != nil {
			row = s.d.ev.row
		}
		s.log.LogAttrs(lctx, slog.LevelDebug, "completion",
			slog.String("strategy", string(s.strategy)), slog.String("rule", string(s.d.cfg.rule)), slog.String("row", row), slog.String("state", string(o.State)))
	}
	if s.obs != nil {
		ex := ports.Exchange{Strategy: string(s.strategy), Outcome: outcome, Rule: string(s.d.tr.Rule()), Row: s.d.tr.OutcomeRow(),
			ChatType: s.chatType}
		if s.evidence {
			ex.Evidence = s.d.summary(s.chatType).evidence()
		}
		s.obs.Observe(lctx, ports.Event{Kind: ports.EventExchange, Exchange: ex})
	}
}

// Close releases the connection; it is safe to call more than once. Closing a
// stream whose outcome is not known yet ends it with client_cancelled.
func (s *Stream) Close() error {
	if s.cancel != nil {
		// Safe from any goroutine: it closes the connection, which ends a Read
		// that a concurrent Next is blocked in. A no-op once the outcome is known.
		s.cancel(errClientCause)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.d.final == nil {
		_ = s.d.abort(completion.Abort)
	}
	return nil
}

// Outcome returns the completion outcome; it is terminal once Next returned
// io.EOF or an error.
func (s *Stream) Outcome() completion.Outcome { return s.d.tr.Outcome() }

// ConversationID returns the upstream conversation id seen in the stream, or "".
// It is private: it never leaves the gateway.
func (s *Stream) ConversationID() string { return s.d.convID }

// ModelObserved returns the first model label the upstream reported and whether
// one was reported at all (docs/UPSTREAM.md). The label is upstream data: do
// not log it.
func (s *Stream) ModelObserved() (label string, observed bool) { return s.d.label, s.d.labelSeen }

// logContext is the context of the stream's log records: the request's (so
// that the process logger attaches its request id), never cancelled, because
// the end of a stream is logged after the request may have ended.
func (s *Stream) logContext() context.Context {
	if s.logCtx == nil {
		return context.Background()
	}
	return s.logCtx
}
