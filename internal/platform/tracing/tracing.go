// Package tracing sets up OpenTelemetry traces: the SDK's tracer provider exporting spans over
// OTLP/HTTP (protobuf) to the collector of otel_endpoint, batched, under the resource
// service.name = otel_service_name. Without an endpoint the tracer is the no-op one: spans cost
// nothing and nothing is sent. The provider is the service's own (never the global one).
//
// Across the queue a task carries the W3C traceparent of the request that created it
// (store.Task.TraceParent, written by CreateTask through TraceParent); the spans of its steps
// link to it (Link).
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the service's spans.
const ScopeName = "github.com/agentsvc/svc"

// Attribute keys of the GenAI semantic conventions used on model call spans. gen_ai.system is
// the name older backends read; gen_ai.provider.name the current one: both are set.
const (
	GenAISystem            = attribute.Key("gen_ai.system")
	GenAIProviderName      = attribute.Key("gen_ai.provider.name")
	GenAIOperationName     = attribute.Key("gen_ai.operation.name")
	GenAIRequestModel      = attribute.Key("gen_ai.request.model")
	GenAIUsageInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	GenAIUsageOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	ErrorType              = attribute.Key("error.type")
)

// Tracer is the service's tracer and its provider. A nil *Tracer is the no-op tracer.
type Tracer struct {
	trace.Tracer
	provider *sdktrace.TracerProvider // nil: off
	prop     propagation.TextMapPropagator
}

// Options configure New.
type Options struct {
	Endpoint    string // otel_endpoint: the collector's OTLP/HTTP base URL; "": tracing off
	ServiceName string // otel_service_name
	// BatchTimeout is the longest a span waits before export (default 5 s, the SDK's).
	BatchTimeout time.Duration
}

// New builds the tracer. Without an endpoint it is the no-op tracer. The exporter connects
// lazily: an unreachable collector costs dropped spans (logged by the SDK), never a failed
// start.
func New(ctx context.Context, o Options) (*Tracer, error) {
	t := &Tracer{Tracer: noop.NewTracerProvider().Tracer(ScopeName),
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
	if o.Endpoint == "" {
		return t, nil
	}
	endpoint, err := tracesURL(o.Endpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("otel exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", o.ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	var batch []sdktrace.BatchSpanProcessorOption
	if o.BatchTimeout > 0 {
		batch = append(batch, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	t.provider = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, batch...), sdktrace.WithResource(res))
	t.Tracer = t.provider.Tracer(ScopeName)
	return t, nil
}

// tracesURL is the OTLP/HTTP traces address of a collector base URL: /v1/traces appended
// unless the path already ends with it.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("otel_endpoint %q must be an http:// or https:// URL", endpoint)
	}
	if !strings.HasSuffix(u.Path, "/v1/traces") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// Enabled reports whether spans are exported.
func (t *Tracer) Enabled() bool { return t != nil && t.provider != nil }

// Start starts a span (no-op when t is nil or off).
func (t *Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t == nil {
		return noop.NewTracerProvider().Tracer(ScopeName).Start(ctx, name, opts...)
	}
	return t.Tracer.Start(ctx, name, opts...)
}

// Extract returns ctx with the remote span context of an incoming request's traceparent
// header, if any (a caller's trace continues in ours).
func (t *Tracer) Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	if !t.Enabled() {
		return ctx
	}
	return t.prop.Extract(ctx, carrier)
}

// TraceParent is the W3C traceparent of ctx's span, "" when there is none (ctx is outside a
// span, or tracing is off: then no span context is ever valid). A new task stores it
// (store.NewTask.TraceParent), so the spans of its steps link back to the request.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c.Get("traceparent")
}

// Link is the link to the span of a stored traceparent; ok is false when tp holds none.
func Link(tp string) (trace.Link, bool) {
	if tp == "" {
		return trace.Link{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("svc.link", "created_by")}}, true
}

// Shutdown flushes the spans still batched and stops the exporter (App.Close).
func (t *Tracer) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// ForceFlush exports the spans still batched.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}
