package postman

import (
	"fmt"
	"time"

	"github.com/cockroachdb/errors"
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

// refusalError is a refusal before sending whose parameter path and detail a
// client may see: the detail is a sentence of this package with numbers only,
// never request content. The HTTP layer reads PublicParam and PublicDetail
// structurally.
type refusalError struct {
	cause         error
	param, detail string
}

func refusal(cause error, param, detail string) error {
	return &refusalError{cause: cause, param: param, detail: detail}
}

func (e *refusalError) Error() string        { return e.cause.Error() }
func (e *refusalError) Unwrap() error        { return e.cause }
func (e *refusalError) PublicParam() string  { return e.param }
func (e *refusalError) PublicDetail() string { return e.detail }

// SafeFormatError prints nothing of its own and hands over to the cause.
func (e *refusalError) SafeFormatError(errors.Printer) error { return e.cause }

// Format implements fmt.Formatter through cockroachdb/errors.
func (e *refusalError) Format(s fmt.State, verb rune) { errors.FormatError(e, s, verb) }
