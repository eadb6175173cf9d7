package server_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestAppStepStatementBudget holds what one task costs the database with the service's own
// wiring (agentloop's TestStepStatementBudget stubs the tool states; here they, the agent and
// the model configuration are read as svc serve reads them): one-step tasks through claim and
// Run, counted by storetest's driver, on SQLite: the agent's first (its configuration is read)
// and its second (cached). Every statement is logged with -v. It also checks that the tables
// the steps read, beyond the task's own, are all store.ConfigTables: a write to any other table
// the step's configuration came from would not reach the cache.
func TestAppStepStatementBudget(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the scripted driver reads its script relative to the working directory
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(`[{"text": "42"}, {"text": "43"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	st, counter := storetest.NewCounted(t)
	env := apitest.NewWith(t, apitest.Options{Store: st})
	c, _ := env.UserClient("ada@example.com")
	agent := scriptedAgent(t, c, "Lab", "s.json", "core.CalculatorTool", "calculate", true)
	ctx := context.Background()
	configTables := map[string]bool{}
	for _, name := range store.ConfigTables {
		configTables[name] = true
	}
	// Issue 27 added the usage ledger row and the daily rollup upsert to the step (2 writes) and,
	// to the configuration's read, whether any budget exists (1 read); issue 28 took the
	// notification notice out of a completion nobody follows (its want is read by the status
	// UPDATE).
	for i, want := range []int64{19, 8} {
		var created gen.TaskResponse
		c.Post("/tasks", map[string]any{"agent_id": agent.Id, "prompt": "What is 6*7?"}).Expect(t, 201).Decode(t, &created)
		before := counter.Counts()
		counter.Trace(func(q string) {
			t.Log(q)
			for _, m := range readTable.FindAllStringSubmatch(q, -1) {
				if name := strings.ToLower(m[1]); m[2] == "" && !taskTables[name] && !configTables[name] {
					t.Errorf("a step reads table %s, neither the task's own nor one of store.ConfigTables: %s", name, q)
				}
			}
		})
		got, err := env.App.Store.ClaimQueued(ctx, "w", time.Hour, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim = %+v, %v", got, err)
		}
		env.App.Loop.Run(ctx, nil, &got[0], "w")
		counter.Trace(nil)
		n := counter.Counts().Sub(before)
		tk, err := env.App.Store.Task(ctx, got[0].ID)
		if err != nil || tk.Status != taskstate.Completed {
			t.Fatalf("task: %v %+v", err, tk)
		}
		t.Logf("run %d: %d statements (%d writes) in %d transactions, %d of them writing", i+1, n.Statements, n.Writes, n.Txs, n.WriteTxs)
		if st.Dialect() == store.DialectSQLite && (n.Statements > want || n.WriteTxs > 2) {
			t.Errorf("run %d: %d statements in %d write transactions, want at most %d in 2", i+1, n.Statements, n.WriteTxs, want)
		}
	}
}

// readTable matches a table a statement reads (FROM or JOIN); a name followed by a parenthesis
// (its second group) is a set-returning function such as unnest, not a table.
var readTable = regexp.MustCompile("(?i)\\b(?:from|join)\\s+[`\"]?(\\w+)[`\"]?(\\s*\\()?")

// taskTables are the tables of a task's own state, which its steps read and write every time.
var taskTables = map[string]bool{
	"tasks": true, "task_messages": true, "task_tool_calls": true, "task_events": true, "task_questions": true,
	"task_media": true, "notifications": true, "notification_subscriptions": true, "notification_outbox": true, "versions": true,
	"claim_users": true, "claim_ranks": true, "claim_ids": true, // the claim's common table expressions (store/taskclaim.go)
}
