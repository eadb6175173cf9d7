package core

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
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
			readOp("list_schedules", "List the agent's scheduled runs."),
			readOp("read_schedule", "Read one scheduled run."),
			approvedOp("create_schedule", "Create a scheduled run from a prompt or a prompt template."),
			approvedOp("update_schedule", "Change a scheduled run; fields left out keep their value."),
			approvedOp("delete_schedule", "Delete a scheduled run."),
			readOp("list_prompt_templates", "List the agent's prompt templates."),
			readOp("read_prompt_template", "Read one prompt template."),
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

// ScheduleService is what the schedule tool needs of the schedule service (*schedule.Service):
// each method acts as user u on the scheduled runs or prompt templates of agent agentID (its id
// in path form), with the same rules and error categories as the API: svcerr.ErrNotFound for an
// agent, run or template u may not see, svcerr.ErrForbidden for a write without the manage role,
// svcerr.ErrInvalid or svcerr.ErrConflict for refused fields. The tool shows every categorised
// refusal to the model; other errors fail the call as infrastructure failures.
type ScheduleService interface {
	Runs(ctx context.Context, u *store.User, agentID string) ([]store.ScheduledRun, error)
	Run(ctx context.Context, u *store.User, agentID, id string) (*store.ScheduledRun, error)
	CreateRun(ctx context.Context, u *store.User, agentID string, f store.ScheduledRunFields) (*store.ScheduledRun, error)
	UpdateRun(ctx context.Context, u *store.User, agentID, id string, f store.ScheduledRunFields) (*store.ScheduledRun, error)
	DeleteRun(ctx context.Context, u *store.User, agentID, id string) error
	Trigger(ctx context.Context, u *store.User, agentID, id string) (*store.Task, error)
	Templates(ctx context.Context, u *store.User, agentID string) ([]store.PromptTemplate, error)
	Template(ctx context.Context, u *store.User, agentID, id string) (*store.PromptTemplate, error)
	CreateTemplate(ctx context.Context, u *store.User, agentID string, f store.PromptTemplateFields) (*store.PromptTemplate, error)
	UpdateTemplate(ctx context.Context, u *store.User, agentID, id string, f store.PromptTemplateFields) (*store.PromptTemplate, error)
	DeleteTemplate(ctx context.Context, u *store.User, agentID, id string) error
}

// scheduleExec runs the schedule tool on the schedule service, for the calling agent's own
// scheduled runs and prompt templates, acting as the task's user (Call.UserID): reads need that
// user to see the agent, writes the manage role on its owner, exactly as through the API; a
// refusal is a ToolError the model sees. Writes need approval by default (the tool's spec).
type scheduleExec struct {
	schedules ScheduleService
	users     UserInfoSource
}

// Execute runs one call. Refusals (bad arguments, no rights, a rule of the schedule service)
// are ToolErrors; other errors are infrastructure failures.
func (x *scheduleExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	if x.schedules == nil || x.users == nil {
		return tools.Result{}, toolErr("schedules are not available")
	}
	u, err := x.users.UserByID(ctx, call.UserID)
	if err != nil {
		return tools.Result{}, toolError(err)
	}
	agent := strconv.FormatInt(call.AgentID, 10)
	a := scheduleArgs(call.Args)
	switch call.Operation {
	case "list_schedules":
		runs, err := x.schedules.Runs(ctx, u, agent)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		out := make([]map[string]any, len(runs))
		for i := range runs {
			out[i] = runView(&runs[i])
		}
		return jsonResult(map[string]any{"schedules": out})
	case "read_schedule":
		r, err := x.schedules.Run(ctx, u, agent, a.id("schedule_id"))
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(runView(r))
	case "create_schedule", "update_schedule":
		var f store.ScheduledRunFields
		id := a.id("schedule_id")
		if call.Operation == "update_schedule" {
			cur, err := x.schedules.Run(ctx, u, agent, id)
			if err != nil {
				return tools.Result{}, toolError(err)
			}
			f = store.ScheduledRunFields{Name: cur.Name, TemplateID: cur.TemplateID, Prompt: cur.Prompt, Variables: cur.Variables,
				CronExpression: cur.CronExpression, RunAt: cur.RunAt, Timezone: cur.Timezone, MaxStepsOverride: cur.MaxStepsOverride, IsActive: cur.IsActive}
		} else {
			f.IsActive, f.Timezone = true, "UTC"
		}
		if err := a.applyRun(&f); err != nil {
			return tools.Result{}, err
		}
		var r *store.ScheduledRun
		if call.Operation == "create_schedule" {
			r, err = x.schedules.CreateRun(ctx, u, agent, f)
		} else {
			r, err = x.schedules.UpdateRun(ctx, u, agent, id, f)
		}
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(runView(r))
	case "delete_schedule":
		if err := x.schedules.DeleteRun(ctx, u, agent, a.id("schedule_id")); err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(map[string]any{"deleted": true})
	case "trigger":
		t, err := x.schedules.Trigger(ctx, u, agent, a.id("schedule_id"))
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(map[string]any{"task_id": t.ID, "status": t.Status})
	case "list_prompt_templates":
		ts, err := x.schedules.Templates(ctx, u, agent)
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		out := make([]map[string]any, len(ts))
		for i := range ts {
			out[i] = templateView(&ts[i])
		}
		return jsonResult(map[string]any{"prompt_templates": out})
	case "read_prompt_template":
		t, err := x.schedules.Template(ctx, u, agent, a.id("template_id"))
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(templateView(t))
	case "create_prompt_template", "update_prompt_template":
		f := store.PromptTemplateFields{IsActive: true}
		id := a.id("template_id")
		if call.Operation == "update_prompt_template" {
			cur, err := x.schedules.Template(ctx, u, agent, id)
			if err != nil {
				return tools.Result{}, toolError(err)
			}
			f = store.PromptTemplateFields{Name: cur.Name, Description: cur.Description, Template: cur.Template,
				Variables: cur.Variables, MaxSteps: cur.MaxSteps, IsActive: cur.IsActive}
		}
		a.applyTemplate(&f)
		var t *store.PromptTemplate
		var err error
		if call.Operation == "create_prompt_template" {
			t, err = x.schedules.CreateTemplate(ctx, u, agent, f)
		} else {
			t, err = x.schedules.UpdateTemplate(ctx, u, agent, id, f)
		}
		if err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(templateView(t))
	case "delete_prompt_template":
		if err := x.schedules.DeleteTemplate(ctx, u, agent, a.id("template_id")); err != nil {
			return tools.Result{}, toolError(err)
		}
		return jsonResult(map[string]any{"deleted": true})
	}
	return tools.Result{}, &tools.ToolError{Msg: fmt.Sprintf("unknown operation %q", call.Operation)}
}

// scheduleArgs reads the schedule tool's arguments (validated against its schema already).
type scheduleArgs map[string]any

// id is the integer argument key as the service's path form ("" when absent: not found).
func (a scheduleArgs) id(key string) string {
	if n, ok := intOf(a[key]); ok {
		return strconv.FormatInt(n, 10)
	}
	return ""
}

func (a scheduleArgs) str(key string) (string, bool) {
	s, ok := a[key].(string)
	return s, ok
}

func (a scheduleArgs) intPtr(key string) *int {
	if n, ok := intOf(a[key]); ok {
		v := int(n)
		return &v
	}
	return nil
}

// variables reads [{key, default_value}].
func (a scheduleArgs) variables() ([]store.PromptVariable, bool) {
	list, ok := a["variables"].([]any)
	if !ok {
		return nil, false
	}
	out := make([]store.PromptVariable, 0, len(list))
	for _, item := range list {
		m, _ := item.(map[string]any)
		k, _ := m["key"].(string)
		v := store.PromptVariable{Key: k}
		if d, ok := m["default_value"].(string); ok {
			v.DefaultValue = &d
		}
		out = append(out, v)
	}
	return out, true
}

// applyRun sets the run fields the arguments give. A prompt replaces a template and the other
// way round; cron_expression replaces run_at and the other way round.
func (a scheduleArgs) applyRun(f *store.ScheduledRunFields) error {
	if s, ok := a.str("name"); ok {
		f.Name = s
	}
	if s, ok := a.str("prompt"); ok {
		f.Prompt, f.TemplateID, f.Variables = &s, nil, nil
	}
	if n, ok := intOf(a["template_id"]); ok {
		f.TemplateID, f.Prompt = &n, nil
	}
	if vars, ok := a.variables(); ok {
		f.Variables = map[string]string{}
		for _, v := range vars {
			if v.DefaultValue != nil {
				f.Variables[v.Key] = *v.DefaultValue
			}
		}
	}
	if s, ok := a.str("cron_expression"); ok {
		f.CronExpression, f.RunAt = &s, nil
	}
	if s, ok := a.str("run_at"); ok {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return &tools.ToolError{Msg: "run_at must be an RFC 3339 date-time"}
		}
		f.RunAt, f.CronExpression = &t, nil
	}
	if s, ok := a.str("timezone"); ok && s != "" {
		f.Timezone = s
	}
	if p := a.intPtr("max_steps_override"); p != nil {
		f.MaxStepsOverride = p
	}
	if b, ok := a["is_active"].(bool); ok {
		f.IsActive = b
	}
	return nil
}

// applyTemplate sets the template fields the arguments give.
func (a scheduleArgs) applyTemplate(f *store.PromptTemplateFields) {
	if s, ok := a.str("name"); ok {
		f.Name = s
	}
	if s, ok := a.str("description"); ok {
		f.Description = s
	}
	if s, ok := a.str("template"); ok {
		f.Template = s
	}
	if vars, ok := a.variables(); ok {
		f.Variables = vars
	}
	if p := a.intPtr("max_steps"); p != nil {
		f.MaxSteps = p
	}
	if b, ok := a["is_active"].(bool); ok {
		f.IsActive = b
	}
}

func runView(r *store.ScheduledRun) map[string]any {
	return map[string]any{"id": r.ID, "name": r.Name, "template_id": r.TemplateID, "prompt": r.Prompt, "variables": r.Variables,
		"cron_expression": r.CronExpression, "run_at": r.RunAt, "timezone": r.Timezone, "max_steps_override": r.MaxStepsOverride,
		"is_active": r.IsActive, "last_run_at": r.LastRunAt, "next_run_at": r.NextRunAt, "last_task_id": r.LastTaskID}
}

func templateView(t *store.PromptTemplate) map[string]any {
	return map[string]any{"id": t.ID, "name": t.Name, "description": t.Description, "template": t.Template,
		"variables": t.Variables, "max_steps": t.MaxSteps, "is_active": t.IsActive}
}
