package core

import (
	"github.com/agentsvc/svc/internal/limits"
	"github.com/agentsvc/svc/tools"
)

// ScheduleTool manages the agent's scheduled runs and prompt templates and triggers a run now.
// Every write needs approval by default.
type ScheduleTool struct{}

// Spec declares the tool.
func (ScheduleTool) Spec() tools.Spec {
	return tools.Spec{
		Class:            "core.ScheduleTool",
		Name:             "schedule",
		DisplayName:      "Schedules",
		Description:      "Manage this agent's scheduled runs (cron or one-shot) and prompt templates, and trigger a scheduled run now.",
		Category:         tools.CategoryProductivity,
		Icon:             "calendar-clock",
		RecommendsSkills: []string{"scheduling"},
		Base:             &timezoneBase,
		Operations: []tools.Operation{
			op("list_schedules", "List the agent's scheduled runs."),
			op("read_schedule", "Read one scheduled run."),
			approvedOp("create_schedule", "Create a scheduled run from a prompt or a prompt template."),
			approvedOp("update_schedule", "Change a scheduled run; fields left out keep their value."),
			approvedOp("delete_schedule", "Delete a scheduled run."),
			op("list_prompt_templates", "List the agent's prompt templates."),
			op("read_prompt_template", "Read one prompt template."),
			approvedOp("create_prompt_template", "Create a prompt template."),
			approvedOp("update_prompt_template", "Change a prompt template; fields left out keep their value."),
			approvedOp("delete_prompt_template", "Delete a prompt template."),
			approvedOp("trigger", "Run a scheduled run now, once, without changing its schedule."),
		},
		Params: []tools.Param{
			{
				Name: "schedule_id", Type: tools.TypeInteger, Minimum: tools.Float(1), Description: "The scheduled run.",
				Required: tools.RequiredFor("read_schedule", "update_schedule", "delete_schedule", "trigger"),
			},
			{
				Name: "template_id", Type: tools.TypeInteger, Minimum: tools.Float(1),
				Description: "The prompt template; on create_schedule and update_schedule, the template the run uses instead of prompt.",
				Required:    tools.RequiredFor("read_prompt_template", "update_prompt_template", "delete_prompt_template"),
			},
			{
				Name: "name", Type: tools.TypeString, Description: "Name of the run or template (at most 100 characters).",
				Required: tools.RequiredFor("create_schedule", "create_prompt_template"),
			},
			{Name: "prompt", Type: tools.TypeString, Description: "create_schedule, update_schedule: the prompt of each run (or give template_id).", Required: tools.Optional()},
			{
				Name: "cron_expression", Type: tools.TypeString, Description: "Five-field cron expression (minute hour day-of-month month day-of-week) in timezone; or give run_at.",
				Required: tools.Optional(),
			},
			{Name: "run_at", Type: tools.TypeString, Format: "date-time", Description: "One-shot run time (RFC 3339); or give cron_expression.", Required: tools.Optional()},
			{
				Name: "max_steps_override", Type: tools.TypeInteger, Description: "Model turns per run, overriding the agent's setting.",
				Minimum: tools.Float(limits.MinSteps), Maximum: tools.Float(limits.MaxSteps), Required: tools.Optional(),
			},
			{Name: "is_active", Type: tools.TypeBoolean, Description: "Whether the run or template is active.", Required: tools.Optional()},
			{Name: "description", Type: tools.TypeString, Description: "Template description.", Required: tools.Optional()},
			{
				Name: "template", Type: tools.TypeString, Description: "Template text with {{variable}} placeholders.",
				Required: tools.RequiredFor("create_prompt_template"),
			},
			{
				Name: "variables", Type: tools.TypeArray, Description: "Template variables with their default values.",
				Items: obj(map[string]any{
					"key":           prop("string", "Placeholder name, as in {{key}}."),
					"default_value": prop("string", "Value used when a run gives none."),
				}, "key"),
				Required: tools.Optional(),
			},
			{
				Name: "max_steps", Type: tools.TypeInteger, Description: "Template: model turns per run.",
				Minimum: tools.Float(limits.MinSteps), Maximum: tools.Float(limits.MaxSteps), Required: tools.Optional(),
			},
		},
	}
}
