// Package otel implements ports.Tracer with the OpenTelemetry Go SDK,
// exporting over OTLP/HTTP (docs/OPERATE.md, "Traces"). Tracing is on only
// when one of the standard endpoint variables is set.
package otel

import (
	"context"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// The variables read (the standard ones of the OTLP exporter).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"        // base URL; /v1/traces is appended
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" // the full traces URL; wins
	EnvServiceName    = "OTEL_SERVICE_NAME"                  // default pmgate
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"                  // true: off
)

// Tracer is the SDK tracer behind ports.Tracer.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

var _ ports.Tracer = (*Tracer)(nil)

// Endpoint returns the traces URL the variables name, or "" when tracing is
// off; an endpoint that is not an http(s) URL is a configuration refusal.
func Endpoint(getenv func(string) string) (string, error) {
	if getenv(EnvSDKDisabled) == "true" {
		return "", nil
	}
	raw, name := getenv(EnvTracesEndpoint), EnvTracesEndpoint
	if raw == "" {
		raw, name = getenv(EnvEndpoint), EnvEndpoint
		if raw != "" {
			raw = strings.TrimSuffix(raw, "/") + "/v1/traces"
		}
	}
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", errs.Newf(errs.ConfigInvalid, "%s: must be an http(s) URL without credentials", name)
	}
	return raw, nil
}

// New returns the tracer exporting to endpoint (from Endpoint) in batches,
// with the service name and version as its resource.
func New(ctx context.Context, endpoint, serviceName, version string) (*Tracer, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithTimeout(5*time.Second))
	if err != nil {
		return nil, errs.Newf(errs.ConfigInvalid, "%s: the OTLP exporter refused it", EnvTracesEndpoint)
	}
	if serviceName == "" {
		serviceName = "pmgate"
	}
	res := resource.NewSchemaless(semconv.ServiceName(serviceName), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)), sdktrace.WithResource(res))
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/pmgate/pmgate")}, nil
}

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// ridKey is the context key of the request id the spans carry.
type ridKey struct{}

const attrRequestID = "pmgate.request_id"

// StartRequest implements ports.Tracer.
func (t *Tracer) StartRequest(ctx context.Context, requestID string) (context.Context, ports.Span) {
	ctx = context.WithValue(ctx, ridKey{}, requestID)
	ctx, sp := t.tracer.Start(ctx, string(ports.SpanRequest), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String(attrRequestID, requestID)))
	return ctx, span{sp}
}

// Start implements ports.Tracer.
func (t *Tracer) Start(ctx context.Context, name ports.SpanName) (context.Context, ports.Span) {
	rid, _ := ctx.Value(ridKey{}).(string)
	kind := trace.SpanKindInternal
	if name == ports.SpanDispatch {
		kind = trace.SpanKindClient
	}
	ctx, sp := t.tracer.Start(ctx, string(name), trace.WithSpanKind(kind), trace.WithAttributes(attribute.String(attrRequestID, rid)))
	return ctx, span{sp}
}

type span struct{ s trace.Span }

func (s span) SetString(k ports.AttrKey, v string) { s.s.SetAttributes(attribute.String(string(k), v)) }
func (s span) SetInt(k ports.AttrKey, v int)       { s.s.SetAttributes(attribute.Int(string(k), v)) }
func (s span) SetBool(k ports.AttrKey, v bool)     { s.s.SetAttributes(attribute.Bool(string(k), v)) }
func (s span) End()                                { s.s.End() }

func (s span) Fail(code string) {
	s.s.SetAttributes(attribute.String(string(ports.AttrCode), code))
	s.s.SetStatus(codes.Error, code)
}
