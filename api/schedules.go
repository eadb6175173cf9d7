package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
)

func toPromptTemplate(t *store.PromptTemplate) gen.PromptTemplate {
	vars := make([]gen.PromptTemplateVariable, len(t.Variables))
	for i, v := range t.Variables {
		vars[i] = gen.PromptTemplateVariable{Key: v.Key, DefaultValue: v.DefaultValue}
	}
	return gen.PromptTemplate{Id: t.ID, AgentId: t.AgentID, Name: t.Name, Description: t.Description, Template: t.Template,
		Variables: vars, MaxSteps: t.MaxSteps, IsActive: t.IsActive, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func templateResponse(t *store.PromptTemplate) gen.PromptTemplateResponse {
	var r gen.PromptTemplateResponse
	r.Data.Template = toPromptTemplate(t)
	return r
}

func templateFields(b *gen.PromptTemplateRequest) store.PromptTemplateFields {
	f := store.PromptTemplateFields{Name: b.Name, Description: deref(b.Description), Template: b.Template, MaxSteps: b.MaxSteps, IsActive: true}
	if b.IsActive != nil {
		f.IsActive = *b.IsActive
	}
	if b.Variables != nil {
		for _, v := range *b.Variables {
			f.Variables = append(f.Variables, store.PromptVariable{Key: v.Key, DefaultValue: v.DefaultValue})
		}
	}
	return f
}

func toScheduledRun(r *store.ScheduledRun) gen.ScheduledRun {
	return gen.ScheduledRun{Id: r.ID, AgentId: r.AgentID, Name: r.Name, TemplateId: r.TemplateID, Prompt: r.Prompt,
		Variables: r.Variables, CronExpression: r.CronExpression, RunAt: r.RunAt, Timezone: r.Timezone,
		MaxStepsOverride: r.MaxStepsOverride, IsActive: r.IsActive, LastRunAt: r.LastRunAt, NextRunAt: r.NextRunAt,
		LastTaskId: r.LastTaskID, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func runResponse(r *store.ScheduledRun) gen.ScheduledRunResponse {
	var out gen.ScheduledRunResponse
	out.Data.ScheduledRun = toScheduledRun(r)
	return out
}

func runFields(b *gen.ScheduledRunRequest) store.ScheduledRunFields {
	f := store.ScheduledRunFields{Name: b.Name, TemplateID: b.TemplateId, Prompt: b.Prompt, CronExpression: b.CronExpression,
		RunAt: b.RunAt, Timezone: "UTC", MaxStepsOverride: b.MaxStepsOverride, IsActive: true}
	if b.Timezone != nil {
		f.Timezone = *b.Timezone
	}
	if b.IsActive != nil {
		f.IsActive = *b.IsActive
	}
	if b.Variables != nil {
		f.Variables = *b.Variables
	}
	return f
}

// ListPromptTemplates implements listPromptTemplates.
func (a *API) ListPromptTemplates(ctx context.Context, req gen.ListPromptTemplatesRequestObject) (gen.ListPromptTemplatesResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	ts, err := a.schedules.Templates(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	var out gen.PromptTemplateListResponse
	out.Data.Templates = make([]gen.PromptTemplate, len(ts))
	for i := range ts {
		out.Data.Templates[i] = toPromptTemplate(&ts[i])
	}
	return gen.ListPromptTemplates200JSONResponse(out), nil
}

// CreatePromptTemplate implements createPromptTemplate.
func (a *API) CreatePromptTemplate(ctx context.Context, req gen.CreatePromptTemplateRequestObject) (gen.CreatePromptTemplateResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := a.schedules.CreateTemplate(ctx, id.User, req.Id, templateFields(req.Body))
	if err != nil {
		return nil, err
	}
	return gen.CreatePromptTemplate201JSONResponse(templateResponse(t)), nil
}

// GetPromptTemplate implements getPromptTemplate.
func (a *API) GetPromptTemplate(ctx context.Context, req gen.GetPromptTemplateRequestObject) (gen.GetPromptTemplateResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := a.schedules.Template(ctx, id.User, req.Id, req.TemplateId)
	if err != nil {
		return nil, err
	}
	return gen.GetPromptTemplate200JSONResponse(templateResponse(t)), nil
}

// UpdatePromptTemplate implements updatePromptTemplate.
func (a *API) UpdatePromptTemplate(ctx context.Context, req gen.UpdatePromptTemplateRequestObject) (gen.UpdatePromptTemplateResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := a.schedules.UpdateTemplate(ctx, id.User, req.Id, req.TemplateId, templateFields(req.Body))
	if err != nil {
		return nil, err
	}
	return gen.UpdatePromptTemplate200JSONResponse(templateResponse(t)), nil
}

// DeletePromptTemplate implements deletePromptTemplate.
func (a *API) DeletePromptTemplate(ctx context.Context, req gen.DeletePromptTemplateRequestObject) (gen.DeletePromptTemplateResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.schedules.DeleteTemplate(ctx, id.User, req.Id, req.TemplateId); err != nil {
		return nil, err
	}
	return gen.DeletePromptTemplate200JSONResponse(deleted()), nil
}

// ListScheduledRuns implements listScheduledRuns.
func (a *API) ListScheduledRuns(ctx context.Context, req gen.ListScheduledRunsRequestObject) (gen.ListScheduledRunsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := a.schedules.Runs(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	var out gen.ScheduledRunListResponse
	out.Data.ScheduledRuns = make([]gen.ScheduledRun, len(rs))
	for i := range rs {
		out.Data.ScheduledRuns[i] = toScheduledRun(&rs[i])
	}
	return gen.ListScheduledRuns200JSONResponse(out), nil
}

// CreateScheduledRun implements createScheduledRun.
func (a *API) CreateScheduledRun(ctx context.Context, req gen.CreateScheduledRunRequestObject) (gen.CreateScheduledRunResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	r, err := a.schedules.CreateRun(ctx, id.User, req.Id, runFields(req.Body))
	if err != nil {
		return nil, err
	}
	return gen.CreateScheduledRun201JSONResponse(runResponse(r)), nil
}

// GetScheduledRun implements getScheduledRun.
func (a *API) GetScheduledRun(ctx context.Context, req gen.GetScheduledRunRequestObject) (gen.GetScheduledRunResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	r, err := a.schedules.Run(ctx, id.User, req.Id, req.RunId)
	if err != nil {
		return nil, err
	}
	return gen.GetScheduledRun200JSONResponse(runResponse(r)), nil
}

// UpdateScheduledRun implements updateScheduledRun.
func (a *API) UpdateScheduledRun(ctx context.Context, req gen.UpdateScheduledRunRequestObject) (gen.UpdateScheduledRunResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	r, err := a.schedules.UpdateRun(ctx, id.User, req.Id, req.RunId, runFields(req.Body))
	if err != nil {
		return nil, err
	}
	return gen.UpdateScheduledRun200JSONResponse(runResponse(r)), nil
}

// DeleteScheduledRun implements deleteScheduledRun.
func (a *API) DeleteScheduledRun(ctx context.Context, req gen.DeleteScheduledRunRequestObject) (gen.DeleteScheduledRunResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.schedules.DeleteRun(ctx, id.User, req.Id, req.RunId); err != nil {
		return nil, err
	}
	return gen.DeleteScheduledRun200JSONResponse(deleted()), nil
}

// TriggerScheduledRun implements triggerScheduledRun: the started task in the task shape.
func (a *API) TriggerScheduledRun(ctx context.Context, req gen.TriggerScheduledRunRequestObject) (gen.TriggerScheduledRunResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := a.schedules.Trigger(ctx, id.User, req.Id, req.RunId)
	if err != nil {
		return nil, err
	}
	v, err := a.tasks.ViewOf(ctx, t)
	if err != nil {
		return nil, err
	}
	var out gen.ScheduledRunTriggerResponse
	out.Data.Task = toTask(v)
	return gen.TriggerScheduledRun201JSONResponse(out), nil
}
