// Package sse is a pure, bounded line framer for upstream Server-Sent Events
// streams. It splits bytes into lines without allocating per line, enforces a
// maximum line length before buffering more than one chunk beyond it, and tells
// the caller at EOF whether a partial line (a truncated frame) is still buffered.
//
// It knows nothing about events, JSON or completion: callers classify the lines it
// emits (ParseData) and feed the facts to the completion machine.
package sse

import (
	"bytes"

	"github.com/pmgate/pmgate/domain/errs"
)

// Splitter splits a byte stream into lines. Lines end at '\n'; one '\r'
// immediately before the '\n' is stripped. A bare '\r' is not a line terminator.
//
// The result does not depend on how the stream is chunked: any split of the same
// bytes into Feed calls emits the same lines, fails at the same line and leaves the
// same Partial answer. A Splitter is not safe for concurrent use.
type Splitter struct {
	max int
	buf []byte // the buffered partial line; at most max+1 bytes
	err error  // sticky: once Feed failed, it keeps failing
}

// NewSplitter returns a Splitter that rejects lines longer than maxLine bytes (the
// '\n' and one stripped '\r' do not count). maxLine must be positive; it panics
// otherwise, because that is a wiring error.
func NewSplitter(maxLine int) *Splitter {
	if maxLine <= 0 {
		panic("sse: NewSplitter needs a positive maxLine")
	}
	return &Splitter{max: maxLine}
}

// Feed consumes one chunk and calls emit for every line it completes, in order.
// The line slice is only valid during the call to emit: it points into chunk or
// into the Splitter's reused buffer. A trailing partial line is kept for the next
// call.
//
// Feed returns an error carrying errs.UpstreamEventTooLarge as soon as a line, or a
// partial line, is known to exceed the limit; it returns emit's error unchanged if
// emit fails. After any error the Splitter is spent and every later Feed returns
// the same error.
func (s *Splitter) Feed(chunk []byte, emit func(line []byte) error) error {
	if s.err != nil {
		return s.err
	}
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			return s.hold(chunk)
		}
		line := chunk[:i]
		chunk = chunk[i+1:]
		if len(s.buf) > 0 {
			if len(s.buf)+len(line) > s.max+1 {
				return s.fail(errs.Newf(errs.UpstreamEventTooLarge, "line exceeds %d bytes", s.max))
			}
			s.buf = append(s.buf, line...)
			line = s.buf
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) > s.max {
			return s.fail(errs.Newf(errs.UpstreamEventTooLarge, "line exceeds %d bytes", s.max))
		}
		err := emit(line)
		s.buf = s.buf[:0]
		if err != nil {
			return s.fail(err)
		}
	}
	return nil
}

// hold appends the tail of a chunk that has no '\n' to the partial line. A
// partial line may reach max+1 bytes only when its last byte is '\r', which a
// following '\n' would strip; beyond that the line is certainly too long.
func (s *Splitter) hold(tail []byte) error {
	n := len(s.buf) + len(tail)
	if n > s.max+1 || (n == s.max+1 && tail[len(tail)-1] != '\r') {
		return s.fail(errs.Newf(errs.UpstreamEventTooLarge, "line exceeds %d bytes", s.max))
	}
	if s.buf == nil {
		s.buf = make([]byte, 0, min(s.max+1, 4096))
	}
	s.buf = append(s.buf, tail...)
	return nil
}

func (s *Splitter) fail(err error) error {
	s.err = err
	s.buf = s.buf[:0]
	return err
}

// Partial reports whether a partial line is buffered. At EOF a partial line means
// the last frame was truncated.
func (s *Splitter) Partial() bool { return len(s.buf) > 0 }

// ParseData returns the payload of an SSE "data:" line, with at most one space
// after the colon removed, and ok=true. Every other line (event:, id:, retry:,
// ":" comments, blank lines, a field name without a colon) gives ok=false. The
// payload aliases line.
func ParseData(line []byte) (payload []byte, ok bool) {
	const prefix = "data:"
	if len(line) < len(prefix) || string(line[:len(prefix)]) != prefix {
		return nil, false
	}
	payload = line[len(prefix):]
	if len(payload) > 0 && payload[0] == ' ' {
		payload = payload[1:]
	}
	return payload, true
}
