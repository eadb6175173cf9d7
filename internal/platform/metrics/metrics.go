// Package metrics owns the Prometheus registry of the service and every metric it exposes at
// {app_prefix}/metrics. One *Metrics is built by server.Open and handed to whoever records
// (the HTTP middleware, the agent loop's observer, the worker's claims, the outbox
// dispatchers); nothing is registered on the client library's global default registry.
//
// Label values are bounded: HTTP requests are labelled by the contract's operation id (or the
// route pattern of the few endpoints outside the contract), never by a raw path; tools by their
// class; models by the configured model name; tokens by agent id and model.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentsvc/svc/store"
)

// Namespace prefixes every metric of the service.
const Namespace = "svc"

// Buckets of the latency histograms, in seconds.
var (
	httpBuckets  = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	slowBuckets  = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	claimBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
)

// Metrics is the registry and the metrics of one process. The zero value is not usable: build
// it with New. A nil *Metrics records nothing (every method is safe on nil).
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec   // operation, method, code
	httpDuration *prometheus.HistogramVec // operation, class
	claimLatency prometheus.Histogram
	claimed      prometheus.Counter
	stepDuration *prometheus.HistogramVec // outcome
	modelLatency *prometheus.HistogramVec // system, model, outcome
	modelTTFT    *prometheus.HistogramVec // system, model
	tokens       *prometheus.CounterVec   // agent_id, model, direction
	toolCalls    *prometheus.CounterVec   // tool, outcome
	toolDuration *prometheus.HistogramVec // tool
	outboxTries  *prometheus.CounterVec   // outbox, outcome
}

// New builds the registry with the Go runtime and process collectors and every metric of the
// service. Depths read from the database and subscriber counts are added by Watch*.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{reg: reg}
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
		Help: "HTTP requests by operation id (route pattern outside the API contract), method and status code."},
		[]string{"operation", "method", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_request_duration_seconds",
		Help: "Time to answer an HTTP request (event streams: until they end), by operation id and status class (2xx…5xx).", Buckets: httpBuckets},
		[]string{"operation", "class"})
	m.claimLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "task_claim_latency_seconds",
		Help: "Time from a task's creation (QUEUED) to its first claim by a worker.", Buckets: claimBuckets})
	m.claimed = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "task_claims_total",
		Help: "Tasks claimed by this process's worker daemon (first claims and resumptions)."})
	m.stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "task_step_duration_seconds",
		Help: "Duration of one task step (model turn and tool calls), by the status the step left the task in (error: the step failed for the worker).", Buckets: slowBuckets},
		[]string{"outcome"})
	m.modelLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "model_call_duration_seconds",
		Help: "Duration of one model call, by driver, model and outcome (ok or the task error code).", Buckets: slowBuckets},
		[]string{"system", "model", "outcome"})
	m.modelTTFT = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "model_time_to_first_token_seconds",
		Help: "Time from the start of a streamed model call to its first piece of output.", Buckets: slowBuckets},
		[]string{"system", "model"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "model_tokens_total",
		Help: "Model tokens by agent id, model and direction (in: prompt, out: completion)."},
		[]string{"agent_id", "model", "direction"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "tool_calls_total",
		Help: "Tool calls run, by tool class and outcome (executed, failed, error: an infrastructure failure)."},
		[]string{"tool", "outcome"})
	m.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "tool_call_duration_seconds",
		Help: "Duration of one tool call, by tool class.", Buckets: slowBuckets}, []string{"tool"})
	m.outboxTries = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "outbox_attempts_total",
		Help: "Delivery attempts of the outboxes (webhook, mail) made by this process, by outcome (delivered, failed)."},
		[]string{"outbox", "outcome"})
	reg.MustRegister(m.httpRequests, m.httpDuration, m.claimLatency, m.claimed, m.stepDuration, m.modelLatency,
		m.modelTTFT, m.tokens, m.toolCalls, m.toolDuration, m.outboxTries)
	return m
}

// Registry is the service's registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format (or OpenMetrics when asked).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// StatusClass is the class of an HTTP status: "2xx" … "5xx".
func StatusClass(status int) string {
	if status < 100 || status > 599 {
		return "unknown"
	}
	return strconv.Itoa(status/100) + "xx"
}

// Request records one answered HTTP request.
func (m *Metrics) Request(operation, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.httpRequests.WithLabelValues(operation, method, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(operation, StatusClass(status)).Observe(d.Seconds())
}

// Claimed records a claimed task; first is true on its first claim, waited the time since it
// was created.
func (m *Metrics) Claimed(first bool, waited time.Duration) {
	if m == nil {
		return
	}
	m.claimed.Inc()
	if first {
		m.claimLatency.Observe(max(waited, 0).Seconds())
	}
}

// Step records one step and the status it left its task in ("error": it failed for the
// worker).
func (m *Metrics) Step(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.stepDuration.WithLabelValues(outcome).Observe(d.Seconds())
}

// ModelCall records one model call: its duration, outcome ("ok" or an error code) and the
// tokens it used, counted for agentID.
func (m *Metrics) ModelCall(system, model string, agentID int64, outcome string, d time.Duration, in, out int64) {
	if m == nil {
		return
	}
	m.modelLatency.WithLabelValues(system, model, outcome).Observe(d.Seconds())
	agent := strconv.FormatInt(agentID, 10)
	if in > 0 {
		m.tokens.WithLabelValues(agent, model, "in").Add(float64(in))
	}
	if out > 0 {
		m.tokens.WithLabelValues(agent, model, "out").Add(float64(out))
	}
}

// FirstToken records the time to the first piece of output of a streamed model call.
func (m *Metrics) FirstToken(system, model string, d time.Duration) {
	if m == nil {
		return
	}
	m.modelTTFT.WithLabelValues(system, model).Observe(d.Seconds())
}

// ToolCall records one tool call of class tool with its outcome.
func (m *Metrics) ToolCall(tool, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	m.toolDuration.WithLabelValues(tool).Observe(d.Seconds())
}

// OutboxAttempt records one delivery attempt of outbox ("webhook", "mail").
func (m *Metrics) OutboxAttempt(outbox string, ok bool) {
	if m == nil {
		return
	}
	outcome := "delivered"
	if !ok {
		outcome = "failed"
	}
	m.outboxTries.WithLabelValues(outbox, outcome).Inc()
}

// WatchSubscribers exposes the open SSE subscriptions of stream ("hub": the embedded push
// hub, "task_events": the task event streams), read from count at scrape time.
func (m *Metrics) WatchSubscribers(stream string, count func() int) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "sse_subscribers",
		Help:        "Open server-sent event subscriptions of this process, by stream (hub: the embedded push hub, task_events: task event streams).",
		ConstLabels: prometheus.Labels{"stream": stream}}, func() float64 { return float64(count()) }))
}

// QueueCacheTTL is how long the depths read from the database are reused between scrapes.
const QueueCacheTTL = 5 * time.Second

// queueTimeout bounds the read of the depths at a scrape.
const queueTimeout = 3 * time.Second

// WatchQueues exposes the task queue depth by status and the outboxes' depths, read with read
// at scrape time and cached for QueueCacheTTL (several scrapers, or one scraping often, cost
// one read). now is the clock of the cache (nil: time.Now).
func (m *Metrics) WatchQueues(read func(ctx context.Context) (*store.QueueStats, error), now func() time.Time) {
	if m == nil {
		return
	}
	if now == nil {
		now = time.Now
	}
	m.reg.MustRegister(&queueCollector{read: read, now: now})
}

var (
	tasksDesc = prometheus.NewDesc(Namespace+"_tasks", "Tasks by status, read from the database (cached up to 5 s).",
		[]string{"status"}, nil)
	outboxDesc = prometheus.NewDesc(Namespace+"_outbox_items", "Outbox items by outbox and state (pending: to deliver, retrying: pending after a failed attempt, gave_up: given up after the last attempt), read from the database (cached up to 5 s).",
		[]string{"outbox", "state"}, nil)
	queueUpDesc = prometheus.NewDesc(Namespace+"_queue_stats_up", "1 when the last read of the queue depths from the database succeeded.", nil, nil)
)

// queueCollector reads the depths at scrape time, through a short cache.
type queueCollector struct {
	read func(ctx context.Context) (*store.QueueStats, error)
	now  func() time.Time

	mu     sync.Mutex
	at     time.Time
	cached *store.QueueStats
	err    error
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tasksDesc
	ch <- outboxDesc
	ch <- queueUpDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.stats()
	up := 1.0
	if err != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(queueUpDesc, prometheus.GaugeValue, up)
	if st == nil {
		return
	}
	for status, n := range st.Tasks {
		ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(n), status)
	}
	for _, o := range st.Outboxes {
		ch <- prometheus.MustNewConstMetric(outboxDesc, prometheus.GaugeValue, float64(o.Pending), o.Name, "pending")
		ch <- prometheus.MustNewConstMetric(outboxDesc, prometheus.GaugeValue, float64(o.Retrying), o.Name, "retrying")
		ch <- prometheus.MustNewConstMetric(outboxDesc, prometheus.GaugeValue, float64(o.GaveUp), o.Name, "gave_up")
	}
}

// stats returns the cached depths, read again when older than QueueCacheTTL. A failed read is
// cached too (a database that does not answer is not asked at every scrape).
func (c *queueCollector) stats() (*store.QueueStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !c.at.IsZero() && now.Sub(c.at) < QueueCacheTTL && now.Sub(c.at) >= 0 {
		return c.cached, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueTimeout)
	defer cancel()
	st, err := c.read(ctx)
	c.at, c.cached, c.err = now, st, err
	if err != nil {
		c.cached = nil
	}
	return c.cached, c.err
}
