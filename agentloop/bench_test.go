package agentloop_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// reportCounts reports what the store sent per unit (statements, write statements,
// transactions, write transactions) as benchmark metrics.
func reportCounts(b *testing.B, c storetest.Counts, n int, unit string) {
	if n == 0 {
		return
	}
	b.ReportMetric(float64(c.Statements)/float64(n), "stmts/"+unit)
	b.ReportMetric(float64(c.Writes)/float64(n), "writes/"+unit)
	b.ReportMetric(float64(c.Txs)/float64(n), "txs/"+unit)
	b.ReportMetric(float64(c.WriteTxs)/float64(n), "wtxs/"+unit)
}

// rawCommitNs times one raw SQLite write transaction (BEGIN IMMEDIATE, one small INSERT,
// COMMIT) on a fresh file opened with the store's pragmas: the floor a step's commits stand on.
func rawCommitNs(b *testing.B) float64 {
	b.Helper()
	dsn, err := store.SQLiteDSN(filepath.Join(b.TempDir(), "raw.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	const n = 2000
	start := time.Now()
	for range n {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO t (v) VALUES (?)", "x"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / n
}

// BenchmarkTickStep measures the orchestration overhead of one Loop.Tick with a zero-latency
// scripted model whose turns alternate a calculator call and a final answer: loading the
// task, agent, tool calls and transcript, building the request, persisting the assistant turn,
// recording and executing the call (call steps), and finishing the step under the lease. One
// op is one step; ns/call-step and ns/answer-step split the two kinds. Tasks are created and
// claimed in batches with the timer stopped. stmts/task, txs/task and wtxs/task count what one
// two-turn task's two ticks sent to the database (the claim is not included; see BenchmarkDrain).
func BenchmarkTickStep(b *testing.B) {
	st, counter := storetest.NewCounted(b)
	seed := seedAgent(b, st)
	turns := []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "6*7")}}, {Text: "42"}}
	loop := newWorkerLoop(b, st, turns, nil)
	ctx := context.Background()
	const wid = "bench"
	var queue []int64
	var callDur, answerDur time.Duration
	var calls, answers int
	var callCounts, answerCounts storetest.Counts
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
		before := counter.Counts()
		start := time.Now()
		t, err := loop.Tick(ctx, queue[0], wid)
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		c := counter.Counts().Sub(before)
		switch t.Status {
		case taskstate.Running:
			calls++
			callDur += d
			callCounts = add(callCounts, c)
		case taskstate.Completed:
			answers++
			answerDur += d
			answerCounts = add(answerCounts, c)
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
	reportCounts(b, add(callCounts, answerCounts), answers, "task")
	b.ReportMetric(float64(callCounts.Statements)/float64(max(calls, 1)), "stmts/call-step")
	b.ReportMetric(float64(answerCounts.Statements)/float64(max(answers, 1)), "stmts/answer-step")
}

func add(a, b storetest.Counts) storetest.Counts {
	return storetest.Counts{Statements: a.Statements + b.Statements, Writes: a.Writes + b.Writes, Txs: a.Txs + b.Txs, WriteTxs: a.WriteTxs + b.WriteTxs}
}

// BenchmarkDrain measures how fast worker.Daemon drains a queue of single-turn tasks
// (claim, one Tick that answers and completes, lease handling) at a given concurrency. One op
// drains the whole batch; tasks/s is the throughput. The "notify" cases wake the claimer when
// a run returns; "as-wired" does not, like server/runtime.go today, so a full daemon waits for
// its poll interval (default 1 s) before claiming again. stmts/task, txs/task and wtxs/task
// count what the drain sent to the database per task (claims included); on SQLite,
// x-raw-commit is the wall time per drained task ÷ one raw commit (rawCommitNs) timed in the
// same run.
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
		// The sweep behind the automatic max_workers of each dialect (docs/benchmarks.md,
		// "Worker concurrency sweep"), over the store's default pool.
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
			st, counter := storetest.NewCounted(b)
			seed := seedAgent(b, st)
			var before func(llm.Request)
			if strings.HasPrefix(c.name, "latency/") {
				before = func(llm.Request) { time.Sleep(100 * time.Millisecond) }
			}
			loop := newWorkerLoop(b, st, []llm.ScriptTurn{{Text: "done"}}, before)
			ctx := context.Background()
			var total int
			var elapsed time.Duration
			var counts storetest.Counts
			var raw float64
			if st.Dialect() == store.DialectSQLite {
				raw = rawCommitNs(b)
			}
			b.ResetTimer()
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
				before := counter.Counts()
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
				counts = add(counts, counter.Counts().Sub(before))
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "tasks/s")
			reportCounts(b, counts, total, "task")
			if raw > 0 {
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(total)/raw, "x-raw-commit")
			}
		})
	}
}
