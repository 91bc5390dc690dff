package postman

import (
	"fmt"

	"github.com/cockroachdb/errors"

	"pmgate/ports"
)

// notSentError marks an error that proves nothing reached the upstream. It
// carries the ports.ErrNotSent mark of cockroachdb/errors and also answers the
// standard library's errors.Is, so either package recognizes it. It adds no
// text of its own.
type notSentError struct{ cause error }

// notSent marks an error raised before anything was sent.
func notSent(err error) error {
	return &notSentError{cause: errors.Mark(err, ports.ErrNotSent)}
}

func (e *notSentError) Error() string { return e.cause.Error() }
func (e *notSentError) Unwrap() error { return e.cause }

// Is makes the standard library's errors.Is recognize ports.ErrNotSent.
func (e *notSentError) Is(target error) bool { return target == ports.ErrNotSent }

// SafeFormatError prints nothing of its own and hands over to the cause.
func (e *notSentError) SafeFormatError(errors.Printer) error { return e.cause }

// Format implements fmt.Formatter through cockroachdb/errors.
func (e *notSentError) Format(s fmt.State, verb rune) { errors.FormatError(e, s, verb) }
