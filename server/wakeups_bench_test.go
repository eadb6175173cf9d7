package server_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/jobs/worker"
	"github.com/agentsvc/svc/internal/platform/pgwake"
	"github.com/agentsvc/svc/internal/platform/taskstream"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// arrivals is a taskstream.Sink that reports when each event arrives.
type arrivals chan time.Time

func (a arrivals) Event(*store.TaskEvent, map[string]string) error { a <- time.Now(); return nil }
func (arrivals) KeepAlive() error                                  { return nil }
func (arrivals) Flush()                                            {}
func (arrivals) Authorized(context.Context) error                  { return nil }

// side is one process of BenchmarkCrossProcessWake: a daemon and an event-stream broker over
// its store, woken as buildServices wires them (its own commits; on PostgreSQL other processes'
// through its wake-up listener), polls at the production second.
type side struct {
	daemon  *worker.Daemon[*store.Task]
	broker  *taskstream.Broker
	started chan int64
}

func newSide(b *testing.B, st *store.Store, name string) *side {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	sd := &side{started: make(chan int64, 64), broker: taskstream.New(st, log)}
	sd.daemon = &worker.Daemon[*store.Task]{MaxWorkers: 4, Poll: time.Second, ChoresEvery: time.Hour, Log: log,
		Claim: func(ctx context.Context, n int) ([]*store.Task, error) {
			ts, err := st.ClaimQueued(ctx, name, time.Hour, n)
			out := make([]*store.Task, len(ts))
			for i := range ts {
				out[i] = &ts[i]
			}
			return out, err
		},
		Run: func(_ context.Context, _ <-chan struct{}, t *store.Task) { sd.started <- t.ID },
	}
	sd.broker.Poll, sd.broker.KeepAlive = time.Second, time.Hour
	wake := func(c store.Commit) {
		if c.TaskQueued {
			sd.daemon.Notify()
		}
		if len(c.EventTasks) > 0 {
			sd.broker.Notify(c.EventTasks)
		}
	}
	st.AfterCommit(wake)
	wakeups := &pgwake.Listener{Store: st, Wake: wake, Log: log, Resync: func(context.Context) { sd.daemon.Notify() }}
	wakeups.Start(ctx)
	b.Cleanup(func() { _ = wakeups.Stop(ctx) })
	sd.broker.Start(ctx)
	b.Cleanup(func() { _ = sd.broker.Stop(ctx) })
	for wakeups.Enabled() && !wakeups.Connected() {
		time.Sleep(10 * time.Millisecond)
	}
	return sd
}

// BenchmarkCrossProcessWake measures how soon a process learns of what process A committed
// (two stores on one database, each with its own pool, as two svc processes):
//   - task: A queues a task (CreateTask) → a daemon has claimed it and starts its run;
//   - event: A writes an event (AppendDelta) → a stream has sent it;
//
// each to A itself (local: its commit listeners, the baseline) and to process B (other: on
// PostgreSQL by NOTIFY, elsewhere by B's one-second poll). Each sample starts at a random phase
// of the poll (0–1 s apart). p50-ms and p99-ms are the latencies; ns/op includes the pause
// between samples and means nothing.
func BenchmarkCrossProcessWake(b *testing.B) {
	ctx := context.Background()
	a := storetest.New(b)
	bs := storetest.Twin(b, a)
	u := storetest.User(b, a)
	g := storetest.Group(b, a, u)
	ag := storetest.Agent(b, a, g.PrincipalID)
	sides := []struct {
		name string
		*side
	}{{"local", newSide(b, a, "A")}, {"other", newSide(b, bs, "B")}}

	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		pct := func(p float64) float64 {
			return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
		}
		b.ReportMetric(pct(0.50), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
	}

	for _, sd := range sides {
		b.Run("event/"+sd.name, func(b *testing.B) {
			tk := storetest.Task(b, a, ag, u.ID)
			if got, err := a.ClaimQueued(ctx, "A", time.Hour, 1); err != nil || len(got) != 1 {
				b.Fatalf("claim: %d, %v", len(got), err)
			}
			cs, err := a.EventCursors(ctx, []int64{tk.ID})
			if err != nil || len(cs) != 1 {
				b.Fatalf("cursor: %v", err)
			}
			seen := make(arrivals, 64)
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() { _ = sd.broker.Serve(sctx, tk.ID, cs[0].EventSeq, seen) }()
			time.Sleep(50 * time.Millisecond) // the stream is watching
			var lat []time.Duration
			for b.Loop() {
				time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond)
				t0 := time.Now()
				if err := a.AppendDelta(ctx, tk.ID, "A", store.Delta{Text: "x"}); err != nil {
					b.Fatal(err)
				}
				select {
				case at := <-seen:
					lat = append(lat, at.Sub(t0))
				case <-time.After(10 * time.Second):
					b.Fatal("the event did not reach the stream")
				}
			}
			report(b, lat)
		})
	}
	for _, sd := range sides {
		b.Run("task/"+sd.name, func(b *testing.B) {
			sd.daemon.Start(ctx)
			defer func() { _ = sd.daemon.Stop(ctx) }()
			var lat []time.Duration
			for b.Loop() {
				time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond)
				t0 := time.Now()
				tk := storetest.Task(b, a, ag, u.ID)
				for id := int64(0); id != tk.ID; {
					select {
					case id = <-sd.started:
					case <-time.After(10 * time.Second):
						b.Fatal("the task did not start")
					}
				}
				lat = append(lat, time.Since(t0))
			}
			report(b, lat)
		})
	}
}
