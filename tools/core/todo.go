package core

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/tools"
)

// TodoTool keeps the task's working checklist, so a long task stays on track and the user can
// follow its progress.
type TodoTool struct{}

// Spec declares the tool.
func (TodoTool) Spec() tools.Spec {
	statuses := []string{"pending", "in_progress", "completed"}
	return tools.Spec{
		Class:       "core.TodoTool",
		Name:        "todo",
		DisplayName: "To-do list",
		Description: "Keep a checklist for the current task: write the whole list, add an item, set an item's status, read the list. Keep exactly one item in_progress while working.",
		Category:    tools.CategoryProductivity,
		Icon:        "list-checks",
		Operations: []tools.Operation{
			op("write", "Replace the whole list."),
			op("add", "Append one item."),
			op("set_status", "Set the status of one item."),
			readOp("read", "Return the list."),
		},
		Params: []tools.Param{
			{
				Name: "todos", Type: tools.TypeArray, Description: "write: the complete list, in order.",
				Items: obj(map[string]any{
					"content": prop("string", "What to do, as an imperative sentence."),
					"status":  map[string]any{"type": "string", "enum": statuses},
				}, "content", "status"),
				Required: tools.RequiredFor("write"),
			},
			{Name: "content", Type: tools.TypeString, Description: "add: what to do.", Required: tools.RequiredFor("add")},
			{
				Name: "id", Type: tools.TypeInteger, Minimum: tools.Float(1), Description: "set_status: the item number (1 for the first item).",
				Required: tools.RequiredFor("set_status"),
			},
			{
				Name: "status", Type: tools.TypeString, Enum: statuses, Description: "set_status: the new status.",
				Required: tools.RequiredFor("set_status"),
			},
		},
	}
}

// Checklist limits.
const (
	maxTodos          = 100
	maxTodoContentLen = 500 // characters
)

var todoStatuses = map[string]string{"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

type todoExec struct{ todos TodoStore }

// Execute runs write (replace the list), add (append a pending item), set_status (by 1-based
// id) and read on the calling task's checklist. Bad items, unknown ids and lists over 100 items
// are ToolErrors; store failures are returned as errors.
func (e *todoExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	if e.todos == nil || call.TaskID == 0 {
		return tools.Result{}, toolErr("the to-do list is not available here")
	}
	var list []Todo
	switch call.Operation {
	case "write":
		raw, ok := call.Args["todos"].([]any)
		if !ok {
			return tools.Result{}, toolErr("argument \"todos\" must be a list of {content, status}")
		}
		if len(raw) > maxTodos {
			return tools.Result{}, toolErr("at most %d items", maxTodos)
		}
		list = make([]Todo, 0, len(raw))
		for i, r := range raw {
			m, ok := r.(map[string]any)
			if !ok {
				return tools.Result{}, toolErr("item %d must be an object {content, status}", i+1)
			}
			content, _ := m["content"].(string)
			status, _ := m["status"].(string)
			t, err := checkTodo(content, status, i+1)
			if err != nil {
				return tools.Result{}, err
			}
			list = append(list, t)
		}
	case "add":
		content, err := requiredString(call.Args, "content")
		if err != nil {
			return tools.Result{}, err
		}
		if list, err = e.todos.Todos(ctx, call.TaskID); err != nil {
			return tools.Result{}, err
		}
		if len(list) >= maxTodos {
			return tools.Result{}, toolErr("the list already has %d items", maxTodos)
		}
		t, err := checkTodo(content, "pending", len(list)+1)
		if err != nil {
			return tools.Result{}, err
		}
		list = append(list, t)
	case "set_status":
		id, present, err := intArg(call.Args, "id", 0)
		if err != nil {
			return tools.Result{}, err
		}
		status, _, err := stringArg(call.Args, "status")
		if err != nil {
			return tools.Result{}, err
		}
		if _, ok := todoStatuses[status]; !ok {
			return tools.Result{}, toolErr("status must be pending, in_progress or completed")
		}
		if list, err = e.todos.Todos(ctx, call.TaskID); err != nil {
			return tools.Result{}, err
		}
		if !present || id < 1 || id > int64(len(list)) {
			return tools.Result{}, toolErr("no item %d: the list has %d items", id, len(list))
		}
		list[id-1].Status = status
	case "read":
		list, err := e.todos.Todos(ctx, call.TaskID)
		if err != nil {
			return tools.Result{}, err
		}
		return todoResult(list), nil
	default:
		return tools.Result{}, unknownOp(call.Operation)
	}
	if err := e.todos.SaveTodos(ctx, call.TaskID, list); err != nil {
		return tools.Result{}, err
	}
	return todoResult(list), nil
}

func checkTodo(content, status string, n int) (Todo, error) {
	content = strings.TrimSpace(content)
	if content == "" {
		return Todo{}, toolErr("item %d: content is required", n)
	}
	if !utf8.ValidString(content) || utf8.RuneCountInString(content) > maxTodoContentLen {
		return Todo{}, toolErr("item %d: content is longer than %d characters", n, maxTodoContentLen)
	}
	if _, ok := todoStatuses[status]; !ok {
		return Todo{}, toolErr("item %d: status must be pending, in_progress or completed", n)
	}
	return Todo{Content: content, Status: status}, nil
}

func todoResult(list []Todo) tools.Result {
	type item struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Status  string `json:"status"`
	}
	items := make([]item, len(list))
	var b strings.Builder
	for i, t := range list {
		items[i] = item{ID: i + 1, Content: t.Content, Status: t.Status}
		b.WriteString(strconv.Itoa(i+1) + ". " + todoStatuses[t.Status] + " " + t.Content + "\n")
	}
	content := strings.TrimSuffix(b.String(), "\n")
	if len(list) == 0 {
		content = "The to-do list is empty."
	}
	return tools.Result{Content: content, Data: jsonData(map[string]any{"todos": items})}
}
