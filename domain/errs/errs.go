// Package errs is pmgate's error catalog: every stable error code the gateway can
// report, the HTTP status and OpenAI error type each one maps to, whether a retry
// by the client can help, and one sentinel error per code.
//
// The catalog is the only place statuses come from. Messages are fixed per code and
// safe to log: they never contain secrets, upstream identifiers or user content.
// Callers attach such data, if at all, as redactable format arguments of
// cockroachdb/errors, and render errors for logs with Redact.
package errs

import (
	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"
)

// Code is a stable, machine-readable error code. Codes print unredacted.
type Code string

// SafeValue marks codes as safe for logs and reports.
func (Code) SafeValue() {}

// String returns the code itself.
func (c Code) String() string { return string(c) }

// Type is the OpenAI error "type" field.
type Type string

// SafeValue marks error types as safe for logs and reports.
func (Type) SafeValue() {}

// OpenAI error types used by the gateway.
const (
	TypeInvalidRequest Type = "invalid_request_error"
	TypeAuthentication Type = "authentication_error"
	TypeNotFound       Type = "not_found_error"
	TypeConflict       Type = "conflict_error"
	TypeRateLimit      Type = "rate_limit_error"
	TypeQuota          Type = "insufficient_quota"
	TypeUpstream       Type = "upstream_error"
	TypeTimeout        Type = "timeout_error"
	TypeServer         Type = "server_error"
	TypeConfig         Type = "configuration_error"
	TypePermission     Type = "permission_error"
)

// Source names the project document that explains a code.
type Source string

// Sources of the catalog's codes.
const (
	SourceContract    Source = "docs/ERRORS.md"
	SourceCorrelation Source = "docs/CORRELATION.md"
	SourceWebSession  Source = "docs/UPSTREAM.md"
	SourceGateway     Source = "pmgate"
)

// Entry is one row of the catalog.
type Entry struct {
	Code   Code
	Status int  // HTTP status; 0 for start-up (configuration) errors that never reach HTTP
	Type   Type // OpenAI error type
	// Retryable says whether the same request, sent again later by the client, can
	// succeed. False means the gateway sends `x-should-retry: false`.
	Retryable bool
	Message   string // fixed, log-safe, user-facing sentence
	Source    Source
}

// The catalog's codes.
const (
	// The HTTP API (docs/ERRORS.md).
	InvalidAPIKey            Code = "invalid_api_key"
	ModelNotFound            Code = "model_not_found"
	RequestTooLarge          Code = "request_too_large"
	InvalidRequest           Code = "invalid_request"
	UnsupportedParameter     Code = "unsupported_parameter"
	ConcurrencyLimitExceeded Code = "concurrency_limit_exceeded"
	// UpstreamQueryTooLong: the upstream query built from the request would
	// exceed POSTMAN_MAX_QUERY_CHARS; nothing was sent.
	UpstreamQueryTooLong Code = "upstream_query_too_long"
	// UpstreamToolResultTooLong: one tool result of a continuation is longer
	// than POSTMAN_MAX_TOOL_RESULT_CHARS; nothing was sent.
	UpstreamToolResultTooLong Code = "upstream_tool_result_too_long"
	// RequestTimeout: the request body did not arrive within
	// BODY_READ_TIMEOUT_MS; nothing was sent upstream.
	RequestTimeout Code = "request_timeout"
	// HostNotAllowed / OriginNotAllowed: the Host header, or a browser's
	// Origin, is not among ALLOWED_HOSTS (a DNS-rebinding defence).
	HostNotAllowed   Code = "host_not_allowed"
	OriginNotAllowed Code = "origin_not_allowed"
	// KeyRateLimited / KeyQuotaExhausted: the key slot's own limits
	// (requests per minute; dispatches per day or month) refused the request
	// before anything was sent (docs/USAGE.md).
	KeyRateLimited    Code = "key_rate_limited"
	KeyQuotaExhausted Code = "key_quota_exhausted"
	// InsufficientScope: an inference key asked for the control page's data
	// or the metrics, which need an admin key (docs/KEYS.md).
	InsufficientScope Code = "insufficient_scope"
	// IdempotencyKeyInUse / IdempotencyKeyReused: an explicit Idempotency-Key
	// whose first request is still being answered, or that came with another
	// body; RetryOutcomeUnknown: a repeat of a request whose earlier attempt
	// was dispatched and whose answer cannot be replayed (docs/USAGE.md,
	// "Retries never spend twice"). None of them sends anything upstream.
	IdempotencyKeyInUse  Code = "idempotency_key_in_use"
	IdempotencyKeyReused Code = "idempotency_key_reused"
	RetryOutcomeUnknown  Code = "retry_outcome_unknown"

	// Tool-call correlation (docs/CORRELATION.md).
	UnknownToolCall                   Code = "unknown_tool_call"
	ToolResultGroupMismatch           Code = "tool_result_group_mismatch"
	ToolResultIncomplete              Code = "tool_result_incomplete"
	ContinuationHistoryMismatch       Code = "continuation_history_mismatch"
	ContinuationModelMismatch         Code = "continuation_model_mismatch"
	ContinuationToolsMismatch         Code = "continuation_tools_mismatch"
	ContinuationWorkspaceMismatch     Code = "continuation_workspace_mismatch"
	ContinuationInflight              Code = "continuation_inflight"
	ToolCallAlreadyConsumed           Code = "tool_call_already_consumed"
	ContinuationConflict              Code = "continuation_conflict"
	ToolCallExpired                   Code = "tool_call_expired"
	ToolCallCancelled                 Code = "tool_call_cancelled"
	ContinuationOutcomeUncertain      Code = "continuation_outcome_uncertain"
	CorrelationCapacityExceeded       Code = "correlation_capacity_exceeded"
	UnsupportedToolResultContinuation Code = "unsupported_tool_result_continuation"
	// CorrelationStoreUnavailable: the shared correlation store (PostgreSQL)
	// could not be reached or a transaction failed; the operation was rolled back.
	CorrelationStoreUnavailable Code = "correlation_store_unavailable"
	// ReplayFormatUnsupported: the cached answer of a consumed tool group was
	// written by a newer release in a format this one cannot read (a rolling
	// deploy); nothing is sent upstream.
	ReplayFormatUnsupported Code = "replay_format_unsupported"

	// Configuration and the upstream (docs/UPSTREAM.md).
	ConfigInvalid                 Code = "config_invalid"
	UpstreamWebSessionAuthFailed  Code = "upstream_web_session_auth_failed"
	UpstreamAuthFailed            Code = "upstream_auth_failed"
	UpstreamRedirectRejected      Code = "upstream_redirect_rejected"
	UpstreamRateLimited           Code = "upstream_rate_limited"
	UpstreamQuotaExhausted        Code = "upstream_quota_exhausted"
	UpstreamRequestRejected       Code = "upstream_request_rejected"
	UpstreamServerError           Code = "upstream_server_error"
	UpstreamStatusError           Code = "upstream_status_error"
	UpstreamContentTypeError      Code = "upstream_content_type_error"
	UpstreamMalformedEvent        Code = "upstream_malformed_event"
	UpstreamEventTooLarge         Code = "upstream_event_too_large"
	UpstreamOutputTooLarge        Code = "upstream_output_too_large"
	UpstreamToolArgumentsTooLarge Code = "upstream_tool_arguments_too_large"
	UpstreamUnverifiedEventShape  Code = "upstream_unverified_event_shape"
	UpstreamUnsupportedEvent      Code = "upstream_unsupported_event"
	UpstreamFailure               Code = "upstream_failure"
	UpstreamCompletionAmbiguous   Code = "upstream_completion_ambiguous"
	UpstreamIncompleteStream      Code = "upstream_incomplete_stream"
	UpstreamEmptyStream           Code = "upstream_empty_stream"
	UpstreamDataAfterDone         Code = "upstream_data_after_done"
	UpstreamModelMismatch         Code = "upstream_model_mismatch"
	UpstreamTimeout               Code = "upstream_timeout"
	UpstreamUnavailable           Code = "upstream_unavailable"
	UpstreamConnectionLost        Code = "upstream_connection_lost"
	UpstreamRequestTooLarge       Code = "upstream_request_too_large"
	// An upstream 503: retryable for a fresh turn, not for tool results.
	UpstreamOverloaded             Code = "upstream_overloaded"
	UpstreamOverloadedContinuation Code = "upstream_overloaded_continuation"
	ClientCancelled                Code = "client_cancelled"
	InternalError                  Code = "internal_error"

	// UpstreamOutputInvalid: a structured output (response_format, text.format)
	// was asked for and the upstream's complete answer is not one JSON value
	// valid against the caller's schema (docs/STRUCTURED-OUTPUT.md).
	UpstreamOutputInvalid Code = "upstream_output_invalid"

	// UpstreamLoopApproval: the service's loop-approval gate ended the stream
	// cleanly with no answer after several consecutive tool rounds; a
	// continuation's tool results were accepted and are never sent again.
	// Its status is one the pinned agents do not retry (docs/ERRORS.md).
	UpstreamLoopApproval Code = "upstream_loop_approval"

	// UpstreamConversationLost: the service answered a continued turn with
	// CONVERSATION_NOT_FOUND: it no longer knows the conversation, so nothing
	// can continue it (docs/CONVERSATIONS.md).
	UpstreamConversationLost Code = "upstream_conversation_lost"

	// UpstreamFirewallBlocked: the service's firewall (its HTML block page on
	// a 403) refused the request, usually because of its content; the
	// credential is not the cause and the same content is blocked again
	// (docs/UPSTREAM.md).
	UpstreamFirewallBlocked Code = "upstream_firewall_blocked"

	// UpstreamAccountBlocked: a usage event with usageState BLOCKED: the
	// service blocked the account itself, which is not a quota.
	UpstreamAccountBlocked Code = "upstream_account_blocked"
)

// catalog is the one table. Order is the order of documentation.
var catalog = []Entry{
	{InvalidAPIKey, 401, TypeAuthentication, false, "The API key is missing or not valid for this gateway.", SourceContract},
	{ModelNotFound, 404, TypeNotFound, false, "The requested model is not configured on this gateway.", SourceContract},
	{RequestTooLarge, 413, TypeInvalidRequest, false, "The request body exceeds the gateway's size limit.", SourceContract},
	{InvalidRequest, 400, TypeInvalidRequest, false, "The request is not valid.", SourceContract},
	{UnsupportedParameter, 400, TypeInvalidRequest, false, "The request uses a parameter or content type this gateway cannot honour.", SourceContract},
	{UpstreamQueryTooLong, 400, TypeInvalidRequest, false, "The conversation is too long for one upstream query; nothing was sent.", SourceContract},
	{UpstreamToolResultTooLong, 400, TypeInvalidRequest, false, "A tool result is longer than the upstream accepts; nothing was sent.", SourceGateway},
	{ConcurrencyLimitExceeded, 429, TypeRateLimit, true, "Too many concurrent requests; retry after the indicated delay.", SourceContract},
	{RequestTimeout, 408, TypeTimeout, true, "The request body did not arrive within the gateway's body read timeout; nothing was sent upstream.", SourceContract},
	{HostNotAllowed, 421, TypeInvalidRequest, false, "The Host of the request is not served by this gateway.", SourceGateway},
	{OriginNotAllowed, 403, TypeInvalidRequest, false, "Requests from this browser origin are not allowed.", SourceGateway},
	{KeyRateLimited, 429, TypeRateLimit, true, "This API key's requests-per-minute limit is reached; retry after the indicated delay. Nothing was sent upstream.", SourceGateway},
	{KeyQuotaExhausted, 429, TypeQuota, false, "This API key's dispatch quota is exhausted until the indicated time. Nothing was sent upstream.", SourceGateway},
	{InsufficientScope, 403, TypePermission, false, "This API key is an inference key; the control page and metrics need an admin key.", SourceGateway},
	{IdempotencyKeyInUse, 409, TypeConflict, false, "A request with this Idempotency-Key is still being answered; send it again later for its outcome.", SourceGateway},
	{IdempotencyKeyReused, 422, TypeInvalidRequest, false, "This Idempotency-Key was already used with a different request body.", SourceGateway},
	{RetryOutcomeUnknown, 502, TypeUpstream, false, "An earlier attempt of this same request was sent upstream and its answer cannot be replayed; it is not sent again.", SourceGateway},

	{UnknownToolCall, 404, TypeNotFound, false, "No pending tool call matches the submitted tool_call_id.", SourceCorrelation},
	{ToolResultGroupMismatch, 400, TypeInvalidRequest, false, "The tool results do not form exactly one issued tool-call group at the end of the conversation.", SourceCorrelation},
	{ToolResultIncomplete, 400, TypeInvalidRequest, false, "Every tool call of the group needs exactly one result.", SourceCorrelation},
	{ContinuationHistoryMismatch, 409, TypeConflict, false, "The conversation before the tool results differs from the one the tool calls were issued in.", SourceCorrelation},
	{ContinuationModelMismatch, 409, TypeConflict, false, "The model differs from the one the tool calls were issued by.", SourceCorrelation},
	{ContinuationToolsMismatch, 409, TypeConflict, false, "The tool definitions differ from the ones the tool calls were issued with.", SourceCorrelation},
	{ContinuationWorkspaceMismatch, 409, TypeConflict, false, "The tool calls belong to a different configuration.", SourceCorrelation},
	{ContinuationInflight, 409, TypeConflict, false, "These tool results are already being processed.", SourceCorrelation},
	{ToolCallAlreadyConsumed, 409, TypeConflict, false, "These tool results were already processed.", SourceCorrelation},
	{ContinuationConflict, 409, TypeConflict, false, "Different tool results were already submitted for these tool calls.", SourceCorrelation},
	{ToolCallExpired, 410, TypeInvalidRequest, false, "The tool calls expired before their results were submitted.", SourceCorrelation},
	{ToolCallCancelled, 409, TypeConflict, false, "The tool calls were cancelled by the gateway before their results were submitted.", SourceCorrelation},
	{ContinuationOutcomeUncertain, 502, TypeUpstream, false, "The tool results may have reached the upstream but the outcome is unknown; they are not sent again.", SourceCorrelation},
	{CorrelationCapacityExceeded, 503, TypeServer, true, "The gateway cannot hold more pending tool calls right now.", SourceCorrelation},
	{UnsupportedToolResultContinuation, 400, TypeInvalidRequest, false, "Tool result continuation is disabled on this gateway.", SourceCorrelation},
	{CorrelationStoreUnavailable, 503, TypeServer, true, "The correlation store is unavailable; retry later.", SourceGateway},
	{ReplayFormatUnsupported, 503, TypeServer, true, "The stored answer to these tool results was written by a newer gateway release; retry once this instance is upgraded. Nothing is sent again.", SourceGateway},

	{ConfigInvalid, 0, TypeConfig, false, "The configuration is not valid.", SourceWebSession},
	{UpstreamWebSessionAuthFailed, 502, TypeUpstream, false, "The upstream rejected the configured web session; the owner may need to replace it.", SourceWebSession},
	{UpstreamAuthFailed, 502, TypeUpstream, false, "The upstream rejected the configured access token.", SourceWebSession},
	{UpstreamRedirectRejected, 502, TypeUpstream, false, "The upstream answered with a redirect, which the gateway never follows.", SourceWebSession},
	{UpstreamFirewallBlocked, 422, TypeInvalidRequest, false, "The upstream's firewall blocked the request, most likely because of its content (for example HTML or script-like text or file paths in a tool result); the credential is not the cause, and the same content is blocked again.", SourceWebSession},
	{UpstreamAccountBlocked, 403, TypePermission, false, "The upstream reports that the Postman account is blocked; this is not a quota, and the gateway cannot change it. The owner must check the account with Postman.", SourceWebSession},
	{UpstreamRateLimited, 429, TypeRateLimit, true, "The upstream is rate limiting this credential; retry after the indicated delay.", SourceWebSession},
	{UpstreamQuotaExhausted, 429, TypeQuota, false, "The upstream reports that the credential's quota is exhausted.", SourceWebSession},
	{UpstreamRequestRejected, 422, TypeInvalidRequest, false, "The upstream rejected the request.", SourceWebSession},
	{UpstreamServerError, 502, TypeUpstream, false, "The upstream failed with a server error.", SourceWebSession},
	{UpstreamStatusError, 502, TypeUpstream, false, "The upstream answered with an unexpected status.", SourceWebSession},
	{UpstreamContentTypeError, 502, TypeUpstream, false, "The upstream did not answer with an event stream.", SourceWebSession},
	{UpstreamMalformedEvent, 502, TypeUpstream, false, "The upstream sent a malformed event.", SourceWebSession},
	{UpstreamEventTooLarge, 502, TypeUpstream, false, "The upstream sent an event larger than the configured limit.", SourceWebSession},
	{UpstreamOutputTooLarge, 502, TypeUpstream, false, "The upstream output exceeds the configured limit.", SourceWebSession},
	{UpstreamToolArgumentsTooLarge, 502, TypeUpstream, false, "The upstream tool-call arguments exceed the configured limit.", SourceWebSession},
	{UpstreamUnverifiedEventShape, 502, TypeUpstream, false, "The upstream sent an event the gateway does not know; the response is not trusted.", SourceWebSession},
	{UpstreamUnsupportedEvent, 502, TypeUpstream, false, "The upstream sent an event this gateway does not support.", SourceWebSession},
	{UpstreamFailure, 502, TypeUpstream, false, "The upstream reported a failure.", SourceWebSession},
	{UpstreamCompletionAmbiguous, 502, TypeUpstream, false, "The upstream stream ended without proof that the answer was complete.", SourceWebSession},
	{UpstreamIncompleteStream, 502, TypeUpstream, false, "The upstream stream ended before it was complete.", SourceWebSession},
	{UpstreamEmptyStream, 502, TypeUpstream, false, "The upstream stream ended without any output.", SourceWebSession},
	{UpstreamLoopApproval, 400, TypeUpstream, false, "The upstream paused the agent's tool loop after several consecutive tool rounds and asks for approval; the tool results were delivered and are not sent again. Send a new message to continue.", SourceWebSession},
	{UpstreamConversationLost, 410, TypeUpstream, false, "The upstream no longer knows this conversation, so it cannot be continued; nothing was answered. Start a new conversation, or compact this one (Claude Code: /compact).", SourceContract},
	{UpstreamDataAfterDone, 502, TypeUpstream, false, "The upstream sent data after its end marker.", SourceGateway},
	{UpstreamModelMismatch, 502, TypeUpstream, false, "The upstream answered with a different model than the one requested.", SourceWebSession},
	{UpstreamTimeout, 504, TypeTimeout, false, "The upstream did not finish within the request timeout.", SourceGateway},
	{UpstreamUnavailable, 502, TypeUpstream, true, "The upstream could not be reached; nothing was sent.", SourceGateway},
	{UpstreamConnectionLost, 502, TypeUpstream, false, "The connection to the upstream was lost after the request was sent.", SourceGateway},
	{UpstreamRequestTooLarge, 413, TypeInvalidRequest, false, "The upstream request built from this input exceeds the gateway's size limit.", SourceGateway},
	{UpstreamOverloaded, 503, TypeUpstream, true, "The upstream is temporarily unavailable; retry after the indicated delay.", SourceWebSession},
	{UpstreamOverloadedContinuation, 503, TypeUpstream, false, "The upstream was unavailable while answering these tool results; whether it processed them is unknown, so they are not sent again.", SourceWebSession},
	{UpstreamOutputInvalid, 502, TypeUpstream, false, "The upstream's answer is not valid against the requested response format; nothing of it is shown.", SourceGateway},
	{ClientCancelled, 499, TypeInvalidRequest, false, "The client cancelled the request.", SourceGateway},
	{InternalError, 500, TypeServer, false, "The gateway failed internally.", SourceGateway},
}

var (
	byCode    = map[Code]Entry{}
	sentinels = map[Code]error{}
)

func init() {
	for _, e := range catalog {
		if _, dup := byCode[e.Code]; dup {
			panic("errs: duplicate code " + string(e.Code))
		}
		byCode[e.Code] = e
		// Sentinel messages must be unique: cockroachdb/errors compares marks by
		// message and type chain.
		sentinels[e.Code] = errors.New("pmgate: " + string(e.Code))
	}
}

// Catalog returns a copy of every entry, in documentation order.
func Catalog() []Entry { return append([]Entry(nil), catalog...) }

// Lookup returns the entry of a code and whether it exists.
func Lookup(c Code) (Entry, bool) {
	e, ok := byCode[c]
	return e, ok
}

// MustEntry returns the entry of a code and panics on an unknown code; it is for
// wiring-time use with the constants of this package.
func MustEntry(c Code) Entry {
	e, ok := byCode[c]
	if !ok {
		panic("errs: unknown code " + string(c))
	}
	return e
}

// Sentinel returns the sentinel error of a code, for errors.Is.
func Sentinel(c Code) error {
	s, ok := sentinels[c]
	if !ok {
		panic("errs: unknown code " + string(c))
	}
	return s
}

// New returns an error carrying code c with its fixed catalog message. The one
// stack trace is the caller's (NewWithDepth records it; nothing else adds one).
func New(c Code) error {
	e := MustEntry(c)
	return errors.Mark(errors.NewWithDepth(1, e.Message), Sentinel(c))
}

// Newf returns an error carrying code c whose message is the catalog message
// followed by detail. The format string is treated as safe; its arguments are
// redacted in logs unless they implement redact.SafeValue. Never pass secrets.
func Newf(c Code, format string, args ...any) error {
	e := MustEntry(c)
	err := errors.NewWithDepthf(1, "%s: "+format, append([]any{redact.SafeString(e.Message)}, args...)...)
	return errors.Mark(err, Sentinel(c))
}

// Wrap marks an existing error with code c. The cause is kept for logs (redacted)
// but never shown to clients.
func Wrap(err error, c Code) error {
	if err == nil {
		return nil
	}
	return errors.Mark(errors.WrapWithDepth(1, err, string(c)), Sentinel(c))
}

// CodeOf returns the code an error carries, or InternalError when it carries none.
// When several codes are marked, the outermost mark wins.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var present []Code
	for _, e := range catalog {
		if errors.Is(err, sentinels[e.Code]) {
			present = append(present, e.Code)
		}
	}
	switch len(present) {
	case 0:
		return InternalError
	case 1:
		return present[0]
	}
	for e := err; e != nil; e = errors.UnwrapOnce(e) {
		inner := errors.UnwrapOnce(e)
		for _, c := range present {
			if errors.Is(e, sentinels[c]) && (inner == nil || !errors.Is(inner, sentinels[c])) {
				return c
			}
		}
	}
	return present[0]
}

// Has reports whether err carries code c.
func Has(err error, c Code) bool { return err != nil && errors.Is(err, Sentinel(c)) }

// Redact renders an error for logs: the safe parts (format strings, codes, enums)
// are kept and every other argument is replaced by a redaction marker.
func Redact(err error) string {
	if err == nil {
		return ""
	}
	return string(redact.Sprint(err).Redact())
}

// Public returns what a client may see of an error: its code, catalog entry and
// the fixed message. Internal errors get the generic internal message.
func Public(err error) Entry {
	return MustEntry(CodeOf(err))
}
