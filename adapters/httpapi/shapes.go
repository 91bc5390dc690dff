package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/domain/errs"
)

// This file is the Anthropic and Gemini error shapes: the public view of
// a failure (errors.go) in the words and statuses of each API, for the
// route's one writer and for a stream's failure event.

// anthropicError is the Anthropic error shape. code and param are pmgate's
// stable error code and the offending parameter (extra members the SDKs
// ignore); code is also sent as the x-pmgate-error-code header.
type anthropicError struct {
	Type      string              `json:"type"`
	Error     anthropicErrorInner `json:"error"`
	RequestID string              `json:"request_id"`
}

type anthropicErrorInner struct {
	Type    string  `json:"type"`
	Message string  `json:"message"`
	Code    string  `json:"code"`
	Param   *string `json:"param,omitempty"`
}

// errorCodeHeader carries the stable pmgate code of every error on the
// Anthropic routes.
const errorCodeHeader = "x-pmgate-error-code"

// anthropicStatus maps a catalog status to the status and error type
// Anthropic pairs (400 invalid_request_error, 401 authentication_error, 402
// billing_error, 403 permission_error, 404 not_found_error, 413
// request_too_large, 429 rate_limit_error, 500 api_error, 504
// timeout_error, 529 overloaded_error), for any code, including codes added
// later: by status alone. Other client errors become 400 (a deterministic
// 409 above all: Claude Code and the SDKs retry 409); 408 and 504 become
// 504, 503 becomes 529, other server errors 500. The pmgate code keeps
// what the status no longer says.
func anthropicStatus(status int) (int, string) {
	switch status {
	case http.StatusUnauthorized:
		return status, "authentication_error"
	case http.StatusPaymentRequired:
		return status, "billing_error"
	case http.StatusForbidden:
		return status, "permission_error"
	case http.StatusNotFound:
		return status, "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return status, "request_too_large"
	case http.StatusTooManyRequests:
		return status, "rate_limit_error"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return http.StatusGatewayTimeout, "timeout_error"
	case http.StatusServiceUnavailable, statusOverloaded:
		return statusOverloaded, "overloaded_error"
	}
	if status >= 500 {
		return http.StatusInternalServerError, "api_error"
	}
	return http.StatusBadRequest, "invalid_request_error"
}

// statusOverloaded is Anthropic's 529 (overloaded_error).
const statusOverloaded = 529

// anthropicBody renders err in the Anthropic shape, with the status to
// answer and the catalog entry (for a stream's error event).
func anthropicBody(ctx context.Context, err error) (anthropicError, errs.Entry, int) {
	f := failureIn(ctx, shapeAnthropic, err)
	return anthropicOf(ctx, f), f.e, f.status
}

// anthropicOf is a failure in the Anthropic shape (f.status is already
// Anthropic's, which anthropicStatus maps to itself). A refusal of the
// request reads like the API's own: "<param>: <detail>".
func anthropicOf(ctx context.Context, f failure) anthropicError {
	_, typ := anthropicStatus(f.status)
	msg := f.public.Error.Message
	var re *rules.Refusal
	if f.e.Code != errs.InternalError && errors.As(f.err, &re) && re.Detail() != "" && re.Param() != "" {
		msg = re.Param() + ": " + re.Detail()
	}
	return anthropicError{Type: "error", Error: anthropicErrorInner{Type: typ, Message: msg, Code: f.public.Error.Code, Param: f.public.Error.Param},
		RequestID: RequestID(ctx)}
}

// noteError records the code of a failure for the access log and logs an
// internal error (redacted).
func (s *server) noteError(ctx context.Context, e errs.Entry, err error) {
	infoFrom(ctx).code = e.Code
	if e.Code == errs.InternalError {
		s.log.LogAttrs(ctx, slog.LevelError, "internal error", slog.String("error", errs.Redact(err)))
	}
}

// geminiError is the Gemini API's error shape. details carries pmgate's
// stable code (an ErrorInfo whose reason is the code, in the domain
// pmgate) and the offending parameter; the code is also the
// x-pmgate-error-code header.
type geminiError struct {
	Error geminiErrorInner `json:"error"`
}

type geminiErrorInner struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []any  `json:"details"` // a geminiErrorInfo, then a geminiRetryInfo when there is a wait
}

// geminiRetryInfo is google.rpc.RetryInfo: the wait retry-after says, which
// gemini-cli reads from the body (it does not read the header): a short
// wait is waited, a long one (a key's quota) ends its retries.
type geminiRetryInfo struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
}

type geminiErrorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata"`
}

// geminiStatus names an HTTP status the way the Gemini API does (the
// google.rpc.Code of the status).
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusPaymentRequired:
		return "FAILED_PRECONDITION"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// geminiBody renders err in the Gemini shape, with the status to answer (the
// catalog's, as on the OpenAI routes) and the catalog entry (for a stream's
// error event).
func geminiBody(ctx context.Context, err error) (geminiError, errs.Entry, int) {
	f := failureIn(ctx, shapeGemini, err)
	return geminiOf(ctx, f), f.e, f.status
}

// geminiOf is a failure in the Gemini shape. A refusal of the request reads
// "<param>: <detail>" after the catalog message; the wait retry-after says
// is also in the body (RetryInfo).
func geminiOf(ctx context.Context, f failure) geminiError {
	body := f.public
	info := geminiErrorInfo{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: body.Error.Code, Domain: "pmgate",
		Metadata: map[string]string{"code": body.Error.Code, "type": body.Error.Type, "request_id": RequestID(ctx)}}
	if body.Error.Param != nil {
		info.Metadata["param"] = *body.Error.Param
	}
	details := []any{info}
	if f.wait > 0 {
		details = append(details, geminiRetryInfo{Type: "type.googleapis.com/google.rpc.RetryInfo", RetryDelay: strconv.Itoa(f.wait) + "s"})
	}
	return geminiError{Error: geminiErrorInner{Code: f.status, Message: body.Error.Message, Status: geminiStatus(f.status),
		Details: details}}
}

// anthropicStreamFailure is the one event: error written when a Messages
// stream fails after its headers (msgapi's Env.Fail): the Anthropic error
// object and request id of anthropicBody.
func anthropicStreamFailure(ctx context.Context, err error) (any, string) {
	body, _, _ := anthropicBody(ctx, err)
	return body.Error, body.RequestID
}

// geminiStreamFailure is a failure after a stream's headers in the Gemini
// shape (gemapi's Env.Fail).
func geminiStreamFailure(ctx context.Context, err error) any {
	body, _, _ := geminiBody(ctx, err)
	return body
}
