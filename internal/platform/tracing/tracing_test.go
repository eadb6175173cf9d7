package tracing

import (
	"context"
	"testing"
)

func TestTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":          "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":         "http://127.0.0.1:4318/v1/traces",
		"https://otel.example/collector": "https://otel.example/collector/v1/traces",
		"https://otel.example/v1/traces": "https://otel.example/v1/traces",
	} {
		got, err := tracesURL(in)
		if err != nil || got != want {
			t.Errorf("tracesURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := tracesURL("collector:4318"); err == nil {
		t.Error("a URL without scheme was accepted")
	}
}

func TestOffIsNoop(t *testing.T) {
	tr, err := New(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tr.Start(context.Background(), "x")
	defer span.End()
	if tr.Enabled() || span.SpanContext().IsValid() || TraceParent(ctx) != "" {
		t.Error("tracing off still makes spans")
	}
	var nilTracer *Tracer
	if _, s := nilTracer.Start(context.Background(), "x"); s.SpanContext().IsValid() {
		t.Error("a nil tracer makes spans")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestTraceParentRoundTrip(t *testing.T) {
	tr, err := New(context.Background(), Options{Endpoint: "http://127.0.0.1:1", ServiceName: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(context.Background()) }()
	ctx, span := tr.Start(context.Background(), "request")
	defer span.End()
	tp := TraceParent(ctx)
	l, ok := Link(tp)
	if !ok || l.SpanContext.TraceID() != span.SpanContext().TraceID() || l.SpanContext.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("traceparent %q links to %v", tp, l.SpanContext)
	}
	if _, ok := Link(""); ok {
		t.Error("an empty traceparent links")
	}
	if _, ok := Link("00-garbage"); ok {
		t.Error("a malformed traceparent links")
	}
}
