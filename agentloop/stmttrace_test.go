package agentloop_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/store/storetest"
)

func TestTraceStatements(t *testing.T) {
	if os.Getenv("TRACE_STMTS") == "" {
		t.Skip()
	}
	st, counter := storetest.NewCounted(t)
	seed := seedAgent(t, st)
	turns := []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "6*7")}}, {Text: "42"}}
	if os.Getenv("TRACE_STMTS") == "1" {
		turns = []llm.ScriptTurn{{Text: "42"}}
	}
	loop := newWorkerLoop(t, st, turns, nil)
	seed.createTasks(t, st, "x", 1)
	ctx := context.Background()
	counter.Trace(func(q string) { t.Log(q) })
	claimed, err := st.ClaimQueued(ctx, "w", time.Hour, 1)
	if err != nil {
		t.Fatal(err)
	}
	loop.Run(ctx, nil, claimed[0].ID, "w")
	counter.Trace(nil)
}
