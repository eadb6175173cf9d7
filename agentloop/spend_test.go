package agentloop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// TestBudgetStopsModelCalls: each model call is recorded in the ledger with the configuration's
// prices; once the agent's budget is used up, the next step fails BUDGET_EXCEEDED before calling
// the model, naming the budget and its reset.
func TestBudgetStopsModelCalls(t *testing.T) {
	t.Parallel()
	in, out := int64(1_000_000), int64(2_000_000)
	turn := func(id string) llm.ScriptTurn {
		return llm.ScriptTurn{ToolCalls: []llm.ScriptToolCall{calcCall(id, "1+1")}, Usage: &llm.Usage{InputTokens: 40, OutputTokens: 10}}
	}
	f := newFixture(t, []llm.ScriptTurn{turn("c1"), turn("c2"), turn("c3"), {Text: "done"}}, store.AgentFields{}, true,
		looptest.WithLLMConfig(func(c *store.LLMConfig) { c.Prices = store.LLMPrices{Input: &in, Output: &out} }))
	ctx := context.Background()
	limit := int64(100)
	b, err := f.Store.CreateBudget(ctx, store.Budget{ScopeKind: store.BudgetScopeAgent, ScopeID: f.Agent.ID, Period: store.BudgetPeriodDay, LimitTokens: &limit})
	if err != nil {
		t.Fatal(err)
	}
	tk := f.NewTask("compute", 10)
	f.Drain()
	got := f.Task(tk.ID)
	if got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != taskstate.CodeBudgetExceeded {
		t.Fatalf("task = %s %+v", got.Status, got.Error)
	}
	if !strings.Contains(got.Error.Message, "budget ") || !strings.Contains(got.Error.Message, "resets at ") {
		t.Fatalf("error message %q names neither the budget nor its reset", got.Error.Message)
	}
	if be, ok := got.Data["budget_exceeded"].(map[string]any); !ok || fmt.Sprint(be["budget_id"]) != fmt.Sprint(b.ID) || be["resets_at"] == "" {
		t.Fatalf("task data = %v", got.Data)
	}
	if n := len(f.Rec.Requests()); n != 2 {
		t.Fatalf("model called %d times, want 2 (the third step is over budget)", n)
	}
	day := f.Store.Day(got.CreatedAt)
	rows, err := f.Store.Usage(ctx, store.UsageQuery{From: day, To: day, TaskID: &tk.ID, All: true})
	// 80 input tokens at 1.00/M and 20 output at 2.00/M: 80 + 40 micro-units.
	if err != nil || len(rows) != 1 || rows[0].Calls != 2 || rows[0].InputTokens != 80 || rows[0].OutputTokens != 20 || rows[0].Cost != 120 {
		t.Fatalf("ledger of the task = %+v, %v", rows, err)
	}
}
