package ports

import "context"

// Tracer starts the spans of a request (docs/OPERATE.md, "Traces"). A nil
// Tracer means tracing is off: every caller checks for nil first, so that the
// request path pays nothing for it.
//
// Span names and attribute keys are closed sets declared here; attribute
// values are route templates, statuses, stable codes, strategies and
// booleans: never content, an id of the client or upstream, or a secret.
// The request id is the one id every span carries.
type Tracer interface {
	// StartRequest starts the root span of a request with its request id;
	// the spans started from the returned context carry it too.
	StartRequest(ctx context.Context, requestID string) (context.Context, Span)
	// Start starts a child span of the span in ctx (a root when there is
	// none).
	Start(ctx context.Context, name SpanName) (context.Context, Span)
}

// Span is one started span; End may be called once.
type Span interface {
	SetString(key AttrKey, value string)
	SetInt(key AttrKey, value int)
	SetBool(key AttrKey, value bool)
	// Fail marks the span as failed with a stable code.
	Fail(code string)
	End()
}

// SpanName is the name of a span.
type SpanName string

// The spans of a request: the request, its admission (reading and validating
// the body, taking a concurrency slot), the upstream dispatch (until the
// stream's first byte) and the stream (until its end).
const (
	SpanRequest   SpanName = "pmgate.request"
	SpanAdmission SpanName = "pmgate.admission"
	SpanDispatch  SpanName = "pmgate.upstream.dispatch"
	SpanStream    SpanName = "pmgate.upstream.stream"
)

// AttrKey is an attribute key of a span.
type AttrKey string

// The attribute keys.
const (
	AttrRoute        AttrKey = "http.route"
	AttrMethod       AttrKey = "http.request.method"
	AttrStatus       AttrKey = "http.response.status_code"
	AttrCode         AttrKey = "pmgate.code"
	AttrStream       AttrKey = "pmgate.stream"
	AttrStrategy     AttrKey = "pmgate.strategy"
	AttrChatType     AttrKey = "pmgate.upstream.chat_type"
	AttrContinuation AttrKey = "pmgate.continuation"
)
