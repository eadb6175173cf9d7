package agentloop_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestStepStatementBudget holds what one task costs the database (issue 14): a one-step task
// (claim, one answer step) and a two-turn task (a calculator call, then the answer), run by
// Loop.Run, counted by storetest's driver: the agent's first task (the step's configuration is
// read: the configuration version, the agent, the model configuration) and its second (the
// configuration is cached). On SQLite the figures are asserted (docs/benchmarks.md, "Step
// cost"); on MySQL/MariaDB, where a lease write reads the row back (no UPDATE … RETURNING),
// they are logged. Every statement is logged with -v. Issue 27 added to each model call's step
// its usage ledger row and daily rollup upsert (2 writes), and to the configuration's read
// whether any budget exists (1 read, cached with it).
func TestStepStatementBudget(t *testing.T) {
	cases := []struct {
		name            string
		turn            []llm.ScriptTurn
		stmts, writeTxs [2]int64 // first task, second task
	}{
		{"one-step", []llm.ScriptTurn{{Text: "42"}}, [2]int64{14, 9}, [2]int64{2, 2}},
		{"two-turn", []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "6*7")}}, {Text: "42"}}, [2]int64{26, 21}, [2]int64{4, 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, counter := storetest.NewCounted(t)
			seed := seedAgent(t, st)
			loop := newWorkerLoop(t, st, append(append([]llm.ScriptTurn{}, c.turn...), c.turn...), nil)
			ctx := context.Background()
			for i, run := range []string{"first", "second"} {
				seed.createTasks(t, st, run, 1)
				before := counter.Counts()
				counter.Trace(func(q string) { t.Log(q) })
				claimed, err := st.ClaimQueued(ctx, "w", time.Hour, 1)
				if err != nil || len(claimed) != 1 {
					t.Fatal(err, len(claimed))
				}
				loop.Run(ctx, nil, &claimed[0], "w")
				counter.Trace(nil)
				got := counter.Counts().Sub(before)
				tk, err := st.Task(ctx, claimed[0].ID)
				if err != nil || tk.Status != taskstate.Completed {
					t.Fatalf("task: %v %+v", err, tk)
				}
				t.Logf("%s, %s task: %d statements (%d writes) in %d transactions, %d of them writing", c.name, run, got.Statements, got.Writes, got.Txs, got.WriteTxs)
				if st.Dialect() == store.DialectSQLite && (got.Statements > c.stmts[i] || got.WriteTxs > c.writeTxs[i]) {
					t.Errorf("%s task: %d statements in %d write transactions, want at most %d in %d", run, got.Statements, got.WriteTxs, c.stmts[i], c.writeTxs[i])
				}
			}
		})
	}
}
