package task_test

import (
	"testing"

	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

func TestSnapshotView(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatal(err)
	}
	spec, ok := reg.Spec("core.CalculatorTool")
	if !ok || len(spec.Operations) == 0 {
		t.Fatal("calculator tool not registered")
	}
	op := spec.Operations[0]
	svc := task.New(nil, reg)
	said := "Halfway there."
	cases := []struct {
		name  string
		snap  store.ChatSnapshot
		check func(t *testing.T, v *task.View)
	}{
		{"pending approval", store.ChatSnapshot{Task: store.Task{ID: 1, Status: taskstate.PendingApproval}, Calls: []store.ToolCall{
			{ID: 5, ToolClass: "core.CalculatorTool", Operation: op.Name, Status: store.ToolCallPendingApproval},
			{ID: 6, ToolClass: "core.CalculatorTool", Operation: op.Name, Status: store.ToolCallApproved},
		}}, func(t *testing.T, v *task.View) {
			if !v.HasPending || len(v.Calls) != 1 || v.Calls[0].ID != 5 || v.Calls[0].Description == "" {
				t.Fatalf("view = %+v", v)
			}
		}},
		{"awaiting input", store.ChatSnapshot{Task: store.Task{ID: 1, Status: taskstate.AwaitingInput},
			Questions: []store.QuestionBatch{{ToolCallID: "q1"}}}, func(t *testing.T, v *task.View) {
			if !v.HasPending || len(v.Questions) != 1 || v.Questions[0].ToolCallID != "q1" || len(v.Calls) != 0 {
				t.Fatalf("view = %+v", v)
			}
		}},
		{"failed", store.ChatSnapshot{Task: store.Task{ID: 1, Status: taskstate.Failed}, LastSaid: &said}, func(t *testing.T, v *task.View) {
			if v.HasPending || v.LastSaid == nil || *v.LastSaid != said || v.Calls == nil || v.Questions == nil {
				t.Fatalf("view = %+v", v)
			}
		}},
		{"completed", store.ChatSnapshot{Task: store.Task{ID: 1, Status: taskstate.Completed}, LastSaid: &said}, func(t *testing.T, v *task.View) {
			if v.HasPending || v.LastSaid != nil || v.Task.Status != taskstate.Completed {
				t.Fatalf("view = %+v", v)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, svc.SnapshotView(tc.snap))
		})
	}
}
