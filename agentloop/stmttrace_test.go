package agentloop_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestStepStatementBudget holds what one task costs the database (issue 14): a one-step task
// (claim, one answer step) and a two-turn task (a calculator call, then the answer), run by
// Loop.Run, counted by storetest's driver. On SQLite the figures are asserted (docs/benchmarks.md,
// "Step cost"); on MySQL/MariaDB, where a lease write reads the row back (no UPDATE …
// RETURNING), they are logged. Every statement is logged with -v.
func TestStepStatementBudget(t *testing.T) {
	cases := []struct {
		name            string
		turns           []llm.ScriptTurn
		stmts, writeTxs int64
	}{
		{"one-step", []llm.ScriptTurn{{Text: "42"}}, 11, 2},
		{"two-turn", []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "6*7")}}, {Text: "42"}}, 26, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, counter := storetest.NewCounted(t)
			seed := seedAgent(t, st)
			loop := newWorkerLoop(t, st, c.turns, nil)
			seed.createTasks(t, st, "x", 1)
			ctx := context.Background()
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
			t.Logf("%s: %d statements (%d writes) in %d transactions, %d of them writing", c.name, got.Statements, got.Writes, got.Txs, got.WriteTxs)
			if st.Dialect() == store.DialectSQLite && (got.Statements > c.stmts || got.WriteTxs > c.writeTxs) {
				t.Errorf("%d statements in %d write transactions, want at most %d in %d", got.Statements, got.WriteTxs, c.stmts, c.writeTxs)
			}
		})
	}
}
