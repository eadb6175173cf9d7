package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/metrics"
	"github.com/agentsvc/svc/internal/platform/tracing"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// ctxOperation is the gin context key of the contract operation a request matched (set by the
// gate): the label of its metrics and the name of its span.
const ctxOperation = "svc.operation"

// Paths outside the contract that get no span (scrapes and probes would drown the traces).
var untracedPaths = map[string]bool{"/metrics": true, "/healthz": true, "/readyz": true}

// observe is the outermost middleware: it counts and times every request by its operation id
// (bounded: never the raw path) and, with tracing on, runs it under a server span named after
// the operation, continuing the caller's trace when a traceparent header came with it.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	var span trace.Span
	rel := strings.TrimPrefix(c.Request.URL.Path, s.prefix)
	if s.tracer.Enabled() && !untracedPaths[rel] {
		ctx := s.tracer.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
		ctx, span = s.tracer.Start(ctx, "HTTP "+c.Request.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", c.Request.Method), attribute.String("url.path", c.Request.URL.Path)))
		c.Request = c.Request.WithContext(ctx)
	}
	c.Next()
	status := c.Writer.Status()
	op := s.operationOf(c)
	s.metrics.Request(op, c.Request.Method, status, time.Since(start))
	if span != nil {
		span.SetName(op)
		span.SetAttributes(attribute.Int("http.response.status_code", status), attribute.String("svc.operation", op))
		if route := c.FullPath(); route != "" {
			span.SetAttributes(attribute.String("http.route", route))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
	}
}

// operationID is op's id as openapi.yaml spells it (every id there starts with a lower-case
// letter; the embedded document's start with a capital).
func operationID(op *openapi3.Operation) string {
	id := op.OperationID
	if id == "" {
		return "unnamed"
	}
	return strings.ToLower(id[:1]) + id[1:]
}

// operationOf is the bounded label of a request: the contract's operation id, else the route
// pattern (without the mount prefix) of the endpoints outside the contract, else "console" or
// "unmatched".
func (s *Server) operationOf(c *gin.Context) string {
	if op := c.GetString(ctxOperation); op != "" {
		return op
	}
	if route := c.FullPath(); route != "" {
		return strings.TrimPrefix(route, s.prefix)
	}
	return "unmatched"
}

// metricsEndpoint serves {prefix}/metrics to requests bearing metrics_token; without a token
// configured it does not exist (404), as with metrics_listen alone (served on its own address).
func (s *Server) metricsEndpoint(c *gin.Context) {
	token := s.cfg.Current().MetricsToken
	if token == "" || s.metrics == nil {
		s.fail(c, svcerr.New(svcerr.ErrNotFound, "no route for %s %s", c.Request.Method, c.Request.URL.Path))
		return
	}
	got, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok || !constantTimeEqual(strings.TrimSpace(got), token) {
		c.Header("WWW-Authenticate", `Bearer realm="metrics"`)
		s.fail(c, svcerr.New(svcerr.ErrUnauthenticated, "a valid metrics token is required"))
		return
	}
	s.metrics.Handler().ServeHTTP(c.Writer, c.Request)
}

// MetricsHandler is what metrics_listen serves: /metrics without a token, nothing else.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	if s.metrics != nil {
		mux.Handle("GET /metrics", s.metrics.Handler())
	}
	return mux
}

// Readiness timing.
const (
	readyTimeout    = 2 * time.Second // the database ping
	readyPollFactor = 3               // the worker's claim loop must have gone round within this many poll intervals
)

// readyz answers whether this process can do its work (readiness), as the envelope-less
// {data:{status,checks}}: 200 when every part it runs is ready, else 503 naming the failing parts.
func (s *Server) readyz(c *gin.Context) {
	status, body := s.readiness(c.Request.Context())
	c.JSON(status, body)
}

// readiness checks only what this process runs: the database answers and takes writes (one
// small write is committed per check, store.ProbeWrite: a full disk, a read-only or busy
// database makes the process unready while it lasts), the push channel works (embedded hub running; Mercure: the last publication did not
// fail) and, when this process runs the worker daemon (server worker mode, not API-only), its
// claim loop is alive. Details go to the log only.
func (s *Server) readiness(ctx context.Context) (int, gin.H) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	checks := map[string]string{}
	ready := true
	failed := func(part, why string, err error) {
		ready = false
		checks[part] = why
		s.log.WarnContext(ctx, "readiness check failed", "part", part, "err", err)
	}
	if err := s.store.Ping(ctx); err != nil {
		failed("database", "unreachable", err)
	} else if err := s.store.ProbeWrite(ctx); err != nil {
		failed("database", "writes failing", err) // full disk, read-only, busy beyond the wait
	} else {
		checks["database"] = "ok"
	}
	switch {
	case s.pushSvc == nil:
		checks["push"] = "off"
	default:
		if !s.pushSvc.Status().Available {
			checks["push"] = "off"
		} else if err := s.pushSvc.Ready(); err != nil {
			failed("push", "failing", err)
		} else {
			checks["push"] = "ok"
		}
	}
	switch {
	case s.apiOnly:
		checks["worker"] = "api only" // svc worker processes run the tasks; they answer for themselves
	case s.cfg.Current().WorkerRuntimeMode != "server" || s.daemon == nil:
		checks["worker"] = "client mode"
	default:
		last := s.daemon.LastPoll()
		poll := s.daemon.Poll
		if poll <= 0 {
			poll = time.Second
		}
		switch {
		case last.IsZero():
			failed("worker", "not running", errors.New("the worker daemon's claim loop is not running"))
		case time.Since(last) > readyPollFactor*poll:
			failed("worker", "stalled", errors.New("the worker daemon's claim loop last went round "+time.Since(last).Round(time.Millisecond).String()+" ago"))
		default:
			checks["worker"] = "ok"
		}
	}
	status, word := http.StatusOK, "ok"
	if !ready {
		status, word = http.StatusServiceUnavailable, "unavailable"
	}
	return status, gin.H{"data": gin.H{"status": word, "checks": checks}}
}

// HealthHandler is what worker_health_listen serves for `svc worker` (which has no API
// listener): GET /healthz (the database answers) and GET /readyz (readiness, as above), without
// the mount prefix.
func (s *Server) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, status int, body any) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.store.Ping(ctx); err != nil {
			s.log.ErrorContext(ctx, "health check", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, envelope{Error: envelopeError{Code: gen.ErrorCodeSERVICEUNAVAILABLE, Message: "database unreachable"}})
			return
		}
		writeJSON(w, http.StatusOK, gin.H{"data": gin.H{"status": "ok"}})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		status, body := s.readiness(r.Context())
		writeJSON(w, status, body)
	})
	return mux
}

// ServeHealth serves HealthHandler on ln until ctx ends; it closes ln.
func (s *Server) ServeHealth(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.HealthHandler(), ReadHeaderTimeout: readHeaderTimeout, WriteTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loopObserver records the agent loop's steps, model calls and tool calls as metrics and spans.
type loopObserver struct {
	m *metrics.Metrics
	t *tracing.Tracer
}

var _ agentloop.Observer = loopObserver{}

func taskAttrs(t *store.Task) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.Int64("svc.task.id", t.ID), attribute.Int64("svc.agent.id", t.AgentID)}
}

// StepStarted opens the step's span, linked to the span of the request that created the task.
func (o loopObserver) StepStarted(ctx context.Context, t *store.Task) (context.Context, func(*store.Task, error)) {
	start := time.Now()
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(append(taskAttrs(t), attribute.Int("svc.task.step", t.StepsUsed+1))...)}
	if l, ok := tracing.Link(t.TraceParent); ok {
		opts = append(opts, trace.WithLinks(l))
	}
	ctx, span := o.t.Start(ctx, "task.step", opts...)
	return ctx, func(out *store.Task, err error) {
		outcome := "error"
		if err == nil && out != nil {
			outcome = out.Status
		}
		o.m.Step(outcome, time.Since(start))
		span.SetAttributes(attribute.String("svc.task.status", outcome))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "step failed")
		}
		span.End()
	}
}

// ModelCallStarted opens the model call's span with the GenAI semantic conventions.
func (o loopObserver) ModelCallStarted(ctx context.Context, c agentloop.ModelCall) (context.Context, agentloop.ModelCallObservation) {
	ctx, span := o.t.Start(ctx, "chat "+c.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(taskAttrs(c.Task),
			tracing.GenAIOperationName.String("chat"),
			tracing.GenAISystem.String(c.Driver),
			tracing.GenAIProviderName.String(c.Driver),
			tracing.GenAIRequestModel.String(c.Model),
			attribute.Bool("svc.model.streaming", c.Streaming))...))
	return ctx, &modelCall{o: o, c: c, span: span, start: time.Now()}
}

type modelCall struct {
	o     loopObserver
	c     agentloop.ModelCall
	span  trace.Span
	start time.Time
}

func (m *modelCall) FirstToken() {
	m.o.m.FirstToken(m.c.Driver, m.c.Model, time.Since(m.start))
	m.span.AddEvent("gen_ai.first_token")
}

func (m *modelCall) Done(resp *llm.Response, err error) {
	outcome := "ok"
	var in, out int64
	if resp != nil {
		in, out = resp.Usage.InputTokens, resp.Usage.OutputTokens
		m.span.SetAttributes(tracing.GenAIUsageInputTokens.Int64(in), tracing.GenAIUsageOutputTokens.Int64(out))
	}
	if err != nil {
		outcome = "error"
		var le *llm.Error
		if errors.As(err, &le) && le.Code != "" {
			outcome = le.Code
		}
		m.span.SetAttributes(tracing.ErrorType.String(outcome))
		m.span.SetStatus(codes.Error, outcome)
	}
	m.o.m.ModelCall(m.c.Driver, m.c.Model, m.c.Task.AgentID, outcome, time.Since(m.start), in, out)
	m.span.End()
}

// ToolCallStarted opens the tool call's span (GenAI execute_tool).
func (o loopObserver) ToolCallStarted(ctx context.Context, t *store.Task, c store.ToolCall) (context.Context, func(string, error)) {
	start := time.Now()
	ctx, span := o.t.Start(ctx, "execute_tool "+c.ToolClass, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(append(taskAttrs(t),
			tracing.GenAIOperationName.String("execute_tool"),
			attribute.String("gen_ai.tool.name", c.Name),
			attribute.String("gen_ai.tool.call.id", c.ProviderCallID),
			attribute.String("svc.tool.class", c.ToolClass),
			attribute.String("svc.tool.operation", c.Operation),
			attribute.String("svc.tool_call.id", strconv.FormatInt(c.ID, 10)))...))
	return ctx, func(status string, err error) {
		outcome := status
		if err != nil {
			outcome = "error"
			span.RecordError(err)
		}
		if outcome != store.ToolCallExecuted {
			span.SetStatus(codes.Error, outcome)
		}
		span.SetAttributes(attribute.String("svc.tool_call.status", outcome))
		o.m.ToolCall(c.ToolClass, strings.ToLower(outcome), time.Since(start))
		span.End()
	}
}
