package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/domain/errs"
)

// This file is the one place where an error becomes an HTTP answer
// (writeShaped, in the shape of the route's API: OpenAI's, or the Anthropic
// and Gemini shapes of shapes.go, which start
// from the same public view). Status,
// OpenAI type, retryability and message all come from the catalog
// (errs.Lookup via errs.CodeOf); the only additions are the routing table
// below and the request-path detail of refusals.

// routeError is an answer whose HTTP status is not the catalog's: a routing
// answer (routing has no gateway code of its own: it carries invalid_request,
// with type, message and retryability from the catalog) or one of net/http's
// own connection-level answers, which keep net/http's status (conn.go).
// routeErrors are the only places where a status is not taken from the
// catalog.
type routeError struct {
	cause  error
	status int
	detail string
}

func (e *routeError) Error() string { return e.cause.Error() }
func (e *routeError) Unwrap() error { return e.cause }

var (
	errNoRoute  = &routeError{errs.New(errs.InvalidRequest), http.StatusNotFound, "There is no such route."}
	errNoMethod = &routeError{errs.New(errs.InvalidRequest), http.StatusMethodNotAllowed, "The method is not allowed on this route."}
)

// retryAfterer is implemented by errors that know how long a client should
// wait (for example an upstream 429 with Retry-After). It is matched
// structurally anywhere in the chain, so other adapters need not import this
// package.
type retryAfterer interface{ RetryAfter() time.Duration }

// settingHinter is implemented by upstream errors that know which setting to
// check (the Postman adapter's diagnosis); matched structurally like
// retryAfterer.
type settingHinter interface{ SettingHint() string }

// publicDetailer is implemented by errors of other packages that carry a
// fixed, value-free sentence a client may see (the upstream adapter's
// query-length refusal, toolschema.ArgumentsError); publicParamer by those
// that also name a parameter path. Matched structurally, like retryAfterer.
type publicDetailer interface{ PublicDetail() string }

type publicParamer interface{ PublicParam() string }

// upstreamNoter is implemented by the one error that carries upstream text a
// client may see: the loop-approval gate (upstream_loop_approval), whose
// message, reasons, counters and thresholds say why the service paused and
// when. The upstream adapter bounds them and masks the configured
// credentials. Matched structurally, like retryAfterer.
type upstreamNoter interface{ UpstreamNote() string }

// transientWording matches text that coding agents read as a transient
// failure wherever it appears in an error body, whatever the status (opencode
// retries any error whose message or body contains a 5xx or 429 number, "rate
// limit", "overloaded", "try again later"…). Upstream text that matches is not
// put into the body of an answer that must not be retried; the log keeps it.
var transientWording = regexp.MustCompile(`(?i)408|409|429|5[0-9][0-9]|rate.?limit|too many requests|overload|unavailable|` +
	`internal.?(server.?)?error|server.?error|provider.?returned.?error|terminated|fetch failed|network|connection|socket|` +
	`timeout|timed out|time out|try (your request )?again|retry|exhausted|at capacity|econn|etimedout|getaddrinfo|enotfound|eai_again`)

// noteWithheld replaces an upstream note that transientWording matched.
const noteWithheld = "The upstream's reasons and numbers are in the gateway's log."

// Bounds of the retry-after header, in seconds.
const (
	defaultRetryAfter = 1
	maxRetryAfter     = 3600
	// maxQuotaRetryAfter bounds the wait of a key's own quota: at most until
	// the first of the next month.
	maxQuotaRetryAfter = 31 * 24 * 3600
)

// codeOf maps an error to its catalog code. Bare context errors (a service
// that returned ctx.Err()) are classified by which context ended: the
// client's request context → client_cancelled; the gateway's request timeout
// → upstream_timeout.
func codeOf(ctx context.Context, err error) errs.Code {
	c := errs.CodeOf(err)
	if c != errs.InternalError && c != errs.ClientCancelled {
		return c
	}
	switch {
	case clientGone(ctx):
		return errs.ClientCancelled
	case errors.Is(context.Cause(ctx), errRequestTimeout) || errors.Is(err, errRequestTimeout):
		return errs.UpstreamTimeout
	}
	return c
}

// clientGone reports whether the client's own request context ended (as
// opposed to the gateway's request timeout, which is a child context).
func clientGone(ctx context.Context) bool {
	if rc, ok := ctx.Value(clientCtxKey{}).(context.Context); ok {
		return rc.Err() != nil
	}
	return false
}

// clientCtxKey stores the request's original context beneath the timeout.
type clientCtxKey struct{}

// errorBody is the OpenAI error shape: all four keys always present.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// entryOf is the catalog entry err is answered with.
func entryOf(ctx context.Context, err error) errs.Entry {
	e, ok := errs.Lookup(codeOf(ctx, err))
	if !ok || e.Status == 0 {
		e = errs.MustEntry(errs.InternalError)
	}
	return e
}

// public renders what a client may see of err, and its HTTP status.
func public(ctx context.Context, err error) (errorBody, errs.Entry, int) {
	e := entryOf(ctx, err)
	status, msg := e.Status, e.Message
	var param *string
	var re *rules.Refusal
	if e.Code != errs.InternalError && errors.As(err, &re) {
		if re.Param() != "" {
			p := re.Param()
			param = &p
		}
		switch {
		case re.Detail() == "":
		case re.Param() != "":
			msg += " " + re.Param() + ": " + re.Detail()
		default:
			msg += " " + re.Detail()
		}
	}
	// An upstream failure whose error type names a setting says which one to
	// check (a fixed sentence of the adapter; never upstream text).
	var hint settingHinter
	if e.Code != errs.InternalError && errors.As(err, &hint) {
		if h := hint.SettingHint(); h != "" {
			msg += " Hint: " + h + "."
		}
	}
	// An error may carry a sentence written for clients (which tool call's
	// arguments broke which schema keyword, the query size and its limit); it
	// never holds a value.
	var pd publicDetailer
	if e.Code != errs.InternalError && re == nil && errors.As(err, &pd) {
		var pp publicParamer
		if errors.As(err, &pp) {
			if p := pp.PublicParam(); p != "" {
				param = &p
			}
		}
		msg += " " + pd.PublicDetail()
	}
	var un upstreamNoter
	if e.Code == errs.UpstreamLoopApproval && errors.As(err, &un) {
		if n := un.UpstreamNote(); n != "" && !transientWording.MatchString(n) {
			msg += " " + n
		} else if n != "" {
			msg += " " + noteWithheld
		}
	}
	var rt *routeError
	if errors.As(err, &rt) {
		status = rt.status
		msg += " " + rt.detail
	}
	return errorBody{Error: errorObject{Message: msg, Type: string(e.Type), Param: param, Code: string(e.Code)}}, e, status
}

// failure is one error as every shape answers it: the public view (the
// OpenAI body), the catalog entry, the status in the shape's answer, and the
// wait retry-after says (in seconds; 0: none).
type failure struct {
	err    error
	public errorBody
	e      errs.Entry
	status int
	wait   int
}

// errShape is one API's error answer: its status for the catalog's (nil:
// the catalog's), its body, and which of the two shape-specific headers it
// sends (the code as x-pmgate-error-code; WWW-Authenticate on a key
// refusal). Every shape is written by writeShaped.
type errShape struct {
	status     func(int) int
	body       func(context.Context, failure) any
	codeHeader bool
	challenge  bool
}

// The error shapes, one per API.
var (
	shapeOpenAI    = &errShape{body: func(_ context.Context, f failure) any { return f.public }, challenge: true}
	shapeAnthropic = &errShape{status: func(s int) int { s, _ = anthropicStatus(s); return s },
		body: func(ctx context.Context, f failure) any { return anthropicOf(ctx, f) }, codeHeader: true}
	shapeGemini = &errShape{body: func(ctx context.Context, f failure) any { return geminiOf(ctx, f) }, codeHeader: true}
)

// failureIn is err as shape answers it: its status, and the wait computed
// once for both the retry-after header and a body that repeats it.
func failureIn(ctx context.Context, shape *errShape, err error) failure {
	body, e, status := public(ctx, err)
	if shape.status != nil {
		status = shape.status(status)
	}
	return failure{err: err, public: body, e: e, status: status, wait: retryAfter(e, status, err)}
}

// writeShaped is the one writer of an error answer, in any shape: the body,
// the status, x-should-retry: false for deterministic failures, retry-after
// on 429/503/529 (retryAfter), and the shape's own headers. It returns the
// catalog entry it answered.
func writeShaped(ctx context.Context, w http.ResponseWriter, shape *errShape, err error) errs.Entry {
	f := failureIn(ctx, shape, err)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if shape.codeHeader {
		h.Set(errorCodeHeader, string(f.e.Code))
	}
	setRetryHeaders(h, f.e, f.wait)
	if shape.challenge && f.e.Code == errs.InvalidAPIKey {
		h.Set("WWW-Authenticate", `Bearer realm="pmgate"`)
	}
	w.WriteHeader(f.status)
	out, _ := json.Marshal(shape.body(ctx, f)) // plain strings only: cannot fail
	_, _ = w.Write(append(out, '\n'))
	return f.e
}

// writeError writes every failure of the API, in the shape of the request's
// route (OpenAI's unless the route chose another), and logs internal errors
// (redacted); clients only ever see the generic internal message.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	s.noteError(ctx, writeShaped(ctx, w, shapeOf(ctx), err), err)
}

// shapeOf is the error shape of a request's route.
func shapeOf(ctx context.Context) *errShape {
	if sh := infoFrom(ctx).shape; sh != nil {
		return sh
	}
	return shapeOpenAI
}

// writeOpenAIError writes an OpenAI-shaped error answer, for the connection
// layer's rewrite of net/http's own answers.
func writeOpenAIError(ctx context.Context, w http.ResponseWriter, err error) errs.Entry {
	return writeShaped(ctx, w, shapeOpenAI, err)
}

// openAIStreamFailure is the one event written when a chat completions
// stream fails after its headers (chatapi's Env.Fail): the same body as
// writeError, without finish_reason or [DONE] afterwards.
func openAIStreamFailure(ctx context.Context, err error) any {
	body, _, _ := public(ctx, err)
	return body
}

// responsesStreamFailure is the code and message of the failed response
// object that ends a Responses stream (respapi's Env.Fail).
func responsesStreamFailure(ctx context.Context, err error) (code, message string) {
	body, _, _ := public(ctx, err)
	return body.Error.Code, body.Error.Message
}

// setRetryHeaders sets the retry headers of one error answer, the same on
// every API: x-should-retry: false for a deterministic failure; retry-after
// when the answer says a wait (retryAfter).
func setRetryHeaders(h http.Header, e errs.Entry, wait int) {
	if !e.Retryable {
		h.Set("x-should-retry", "false")
	}
	if wait > 0 {
		h.Set("retry-after", strconv.Itoa(wait))
	}
}

// retryAfter is the wait in seconds an error answer says, or 0: on a 429 or
// 503 (529 on the Anthropic routes) that is retryable, and on one that knows
// when its window frees even when an automatic retry is pointless
// (key_quota_exhausted: hours away, but said).
func retryAfter(e errs.Entry, status int, err error) int {
	var ra retryAfterer
	knowsWait := errors.As(err, &ra)
	if (e.Retryable || knowsWait) && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || status == statusOverloaded) {
		return retryAfterSeconds(err)
	}
	return 0
}

func retryAfterSeconds(err error) int {
	var ra retryAfterer
	if errors.As(err, &ra) {
		d := ra.RetryAfter()
		secs := int((d + time.Second - 1) / time.Second) // round up
		limit := maxRetryAfter
		if errs.Has(err, errs.KeyQuotaExhausted) {
			limit = maxQuotaRetryAfter // the gateway's own window: its end is known exactly
		}
		switch {
		case secs < defaultRetryAfter:
			return defaultRetryAfter
		case secs > limit:
			return limit
		}
		return secs
	}
	return defaultRetryAfter
}
