package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentsvc/svc/store"
)

func TestQueueDepthsAreCached(t *testing.T) {
	m := New()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	reads := 0
	var fail error
	m.WatchQueues(func(context.Context) (*store.QueueStats, error) {
		reads++
		if fail != nil {
			return nil, fail
		}
		return &store.QueueStats{Tasks: map[string]int64{"QUEUED": int64(reads), "RUNNING": 2},
			Outboxes: []store.OutboxStats{{Name: "mail", Pending: 3, Retrying: 1, GaveUp: 4}}}, nil
	}, func() time.Time { return now })

	want := func(queued int) string {
		return fmt.Sprintf(`
# HELP svc_tasks Tasks by status, read from the database (cached up to 5 s).
# TYPE svc_tasks gauge
svc_tasks{status="QUEUED"} %d
svc_tasks{status="RUNNING"} 2
`, queued)
	}
	for range 3 { // several scrapes within the TTL read once
		if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want(1)), "svc_tasks"); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 1 {
		t.Fatalf("%d reads within the cache TTL", reads)
	}
	now = now.Add(QueueCacheTTL)
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want(2)), "svc_tasks"); err != nil {
		t.Fatal(err)
	}
	if n := gauge(t, m, "svc_queue_stats_up"); n != 1 {
		t.Errorf("up = %v", n)
	}
	// A failed read: up is 0, no stale depths are reported.
	fail = errors.New("database down")
	now = now.Add(QueueCacheTTL)
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP svc_queue_stats_up 1 when the last read of the queue depths from the database succeeded.
# TYPE svc_queue_stats_up gauge
svc_queue_stats_up 0
`), "svc_queue_stats_up", "svc_tasks"); err != nil {
		t.Fatal(err)
	}
}

// gauge gathers the value of the single-sample gauge family name.
func gauge(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.Metric[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.Request("getTask", "GET", 200, time.Second)
	m.Claimed(true, time.Second)
	m.Step("COMPLETED", time.Second)
	m.ModelCall("openai", "gpt", 1, "ok", time.Second, 1, 1)
	m.FirstToken("openai", "gpt", time.Second)
	m.ToolCall("core.CalculatorTool", "executed", time.Second)
	m.OutboxAttempt("mail", false)
	m.WatchSubscribers("hub", func() int { return 0 })
	m.WatchQueues(nil, nil)
}

func TestStatusClass(t *testing.T) {
	for status, want := range map[int]string{200: "2xx", 201: "2xx", 404: "4xx", 503: "5xx", 42: "unknown"} {
		if got := StatusClass(status); got != want {
			t.Errorf("StatusClass(%d) = %q, want %q", status, got, want)
		}
	}
}
