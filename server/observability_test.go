package server_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store/storetest"
)

const metricsToken = "metrics-token-0123456789"

// scrape fetches {prefix}/metrics with header auth and parses the text exposition.
func scrape(t *testing.T, env *apitest.Env, auth string) map[string]*dto.MetricFamily {
	t.Helper()
	res := env.Client().Do(apitest.Request{Method: http.MethodGet, Path: apitest.Prefix + "/metrics",
		Header: map[string]string{"Authorization": auth}}).Expect(t, 200)
	return parseMetrics(t, res.Body)
}

func parseMetrics(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, body)
	}
	return fams
}

// sample returns the value of the sample of family name whose labels include want (counter,
// gauge or untyped value; histogram sample count), and whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func TestMetricsOffByDefault(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c := env.Client()
	c.Get(apitest.Prefix+"/metrics").Expect(t, 404, "NOT_FOUND")
	c.Do(apitest.Request{Method: http.MethodGet, Path: apitest.Prefix + "/metrics",
		Header: map[string]string{"Authorization": "Bearer anything-at-all-123"}}).Expect(t, 404, "NOT_FOUND")
}

func TestMetricsToken(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_METRICS_TOKEN="+metricsToken)
	c := env.Client()
	res := c.Get(apitest.Prefix+"/metrics").Expect(t, 401, "UNAUTHENTICATED")
	if !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
	}
	for _, auth := range []string{"Bearer wrong-token-0123456789", "Basic " + metricsToken, metricsToken, "Bearer " + metricsToken + "x"} {
		c.Do(apitest.Request{Method: http.MethodGet, Path: apitest.Prefix + "/metrics",
			Header: map[string]string{"Authorization": auth}}).Expect(t, 401, "UNAUTHENTICATED")
	}

	// Requests are labelled by operation id, never by raw path: three task ids, one series.
	user, _ := env.UserClient("ada@example.com")
	for _, id := range []string{"1", "2", "3"} {
		user.Get("/tasks/"+id).Expect(t, 404)
	}
	user.Get("/no/such/route").Expect(t, 404)
	fams := scrape(t, env, "Bearer "+metricsToken)
	if n, ok := sample(fams, "svc_http_requests_total", map[string]string{"operation": "getTask", "method": "GET", "code": "404"}); !ok || n != 3 {
		t.Errorf("getTask 404 requests = %v (%v)", n, ok)
	}
	if n, ok := sample(fams, "svc_http_request_duration_seconds", map[string]string{"operation": "getTask", "class": "4xx"}); !ok || n != 3 {
		t.Errorf("getTask 4xx latency samples = %v (%v)", n, ok)
	}
	if _, ok := sample(fams, "svc_http_requests_total", map[string]string{"operation": "unmatched", "code": "404"}); !ok {
		t.Error("the unknown route is not counted as unmatched")
	}
	for _, m := range fams["svc_http_requests_total"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "operation" && strings.Contains(l.GetValue(), "/tasks/") {
				t.Errorf("raw path as a label: %q", l.GetValue())
			}
		}
	}
	// Depths read from the database, subscribers, and the runtime collectors.
	if up, ok := sample(fams, "svc_queue_stats_up", nil); !ok || up != 1 {
		t.Errorf("svc_queue_stats_up = %v (%v)", up, ok)
	}
	for _, box := range []string{"webhook", "mail"} {
		for _, state := range []string{"pending", "retrying", "gave_up"} {
			if _, ok := sample(fams, "svc_outbox_items", map[string]string{"outbox": box, "state": state}); !ok {
				t.Errorf("no svc_outbox_items{outbox=%q,state=%q}", box, state)
			}
		}
	}
	if n, ok := sample(fams, "svc_outbox_items", map[string]string{"outbox": "mail", "state": "pending"}); !ok || n < 1 {
		t.Errorf("the registration mail is not pending: %v", n) // the harness does not start the dispatcher
	}
	for _, stream := range []string{"hub", "task_events"} {
		if n, ok := sample(fams, "svc_sse_subscribers", map[string]string{"stream": stream}); !ok || n != 0 {
			t.Errorf("svc_sse_subscribers{stream=%q} = %v (%v)", stream, n, ok)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	// Outbox attempts are counted as the dispatcher makes them.
	env.DrainMail()
	fams = scrape(t, env, "Bearer "+metricsToken)
	if n, ok := sample(fams, "svc_outbox_attempts_total", map[string]string{"outbox": "mail", "outcome": "delivered"}); !ok || n < 1 {
		t.Errorf("mail attempts delivered = %v (%v)", n, ok)
	}
}

// TestMetricsListen serves /metrics on its own address, without a token; the main listener
// keeps answering 404 for it.
func TestMetricsListen(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_METRICS_LISTEN=127.0.0.1:19090")
	env.Client().Get(apitest.Prefix+"/metrics").Expect(t, 404, "NOT_FOUND")
	srv := httptest.NewServer(env.App.HTTP.MetricsHandler())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("metrics listener = %d", res.StatusCode)
	}
	if fams := parseMetrics(t, body); fams["svc_queue_stats_up"] == nil {
		t.Error("no svc_queue_stats_up")
	}
	res, err = http.Get(srv.URL + "/svc/api/v1/auth/me")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("the metrics listener serves other paths: %d", res.StatusCode)
	}
}

// TestMetricsListenServes runs the real listeners: metrics_listen answers /metrics without a
// token and nothing else; both stop with the server.
func TestMetricsListenServes(t *testing.T) {
	t.Parallel()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	_ = free.Close()
	env := apitest.New(t, "SVC_METRICS_LISTEN="+addr)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- env.App.HTTP.Serve(ctx, ln, 5*time.Second) }()
	var res *http.Response
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if res, err = http.Get("http://" + addr + "/metrics"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || parseMetrics(t, body)["go_goroutines"] == nil {
		t.Fatalf("metrics listener: %d %s", res.StatusCode, body)
	}
	if res, err := http.Get("http://" + addr + "/svc/healthz"); err != nil || res.StatusCode != 404 {
		t.Fatalf("metrics listener serves /svc/healthz: %v %v", res, err)
	}
	if res, err := http.Get("http://" + ln.Addr().String() + "/svc/metrics"); err != nil || res.StatusCode != 404 {
		t.Fatalf("main listener /svc/metrics without a token: %v %v", res, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("the metrics listener outlived the server")
	}
}

type readiness struct {
	Data struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	} `json:"data"`
}

func ready(t *testing.T, env *apitest.Env, status int) readiness {
	t.Helper()
	var r readiness
	res := env.Client().Get(apitest.Prefix + "/readyz")
	if res.Status != status {
		t.Fatalf("readyz = %d, want %d: %s", res.Status, status, res.Body)
	}
	if err := json.Unmarshal(res.Body, &r); err != nil {
		t.Fatalf("readyz body %s: %v", res.Body, err)
	}
	return r
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	t.Run("worker not started", func(t *testing.T) {
		t.Parallel()
		env := apitest.New(t)
		r := ready(t, env, 503)
		if r.Data.Status != "unavailable" || r.Data.Checks["worker"] != "not running" || r.Data.Checks["database"] != "ok" || r.Data.Checks["push"] != "ok" {
			t.Errorf("readyz = %+v", r.Data)
		}
		env.Client().Get(apitest.Prefix+"/healthz").Expect(t, 200) // liveness is not readiness
	})
	t.Run("worker running", func(t *testing.T) {
		t.Parallel()
		env := apitest.New(t)
		runWorker(t, env)
		deadline := time.Now().Add(10 * time.Second)
		for env.Client().Get(apitest.Prefix+"/readyz").Status != 200 {
			if time.Now().After(deadline) {
				ready(t, env, 200)
			}
			time.Sleep(20 * time.Millisecond)
		}
		r := ready(t, env, 200)
		if r.Data.Status != "ok" || r.Data.Checks["worker"] != "ok" || r.Data.Checks["database"] != "ok" || r.Data.Checks["push"] != "ok" {
			t.Errorf("readyz = %+v", r.Data)
		}
	})
	t.Run("api only", func(t *testing.T) {
		t.Parallel()
		// `svc serve --api-only` runs no task daemon: it is ready when its database answers
		// (issue 23, item 1: it answered 503 {"worker":"not running"} forever).
		env := apitest.NewWith(t, apitest.Options{APIOnly: true}, "SVC_WORKER_RUNTIME_MODE=server")
		env.App.Start(context.Background())
		t.Cleanup(func() { _ = env.App.Stop(context.Background()) })
		r := ready(t, env, 200)
		if r.Data.Checks["worker"] != "api only" || r.Data.Checks["database"] != "ok" {
			t.Errorf("readyz = %+v", r.Data)
		}
		if env.App.Daemon.LastPoll() != (time.Time{}) {
			t.Error("an API-only app started the task daemon")
		}
	})
	t.Run("worker health listener", func(t *testing.T) {
		t.Parallel()
		// What worker_health_listen serves for `svc worker`: unready until the claim loop runs.
		env := apitest.New(t, "SVC_WORKER_RUNTIME_MODE=server")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- env.App.HTTP.ServeHealth(ctx, ln) }()
		base := "http://" + ln.Addr().String()
		get := func(path string) (int, readiness) {
			t.Helper()
			res, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var r readiness
			_ = json.NewDecoder(res.Body).Decode(&r)
			return res.StatusCode, r
		}
		if code, _ := get("/healthz"); code != 200 {
			t.Fatalf("worker /healthz = %d", code)
		}
		if code, r := get("/readyz"); code != 503 || r.Data.Checks["worker"] != "not running" {
			t.Fatalf("worker /readyz before start = %d %+v", code, r.Data)
		}
		runWorker(t, env)
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, r := get("/readyz")
			if code == 200 && r.Data.Checks["worker"] == "ok" && r.Data.Checks["database"] == "ok" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("worker /readyz = %d %+v", code, r.Data)
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("client mode", func(t *testing.T) {
		t.Parallel()
		env := apitest.New(t, "SVC_WORKER_RUNTIME_MODE=client")
		r := ready(t, env, 200)
		if r.Data.Checks["worker"] != "client mode" || r.Data.Checks["push"] != "off" {
			t.Errorf("readyz = %+v", r.Data)
		}
	})
	t.Run("database down", func(t *testing.T) {
		t.Parallel()
		st := storetest.New(t)
		env := apitest.NewWith(t, apitest.Options{Store: st}, "SVC_WORKER_RUNTIME_MODE=client")
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		r := ready(t, env, 503)
		if r.Data.Checks["database"] != "unreachable" {
			t.Errorf("readyz = %+v", r.Data)
		}
	})
	t.Run("mercure failing", func(t *testing.T) {
		t.Parallel()
		hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "down", http.StatusBadGateway)
		}))
		defer hub.Close()
		env := apitest.New(t, "SVC_WORKER_RUNTIME_MODE=server", "SVC_MERCURE_URL="+hub.URL+"/.well-known/mercure",
			"SVC_MERCURE_JWT_KEY=0123456789abcdef0123456789abcdef")
		runWorker(t, env)
		if err := env.App.Push.Publish(context.Background(), "user/1/tasks", []byte(`{}`)); err == nil {
			t.Fatal("publishing to a failing hub succeeded")
		}
		r := ready(t, env, 503)
		if r.Data.Checks["push"] != "failing" {
			t.Errorf("readyz = %+v", r.Data)
		}
	})
}

// otlpReceiver is an in-process OTLP/HTTP collector: it decodes every export (protobuf) and
// keeps the spans.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services map[string]bool // service.name of the resources exported
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "unexpected export", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				if o.services == nil {
					o.services = map[string]bool{}
				}
				o.services[kv.Value.GetStringValue()] = true
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (o *otlpReceiver) named(prefix string) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// TestTracesAndMetricsOfOneTask runs one task (a tool call, then the answer) with the
// scripted driver under tracing and checks its spans as an OTLP collector receives them: the
// request that created it, its steps linked to that request, the model calls with the GenAI
// attributes and the tool call; then the task's metrics.
func TestTracesAndMetricsOfOneTask(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the scripted driver reads its script relative to the working directory
	script := `[
	  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}}], "usage": {"input_tokens": 12, "output_tokens": 4}},
	  {"text": "The result is 42.", "usage": {"input_tokens": 30, "output_tokens": 6}}
	]`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	env := apitest.New(t, "SVC_OTEL_ENDPOINT="+collector.URL, "SVC_OTEL_SERVICE_NAME=svc-test", "SVC_METRICS_TOKEN="+metricsToken)
	c, _ := env.UserClient("ada@example.com")
	agent := scriptedAgent(t, c, "Lab", "script.json", "core.CalculatorTool", "calculate", true)

	var created gen.TaskResponse
	c.Post("/tasks", map[string]any{"agent_id": agent.Id, "prompt": "What is 6*7?"}).Expect(t, 201).Decode(t, &created)
	id := created.Data.Task.Id
	env.App.Start(context.Background())
	env.App.Daemon.Notify()
	deadline := time.Now().Add(20 * time.Second)
	for getTask(t, c, id).Status != gen.TaskStatusCOMPLETED {
		if time.Now().After(deadline) {
			t.Fatalf("task is %s", getTask(t, c, id).Status)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Metrics of the task (scraped before Close). The step's duration is observed after its
	// commit (and, on PostgreSQL, its NOTIFY), so the task can read COMPLETED a moment before.
	fams := scrape(t, env, "Bearer "+metricsToken)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); fams = scrape(t, env, "Bearer "+metricsToken) {
		if _, ok := sample(fams, "svc_task_step_duration_seconds", map[string]string{"outcome": "COMPLETED"}); ok {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	agentID := fmt.Sprint(agent.Id)
	for _, m := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"svc_model_tokens_total", map[string]string{"agent_id": agentID, "model": "script", "direction": "in"}, 42},
		{"svc_model_tokens_total", map[string]string{"agent_id": agentID, "model": "script", "direction": "out"}, 10},
		{"svc_model_call_duration_seconds", map[string]string{"system": "scripted", "model": "script", "outcome": "ok"}, 2},
		{"svc_tool_calls_total", map[string]string{"tool": "core.CalculatorTool", "outcome": "executed"}, 1},
		{"svc_tool_call_duration_seconds", map[string]string{"tool": "core.CalculatorTool"}, 1},
		{"svc_task_step_duration_seconds", map[string]string{"outcome": "RUNNING"}, 1},
		{"svc_task_step_duration_seconds", map[string]string{"outcome": "COMPLETED"}, 1},
		{"svc_task_claim_latency_seconds", nil, 1},
		{"svc_task_claims_total", nil, 1},
		{"svc_tasks", map[string]string{"status": "COMPLETED"}, 1},
	} {
		if got, ok := sample(fams, m.name, m.labels); !ok || got != m.want {
			t.Errorf("%s%v = %v (found %v), want %v", m.name, m.labels, got, ok, m.want)
		}
	}
	if n, ok := sample(fams, "svc_model_time_to_first_token_seconds", map[string]string{"system": "scripted", "model": "script"}); !ok || n < 1 {
		t.Errorf("time to first token samples = %v (%v)", n, ok)
	}

	// Close drains nothing more and flushes the spans still batched.
	if err := env.App.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := env.App.Close(); err != nil {
		t.Fatal(err)
	}

	if len(rcv.services) != 1 || !rcv.services["svc-test"] {
		t.Errorf("service names exported: %v", rcv.services)
	}
	var request *tracepb.Span
	for _, s := range rcv.named("createTask") {
		request = s
	}
	if request == nil {
		t.Fatal("no createTask request span")
	}
	if request.Kind != tracepb.Span_SPAN_KIND_SERVER || attr(request, "http.response.status_code").GetIntValue() != 201 {
		t.Errorf("request span: kind %v, attributes %v", request.Kind, request.Attributes)
	}
	steps := rcv.named("task.step")
	if len(steps) != 2 {
		t.Fatalf("%d step spans, want 2", len(steps))
	}
	stepIDs := map[string]bool{}
	for _, s := range steps {
		stepIDs[hex.EncodeToString(s.SpanId)] = true
		if attr(s, "svc.task.id").GetIntValue() != id {
			t.Errorf("step span of task %v", attr(s, "svc.task.id"))
		}
		linked := false
		for _, l := range s.Links {
			linked = linked || (bytes.Equal(l.TraceId, request.TraceId) && bytes.Equal(l.SpanId, request.SpanId))
		}
		if !linked {
			t.Errorf("step span %s is not linked to the request span: %v", s.Name, s.Links)
		}
	}
	models := rcv.named("chat script")
	if len(models) != 2 {
		t.Fatalf("%d model call spans, want 2", len(models))
	}
	var in int64
	for _, m := range models {
		if !stepIDs[hex.EncodeToString(m.ParentSpanId)] {
			t.Errorf("model call span is not a child of a step span")
		}
		for key, want := range map[string]string{"gen_ai.system": "scripted", "gen_ai.request.model": "script", "gen_ai.operation.name": "chat"} {
			if got := attr(m, key).GetStringValue(); got != want {
				t.Errorf("model call span %s = %q, want %q", key, got, want)
			}
		}
		if attr(m, "gen_ai.usage.input_tokens") == nil || attr(m, "gen_ai.usage.output_tokens") == nil {
			t.Errorf("model call span without token usage: %v", m.Attributes)
		}
		in += attr(m, "gen_ai.usage.input_tokens").GetIntValue()
	}
	if in != 42 {
		t.Errorf("input tokens over the model call spans = %d, want 42", in)
	}
	tools := rcv.named("execute_tool core.CalculatorTool")
	if len(tools) != 1 {
		t.Fatalf("%d tool call spans, want 1", len(tools))
	}
	if !stepIDs[hex.EncodeToString(tools[0].ParentSpanId)] || attr(tools[0], "gen_ai.tool.name").GetStringValue() != "calculator" ||
		attr(tools[0], "svc.tool_call.status").GetStringValue() != "EXECUTED" {
		t.Errorf("tool call span: parent %x, attributes %v", tools[0].ParentSpanId, tools[0].Attributes)
	}
}

// TestStorageUnavailable: a database that refuses writes (full disk, busy beyond the wait)
// answers 503 SERVICE_UNAVAILABLE with Retry-After and the envelope, not 500 INTERNAL, and
// readiness fails while writes fail, then recovers without a restart (issue 23, item 4).
func TestStorageUnavailable(t *testing.T) {
	t.Parallel()
	for _, kind := range []struct {
		name  string
		fault storetest.Fault
	}{{"disk full", storetest.FaultFull}, {"busy", storetest.FaultBusy}} {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			st, faults := storetest.NewFaulty(t)
			env := apitest.NewWith(t, apitest.Options{Store: st}, "SVC_WORKER_RUNTIME_MODE=client")
			c, _ := env.UserClient("root@example.com")
			ready(t, env, 200)
			faults.FailWritesAs(kind.fault)
			res := c.Post("/agents", map[string]any{"name": "during the outage"}).Expect(t, 503, "SERVICE_UNAVAILABLE")
			if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("Retry-After = %q", res.Header.Get("Retry-After"))
			}
			if r := ready(t, env, 503); r.Data.Checks["database"] != "writes failing" {
				t.Errorf("readyz while writes fail = %+v", r.Data)
			}
			faults.FailWritesAs(storetest.NoFault)
			if r := ready(t, env, 200); r.Data.Checks["database"] != "ok" {
				t.Errorf("readyz after = %+v", r.Data)
			}
			c.Post("/agents", map[string]any{"name": "after the outage"}).Expect(t, 201)
		})
	}
	t.Run("database closed", func(t *testing.T) {
		t.Parallel()
		st := storetest.New(t)
		env := apitest.NewWith(t, apitest.Options{Store: st}, "SVC_WORKER_RUNTIME_MODE=client")
		c, _ := env.UserClient("root@example.com")
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		res := c.Post("/agents", map[string]any{"name": "dead database"}).Expect(t, 503, "SERVICE_UNAVAILABLE")
		if res.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After")
		}
	})
}
