package postman

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
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

// firewallPage reports whether an error answer is the service's firewall
// block page rather than the origin's: an HTML body (the origin answers JSON)
// that Cloudflare marked, by its Cf-Mitigated header or by naming itself in
// the page ("Attention Required! | Cloudflare"; docs/UPSTREAM.md). The body
// is only searched, never kept or shown.
func firewallPage(h http.Header, body []byte) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "text/html" {
		return false
	}
	return h.Get("Cf-Mitigated") != "" || bytes.Contains(bytes.ToLower(body), []byte("cloudflare"))
}

// cycleEndError is upstream_quota_exhausted from a usage event that named the
// end of its usage cycle: the client is told when the service said the cycle
// ends (a time the decoder parsed and re-wrote, never the upstream's text).
// The HTTP layer reads PublicDetail structurally.
type cycleEndError struct {
	cause error
	end   string // RFC 3339, UTC
}

func (e *cycleEndError) Error() string { return e.cause.Error() }
func (e *cycleEndError) Unwrap() error { return e.cause }

// PublicDetail names the end of the usage cycle.
func (e *cycleEndError) PublicDetail() string {
	return "The upstream reports that the current usage cycle ends at " + e.end + "."
}

// SafeFormatError prints nothing of its own and hands over to the cause.
func (e *cycleEndError) SafeFormatError(errors.Printer) error { return e.cause }

// Format implements fmt.Formatter through cockroachdb/errors.
func (e *cycleEndError) Format(s fmt.State, verb rune) { errors.FormatError(e, s, verb) }
