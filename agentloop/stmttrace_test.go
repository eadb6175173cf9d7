package agentloop_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestStepStatementBudget holds what one task costs the database (issue 14): a one-step task
// (claim, one answer step) and a two-turn task (a calculator call, then the answer), claimed
// and run as the worker does (Loop.Claim, Loop.RunClaimed), counted by storetest's driver: the agent's first task (the step's configuration is
// read: the configuration version, the agent, the model configuration) and its second (the
// configuration is cached). On SQLite the figures are asserted (docs/benchmarks.md, "Step
// cost"); on MySQL/MariaDB, where a lease write reads the row back (no UPDATE … RETURNING),
// they are logged. Every statement is logged with -v. Issue 27 added to each model call's step
// its usage ledger row and daily rollup upsert (2 writes), and to the configuration's read
// whether any budget exists (1 read, cached with it). The run's transcript (agentloop/transcript.go)
// took the second step's read of the conversation away (two-turn 25/20 → 24/19).
func TestStepStatementBudget(t *testing.T) {
	cases := []struct {
		name            string
		turn            []llm.ScriptTurn
		stmts, writeTxs [2]int64 // first task, second task
	}{
		{"one-step", []llm.ScriptTurn{{Text: "42"}}, [2]int64{13, 8}, [2]int64{2, 2}},
		{"two-turn", []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "6*7")}}, {Text: "42"}}, [2]int64{24, 19}, [2]int64{4, 4}},
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
				claimed, err := loop.Claim(ctx, "w", 1)
				if err != nil || len(claimed) != 1 {
					t.Fatal(err, len(claimed))
				}
				loop.RunClaimed(ctx, nil, claimed[0], "w")
				counter.Trace(nil)
				got := counter.Counts().Sub(before)
				tk, err := st.Task(ctx, claimed[0].Task.ID)
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

// TestClaimReadsTheConversationsOnce: a claimed batch's conversations are read in one
// statement, and the runs read no message again — the second step of a two-turn task holds
// its first turn from its own write —, while every model request still carries the whole
// conversation: the prompt, then the first turn with its tool result.
func TestClaimReadsTheConversationsOnce(t *testing.T) {
	t.Parallel()
	st, counter := storetest.NewCounted(t)
	seed := seedAgent(t, st)
	turns := []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "6*7")}}, {Text: "42"}, {ToolCalls: []llm.ScriptToolCall{calcCall("c2", "6*7")}}, {Text: "42"}}
	var requests []llm.Request
	loop := newWorkerLoop(t, st, turns, func(r llm.Request) { requests = append(requests, r) })
	ctx := context.Background()
	tasks := seed.createTasks(t, st, "batch", 2)
	var reads []string
	counter.Trace(func(q string) {
		if strings.Contains(q, "FROM task_messages") {
			reads = append(reads, q)
		}
	})
	claimed, err := loop.Claim(ctx, "w", 2)
	if err != nil || len(claimed) != 2 {
		t.Fatal(err, len(claimed))
	}
	for _, c := range claimed {
		if len(c.Messages) != 1 || c.Messages[0].Text != c.Task.Prompt {
			t.Fatalf("task %d claimed with messages %+v", c.Task.ID, c.Messages)
		}
	}
	for _, c := range claimed { // one after the other: the scripted model's turns in order
		loop.RunClaimed(ctx, nil, c, "w")
	}
	counter.Trace(nil)
	if len(reads) != 1 {
		t.Fatalf("the messages were read %d times, want once (the claim's batch): %q", len(reads), reads)
	}
	for _, tk := range tasks {
		got, err := st.Task(ctx, tk.ID)
		if err != nil || got.Status != taskstate.Completed || got.MessageSeq != 3 { // the prompt and two turns
			t.Fatalf("task: %v %+v", err, got)
		}
	}
	if len(requests) != 4 {
		t.Fatalf("%d model requests", len(requests))
	}
	for i, r := range requests {
		want := 1 // the prompt
		if i%2 == 1 {
			want = 3 // the prompt, the turn with its call, the call's result
		}
		if len(r.Messages) != want || r.Messages[0].Text != claimed[i/2].Task.Prompt {
			t.Fatalf("request %d: %+v", i, r.Messages)
		}
		if want == 3 && (len(r.Messages[1].ToolCalls) != 1 || r.Messages[2].Text != "6*7 = 42") {
			t.Fatalf("request %d: %+v", i, r.Messages)
		}
	}
}
