// Package sse is the one server-sent-events writer of the ingress and its
// one batching rule; the grammars written through it are its subpackages
// (chatsse, respsse, msgsse), one per API, each an emitter through which only
// a grammatical stream can be written.
//
// The batching rule: an event is held, not written, when it is emitted. The
// held events are written together, in one write and one flush, when the
// turn is about to wait for the upstream (Flush, called when the turn's
// TryNext found no event at hand), and at the end in one last write that is not flushed (End:
// the handler returns next, and net/http sends it with the terminating
// chunk). What arrived in one upstream read reaches the client in one write,
// and nothing waits for an event that has not arrived.
package sse

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/cockroachdb/errors"
)

// ErrUngrammatical marks an emitter's refusal of an event that its grammar
// does not allow where it was asked for: a bug of the caller, never the
// client's or the upstream's. The refused event is not written; after a
// refusal an emitter accepts only its failure event (the grammar's way to
// end a stream that cannot be finished).
var ErrUngrammatical = errors.New("sse: ungrammatical event sequence")

// Refusef is a refusal, marked ErrUngrammatical.
func Refusef(format string, args ...any) error {
	return errors.Mark(errors.AssertionFailedf(format, args...), ErrUngrammatical)
}

// ErrWrite marks a failed write (or an event that could not be encoded):
// the client is gone, and the stream ends there.
var ErrWrite = errors.New("sse: the stream could not be written")

// ErrNotStarted refuses an event before Start: the headers have not gone,
// so a failure is still a plain error answer, not an event.
var ErrNotStarted = errors.New("sse: the stream has not started")

// Writer writes events, "data: <one-line JSON>\n\n", or with a name,
// "event: <name>\n" before the data line, held by the batching rule. After a
// failed write every later one fails the same way. A Writer is not safe for
// concurrent use; an emitter that writes from two goroutines serializes.
type Writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	header  func(http.Header)
	started bool
	buf     bytes.Buffer // the events not written yet
	enc     *json.Encoder
	err     error // the first failed write
}

// New returns the writer of a stream on w; nothing is sent before Start.
// header, if not nil, sets the stream's own headers at Start.
func New(w http.ResponseWriter, header func(http.Header)) *Writer {
	s := &Writer{w: w, header: header}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}

// Start sends the headers of an event stream (status 200); once.
func (s *Writer) Start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if s.header != nil {
		s.header(h)
	}
	s.w.WriteHeader(http.StatusOK)
	s.rc = http.NewResponseController(s.w)
}

// Started says whether the headers went.
func (s *Writer) Started() bool { return s.started }

// Event holds v as the next event, named typ unless typ is "".
func (s *Writer) Event(typ string, v any) error {
	if err := s.ready(); err != nil {
		return err
	}
	n := s.buf.Len()
	if typ != "" {
		s.buf.WriteString("event: ")
		s.buf.WriteString(typ)
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString("data: ")
	if err := s.enc.Encode(v); err != nil { // one line, ends in \n
		s.buf.Truncate(n)
		return errors.Mark(err, ErrWrite)
	}
	s.buf.WriteByte('\n')
	return nil
}

// Data holds an unnamed event whose data is raw (such as [DONE]).
func (s *Writer) Data(raw string) error {
	if err := s.ready(); err != nil {
		return err
	}
	s.buf.WriteString("data: ")
	s.buf.WriteString(raw)
	s.buf.WriteString("\n\n")
	return nil
}

// Tail holds v's JSON as bytes that are no event: no "data: ", no blank
// line after it. A grammar whose clients must see a failure that no event
// can carry ends with one (gemsse: the SDK gemini-cli bundles reads an
// error event as an empty chunk, but a body ending in text that is not a
// whole event, or a read that is one JSON error object, as an error).
func (s *Writer) Tail(v any) error {
	if err := s.ready(); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errors.Mark(err, ErrWrite)
	}
	s.buf.Write(b)
	return nil
}

func (s *Writer) ready() error {
	if !s.started {
		return ErrNotStarted
	}
	return s.err
}

// End writes the held events as the stream's last write, without flushing.
func (s *Writer) End() error {
	if !s.started || s.err != nil || s.buf.Len() == 0 {
		return s.err
	}
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		s.err = errors.Mark(err, ErrWrite)
	}
	s.buf.Reset()
	return s.err
}

// Flush writes the held events, if any, and flushes them to the client; a
// stream not started has nothing to flush.
func (s *Writer) Flush() error {
	if !s.started || s.err != nil || s.buf.Len() == 0 {
		return s.err
	}
	if s.End() == nil {
		if err := s.rc.Flush(); err != nil {
			s.err = errors.Mark(err, ErrWrite)
		}
	}
	return s.err
}

// Life is the part of a grammar that every stream shares: opened once, then
// its events, then exactly one end, the success's or the failure's; after a
// refusal only the failure's. An emitter asks it before each event.
type Life struct {
	W       *Writer
	opened  bool
	ended   bool
	refused error
}

// Open starts the stream (the headers go); a second open is refused.
func (l *Life) Open(event string) error {
	if err := l.check(event, true); err != nil {
		return err
	}
	if l.opened {
		return l.Refuse("%s: the stream is already open", event)
	}
	l.opened = true
	l.W.Start()
	return nil
}

// Step allows event inside an open stream, not after its end or a refusal.
func (l *Life) Step(event string) error { return l.check(event, false) }

func (l *Life) check(event string, opening bool) error {
	switch {
	case l.ended:
		return Refusef("%s after the end of the stream", event)
	case l.refused != nil:
		return l.refused
	case !opening && !l.opened:
		return Refusef("%s before the stream opened", event)
	}
	return nil
}

// Refuse records a refusal (the first stands) and returns it.
func (l *Life) Refuse(format string, args ...any) error {
	err := Refusef(format, args...)
	if l.refused == nil {
		l.refused = err
	}
	return err
}

// Failing allows the failure event: after the open, once, refusal or not.
// The stream has ended whatever the caller writes next.
func (l *Life) Failing(event string) error {
	switch {
	case l.ended:
		return Refusef("%s after the end of the stream", event)
	case !l.opened:
		return ErrNotStarted
	}
	l.ended = true
	return nil
}

// Fail ends an open stream with the grammar's one failure event (event is
// its name in the grammar, name the SSE event name or "", v its data), after
// what is held, as the stream's last write.
func (l *Life) Fail(event, name string, v any) error {
	if err := l.Failing(event); err != nil {
		return err
	}
	if err := l.W.Event(name, v); err != nil {
		return err
	}
	return l.End()
}

// Ending allows the success's end, as Step does, and marks the end.
func (l *Life) Ending(event string) error {
	if err := l.Step(event); err != nil {
		return err
	}
	l.ended = true
	return nil
}

// Opened says whether the stream opened (its headers went).
func (l *Life) Opened() bool { return l.opened }

// Ended says whether the stream ended.
func (l *Life) Ended() bool { return l.ended }

// End writes what is held as the stream's last write.
func (l *Life) End() error { return l.W.End() }
