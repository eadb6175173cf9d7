package core

import "github.com/agentsvc/svc/tools"

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
			op("read", "Return the list."),
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
