package core_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

type memTodos struct {
	mu    sync.Mutex
	lists map[int64][]core.Todo
	saves int
}

func (m *memTodos) Todos(_ context.Context, taskID int64) ([]core.Todo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]core.Todo(nil), m.lists[taskID]...), nil
}

func (m *memTodos) SaveTodos(_ context.Context, taskID int64, todos []core.Todo) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lists[taskID] = append([]core.Todo(nil), todos...)
	m.saves++
	return nil
}

func TestTodo(t *testing.T) {
	t.Parallel()
	store := &memTodos{lists: map[int64][]core.Todo{}}
	deps := core.Deps{Todos: store}
	run := func(op string, args map[string]any) (tools.Result, error) {
		return exec(t, deps, "core.TodoTool", tools.Call{Operation: op, Args: args, TaskID: 9})
	}
	res, err := run("read", nil)
	if err != nil || res.Content != "The to-do list is empty." {
		t.Fatalf("empty read %q, %v", res.Content, err)
	}
	_, err = run("write", map[string]any{"todos": []any{
		map[string]any{"content": "Find sources", "status": "in_progress"},
		map[string]any{"content": " Summarise ", "status": "pending"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = run("add", map[string]any{"content": "Send the report"}); err != nil {
		t.Fatal(err)
	}
	res, err = run("set_status", map[string]any{"id": 1.0, "status": "completed"})
	if err != nil {
		t.Fatal(err)
	}
	want := "1. [x] Find sources\n2. [ ] Summarise\n3. [ ] Send the report"
	if res.Content != want {
		t.Errorf("list\n%s\nwant\n%s", res.Content, want)
	}
	if res, _ := run("read", nil); res.Content != want {
		t.Errorf("read %q", res.Content)
	}
	saves := store.saves

	many := make([]any, 101)
	for i := range many {
		many[i] = map[string]any{"content": fmt.Sprint("item ", i), "status": "pending"}
	}
	tests := []struct {
		op      string
		args    map[string]any
		wantErr string
	}{
		{"write", map[string]any{}, "must be a list"},
		{"write", map[string]any{"todos": many}, "at most 100"},
		{"write", map[string]any{"todos": []any{"Find sources"}}, "must be an object"},
		{"write", map[string]any{"todos": []any{map[string]any{"content": "", "status": "pending"}}}, "content is required"},
		{"write", map[string]any{"todos": []any{map[string]any{"content": "x", "status": "done"}}}, "status must be"},
		{"write", map[string]any{"todos": []any{map[string]any{"content": strings.Repeat("x", 501), "status": "pending"}}}, "longer than 500"},
		{"add", map[string]any{}, "required"},
		{"set_status", map[string]any{"id": 4.0, "status": "completed"}, "no item 4"},
		{"set_status", map[string]any{"id": 0.0, "status": "completed"}, "no item 0"},
		{"set_status", map[string]any{"status": "completed"}, "no item"},
		{"set_status", map[string]any{"id": 1.0, "status": "done"}, "status must be"},
		{"set_status", map[string]any{"id": "1", "status": "completed"}, "integer"},
	}
	for _, tt := range tests {
		_, err := run(tt.op, tt.args)
		wantToolErr(t, err, tt.wantErr)
	}
	if store.saves != saves {
		t.Errorf("refused calls saved %d times", store.saves-saves)
	}
	if res, _ := run("read", nil); res.Content != want {
		t.Errorf("list changed by refused calls: %q", res.Content)
	}
	_, err = exec(t, core.Deps{}, "core.TodoTool", tools.Call{Operation: "read", TaskID: 9})
	wantToolErr(t, err, "not available")
	_, err = exec(t, deps, "core.TodoTool", tools.Call{Operation: "read"})
	wantToolErr(t, err, "not available")
}
