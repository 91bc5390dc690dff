package postman

import (
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/ports"
)

// markedError carries a port sentinel (ports.ErrNotSent or ports.ErrNotAccepted)
// both as a cockroachdb/errors mark and for the standard library's errors.Is,
// so either package recognizes it. It adds no text of its own.
type markedError struct {
	cause  error
	target error
}

// notSent marks an error raised before anything was sent.
func notSent(err error) error {
	return &markedError{cause: errors.Mark(err, ports.ErrNotSent), target: ports.ErrNotSent}
}

// notAccepted marks a refusal the upstream answered before processing the
// request (a redirect or a 4xx status).
func notAccepted(err error) error {
	return &markedError{cause: errors.Mark(err, ports.ErrNotAccepted), target: ports.ErrNotAccepted}
}

func (e *markedError) Error() string { return e.cause.Error() }
func (e *markedError) Unwrap() error { return e.cause }

// Is makes the standard library's errors.Is recognize the port sentinel.
func (e *markedError) Is(target error) bool { return target == e.target }

// SafeFormatError prints nothing of its own and hands over to the cause.
func (e *markedError) SafeFormatError(errors.Printer) error { return e.cause }

// Format implements fmt.Formatter through cockroachdb/errors.
func (e *markedError) Format(s fmt.State, verb rune) { errors.FormatError(e, s, verb) }
