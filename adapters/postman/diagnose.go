package postman

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/errors"
)

// Diagnosis of upstream failures: what the log may say about why a request
// failed without ever quoting the upstream's text. A transport failure becomes
// one fixed cause token; an upstream error body or failure event contributes
// only its error *type* (an upper-case identifier such as
// INPUT_VALIDATION_ERROR), never its message.

// Transport cause tokens.
const (
	causeTLSUnknownAuthority = "tls_unknown_authority"
	causeTLSHostname         = "tls_hostname_mismatch"
	causeTLSInvalidCert      = "tls_certificate_invalid"
	causeTLSHandshake        = "tls_handshake_failed"
	causeDNSNotFound         = "dns_not_found"
	causeDNS                 = "dns_failed"
	causeRefused             = "connection_refused"
	causeReset               = "connection_reset"
	causeClosed              = "connection_closed"
	causeTimeout             = "timeout"
	causeCancelled           = "cancelled"
	causeOther               = "other"
)

// transportCause classifies an error of the HTTP round trip.
func transportCause(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	var alert tls.AlertError
	var dns *net.DNSError
	var nerr net.Error
	switch {
	case errors.As(err, &unknownCA):
		return causeTLSUnknownAuthority
	case errors.As(err, &hostname):
		return causeTLSHostname
	case errors.As(err, &invalid):
		return causeTLSInvalidCert
	case errors.As(err, &verify):
		return causeTLSInvalidCert
	case errors.As(err, &record), errors.As(err, &alert):
		return causeTLSHandshake
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return causeDNSNotFound
		}
		return causeDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return causeRefused
	case errors.Is(err, syscall.ECONNRESET):
		return causeReset
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return causeTimeout
	case errors.Is(err, context.Canceled):
		return causeCancelled
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return causeClosed
	}
	return causeOther
}

// errorTypeRE is what an upstream error type looks like: an upper-case
// identifier of 3-64 characters (FORBIDDEN, INPUT_VALIDATION_ERROR). Compiled
// on first use: only a failed upstream response needs it, and its bounded
// repetition costs about 50 KB to compile.
var errorTypeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Z0-9_]{2,63}$`) })

// upstreamErrorType finds the error type in an upstream error body (the
// bounded peek): the value of errorType, type, name or code, at the top level
// or under "error", or a message that starts with a type ("INPUT_VALIDATION_ERROR:
// …" gives INPUT_VALIDATION_ERROR). It returns "" when there is none; the rest of
// the body is never kept.
func upstreamErrorType(body []byte) string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	if t := typeIn(doc); t != "" {
		return t
	}
	var inner map[string]json.RawMessage
	if raw, ok := doc["error"]; ok && json.Unmarshal(raw, &inner) == nil {
		return typeIn(inner)
	}
	return ""
}

func typeIn(m map[string]json.RawMessage) string {
	for _, k := range []string{"errorType", "type", "name", "code"} {
		var s string
		if json.Unmarshal(m[k], &s) == nil && isErrorType(s) {
			return s
		}
	}
	for _, k := range []string{"message", "error"} {
		var s string
		if json.Unmarshal(m[k], &s) != nil {
			continue
		}
		head, _, _ := strings.Cut(s, ":")
		if head = strings.TrimSpace(head); isErrorType(head) {
			return head
		}
	}
	return ""
}

func isErrorType(s string) bool {
	return errorTypeRE().MatchString(s)
}

// settingHint names the configuration setting an upstream error type points
// at, or "".
func settingHint(errorType string) string {
	switch {
	case strings.Contains(errorType, "MODEL"):
		return "check POSTMAN_MODEL_MAP: the upstream does not accept this model enum (docs/CONNECT.md lists the known ones)"
	case strings.Contains(errorType, "WORKSPACE"), strings.Contains(errorType, "TEAM"):
		return "check POSTMAN_WORKSPACE_ID: the upstream does not accept this workspace (team) id"
	case errorType == "INPUT_VALIDATION_ERROR":
		return "check POSTMAN_MODEL_MAP (the upstream model enum) and POSTMAN_WORKSPACE_ID (the team id): " +
			"the upstream refused a field of the request, and these two are the configured ones"
	}
	return ""
}

// diagnosedError carries the diagnosis of an upstream failure: a transport
// cause token, the upstream's error type and the setting hint. It adds no
// text to the error; the hint reaches the client through SettingHint and the
// rest reaches only the log.
type diagnosedError struct {
	cause     error
	transport string // a cause token, "" when the request got a response
	errorType string // the upstream's error type, "" when none
}

func (e *diagnosedError) Error() string { return e.cause.Error() }
func (e *diagnosedError) Unwrap() error { return e.cause }

// SettingHint is a fixed sentence naming the setting to check, or "" (read
// structurally by the HTTP adapter).
func (e *diagnosedError) SettingHint() string { return settingHint(e.errorType) }

// SafeFormatError prints nothing of its own and hands over to the cause.
func (e *diagnosedError) SafeFormatError(errors.Printer) error { return e.cause }

// Format implements fmt.Formatter through cockroachdb/errors.
func (e *diagnosedError) Format(s fmt.State, verb rune) { errors.FormatError(e, s, verb) }

// diagnose attaches a diagnosis to err (nil-safe; nothing when both are "").
func diagnose(err error, transport, errorType string) error {
	if err == nil || transport == "" && errorType == "" {
		return err
	}
	return &diagnosedError{cause: err, transport: transport, errorType: errorType}
}

// diagnosisOf returns the diagnosis attached to err, if any.
// Diagnose is the diagnosis of an adapter error, for reports: the transport
// cause token (tls_unknown_authority, dns_not_found, connection_refused,
// timeout, …; "" when the failure was not in transport) and the setting hint
// of the upstream's error type ("" when it names none). Both come from
// closed sets written in this package; neither quotes the upstream.
func Diagnose(err error) (cause, hint string) {
	transport, typ := diagnosisOf(err)
	return transport, settingHint(typ)
}

// ErrorType is the upstream's error type of an adapter error, for reports:
// the service's own type name (TOOL_CALL_NOT_FOUND, INPUT_VALIDATION_ERROR,
// …) as a failure event or an error body named it, only when it has the
// shape of one (an upper-case identifier of 3-64 characters), "" otherwise.
// It never carries the service's message.
func ErrorType(err error) string {
	_, typ := diagnosisOf(err)
	return typ
}

func diagnosisOf(err error) (transport, errorType string) {
	var d *diagnosedError
	if errors.As(err, &d) {
		return d.transport, d.errorType
	}
	return "", ""
}
