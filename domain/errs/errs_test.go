package errs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
)

// The codes and statuses the public documentation fixes (docs/ERRORS.md).
// Correlation capacity could be 429 or 503; pmgate uses 503.
var documented = map[errs.Code]int{
	"invalid_api_key": 401, "model_not_found": 404, "request_too_large": 413, "invalid_request": 400,
	"unsupported_parameter": 400, "concurrency_limit_exceeded": 429, "request_timeout": 408,
	"unknown_tool_call": 404, "tool_result_group_mismatch": 400, "tool_result_incomplete": 400,
	"continuation_history_mismatch": 409, "continuation_model_mismatch": 409, "continuation_tools_mismatch": 409,
	"continuation_workspace_mismatch": 409, "continuation_inflight": 409, "tool_call_already_consumed": 409,
	"continuation_conflict": 409, "tool_call_expired": 410, "tool_call_cancelled": 409,
	"continuation_outcome_uncertain": 502, "correlation_capacity_exceeded": 503,
	"unsupported_tool_result_continuation": 400, "correlation_store_unavailable": 503,
	"upstream_web_session_auth_failed": 502, "upstream_redirect_rejected": 502, "upstream_content_type_error": 502,
	"upstream_completion_ambiguous": 502, "upstream_incomplete_stream": 502, "upstream_empty_stream": 502,
	"upstream_model_mismatch": 502, "upstream_unverified_event_shape": 502,
}

func TestEveryDocumentedCodeHasItsStatus(t *testing.T) {
	for code, status := range documented {
		t.Run(string(code), func(t *testing.T) {
			is := is.New(t)
			e, ok := errs.Lookup(code)
			is.True(ok)                // the code is in the catalog
			is.Equal(e.Status, status) // with the documented status
			is.True(e.Message != "")   // and a fixed message
			is.True(e.Type != "")      // and an OpenAI error type
		})
	}
}

func TestOnlyRetryableCodesInviteARetry(t *testing.T) {
	is := is.New(t)
	for _, e := range errs.Catalog() {
		if e.Retryable {
			is.True(e.Status == 408 || e.Status == 429 || e.Status == 502 || e.Status == 503) // retry advice only for load and pre-send failures
		}
	}
	is.True(!errs.MustEntry(errs.ContinuationOutcomeUncertain).Retryable) // an uncertain dispatch is never retried
	is.True(!errs.MustEntry(errs.UpstreamTimeout).Retryable)              // nor a timeout that may have reached the upstream
}

func TestCatalogMessagesAreFixedSentences(t *testing.T) {
	is := is.New(t)
	for _, e := range errs.Catalog() {
		is.True(!strings.ContainsAny(e.Message, "%{}")) // no format verbs or templates in client text
		is.True(strings.HasSuffix(e.Message, "."))      // a sentence
	}
}

func TestCodeOfFindsTheCodeThroughWrapping(t *testing.T) {
	is := is.New(t)
	err := errors.Wrap(errs.New(errs.ToolCallExpired), "store update")
	is.Equal(errs.CodeOf(err), errs.ToolCallExpired)              // wrapped codes are found
	is.True(errs.Has(err, errs.ToolCallExpired))                  // and tested with Has
	is.Equal(errs.CodeOf(errors.New("boom")), errs.InternalError) // unmarked errors are internal
	is.Equal(errs.CodeOf(nil), errs.Code(""))                     // nil has no code
}

func TestTheOutermostCodeWins(t *testing.T) {
	is := is.New(t)
	inner := errs.New(errs.UpstreamTimeout)
	outer := errs.Wrap(inner, errs.ContinuationOutcomeUncertain)
	is.Equal(errs.CodeOf(outer), errs.ContinuationOutcomeUncertain) // the continuation's verdict is what the client sees
	is.True(errs.Has(outer, errs.UpstreamTimeout))                  // the cause stays inspectable
}

func TestRedactHidesArgumentsButKeepsCodes(t *testing.T) {
	is := is.New(t)
	err := errs.Newf(errs.InvalidRequest, "param %s bad value %s", "messages[0]", "postman.sid=SECRET123")
	out := errs.Redact(err)
	is.True(!strings.Contains(out, "SECRET123"))                   // arguments are redacted
	is.True(strings.Contains(out, "param"))                        // the format string is kept
	is.Equal(errs.Public(err).Code, errs.InvalidRequest)           // the public view is the code
	is.True(!strings.Contains(errs.Public(err).Message, "SECRET")) // and its fixed message
	_ = fmt.Sprint(err)
}

func TestNewRecordsOneStackTrace(t *testing.T) {
	is := is.New(t)
	err := errs.New(errs.InvalidRequest)
	is.Equal(strings.Count(fmt.Sprintf("%+v", err), "-- stack trace:"), 1)                      // the caller's stack, recorded once
	is.True(strings.Contains(fmt.Sprintf("%+v", err), "errs_test.TestNewRecordsOneStackTrace")) // and it starts at the caller
}
