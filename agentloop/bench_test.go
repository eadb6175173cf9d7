package agentloop_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/taskstate"
	"github.com/agentsvc/svc/store/storetest"
)

// BenchmarkTickStep measures the orchestration overhead of one Loop.Tick with a zero-latency
// scripted model whose turns alternate a calculator call and a final answer: loading the
// task, agent, tool calls and transcript, building the request, persisting the assistant turn,
// recording and executing the call (call steps), and finishing the step under the lease. One
// op is one step; ns/call-step and ns/answer-step split the two kinds. Tasks are created and
// claimed in batches with the timer stopped.
func BenchmarkTickStep(b *testing.B) {
	st := storetest.New(b)
	seed := seedAgent(b, st)
	turns := []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "6*7")}}, {Text: "42"}}
	loop := newWorkerLoop(b, st, turns, nil)
	ctx := context.Background()
	const wid = "bench"
	var queue []int64
	var callDur, answerDur time.Duration
	var calls, answers int
	b.ReportAllocs()
	for b.Loop() {
		if len(queue) == 0 {
			b.StopTimer()
			seed.createTasks(b, st, "bench", 64)
			claimed, err := st.ClaimQueued(ctx, wid, time.Hour, 64)
			if err != nil || len(claimed) != 64 {
				b.Fatalf("claim: %v %d", err, len(claimed))
			}
			for _, c := range claimed {
				queue = append(queue, c.ID)
			}
			b.StartTimer()
		}
		start := time.Now()
		t, err := loop.Tick(ctx, queue[0], wid)
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		switch t.Status {
		case taskstate.Running:
			calls++
			callDur += d
		case taskstate.Completed:
			answers++
			answerDur += d
			queue = queue[1:]
		default:
			b.Fatalf("task %d: %s", t.ID, t.Status)
		}
	}
	if calls > 0 {
		b.ReportMetric(float64(callDur.Nanoseconds())/float64(calls), "ns/call-step")
	}
	if answers > 0 {
		b.ReportMetric(float64(answerDur.Nanoseconds())/float64(answers), "ns/answer-step")
	}
}

// BenchmarkDrain measures how fast worker.Daemon drains a queue of single-turn tasks
// (claim, one Tick that answers and completes, lease handling) at a given concurrency. One op
// drains the whole batch; tasks/s is the throughput. The "notify" cases wake the claimer when
// a run returns; "as-wired" does not, like server/runtime.go today, so a full daemon waits for
// its poll interval (default 1 s) before claiming again.
func BenchmarkDrain(b *testing.B) {
	cases := []struct {
		name       string
		maxWorkers int
		notify     bool
		tasks      int
	}{
		{"workers=4/notify", 4, true, 200},
		{"workers=unlimited/notify", 0, true, 200},
		{"workers=4/as-wired", 4, false, 20},
		// The sweep behind the automatic max_workers of each dialect (docs/decisions.md,
		// "Worker concurrency and the connection pool"), over the store's default pool.
		{"sweep/workers=1", 1, false, 200},
		{"sweep/workers=2", 2, false, 200},
		{"sweep/workers=4", 4, false, 200},
		{"sweep/workers=8", 8, false, 200},
		{"sweep/workers=16", 16, false, 200},
		{"sweep/workers=32", 32, false, 200},
		// The same with a model answering in 100 ms (real models take longer): a run waiting for
		// its model holds no connection, so throughput follows the number of runs.
		{"latency/workers=4", 4, false, 100},
		{"latency/workers=8", 8, false, 100},
		{"latency/workers=16", 16, false, 100},
		{"latency/workers=32", 32, false, 100},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			st := storetest.New(b)
			seed := seedAgent(b, st)
			var before func(llm.Request)
			if strings.HasPrefix(c.name, "latency/") {
				before = func(llm.Request) { time.Sleep(100 * time.Millisecond) }
			}
			loop := newWorkerLoop(b, st, []llm.ScriptTurn{{Text: "done"}}, before)
			ctx := context.Background()
			var total int
			var elapsed time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				seed.createTasks(b, st, "drain", c.tasks)
				var left atomic.Int64
				left.Store(int64(c.tasks))
				done := make(chan struct{})
				d := newDaemon(st, loop, "bench", c.maxWorkers, c.notify, func(int64) {
					if left.Add(-1) == 0 {
						close(done)
					}
				})
				b.StartTimer()
				start := time.Now()
				d.Start(ctx)
				select {
				case <-done:
				case <-time.After(5 * time.Minute):
					b.Fatalf("%d of %d tasks left after 5 minutes", left.Load(), c.tasks)
				}
				elapsed += time.Since(start)
				total += c.tasks
				if err := d.Stop(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "tasks/s")
		})
	}
}
