package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/toolconfig"
)

func toAgentToolStatus(s *toolconfig.Status) gen.AgentToolStatus {
	out := gen.AgentToolStatus{
		ToolClass: s.ToolClass, DisplayName: s.DisplayName, Description: s.Description, PluginSlug: s.PluginSlug,
		Icon: s.Icon, Enabled: s.Enabled, ReadyToEnable: s.ReadyToEnable,
		MissingRequired: append([]string{}, s.MissingRequired...),
		Operations:      make([]gen.AgentToolStatusOperation, 0, len(s.Operations)),
	}
	for _, op := range s.Operations {
		out.Operations = append(out.Operations, gen.AgentToolStatusOperation{
			Name: op.Name, Description: op.Description, Enabled: op.Enabled, RequiresApproval: op.RequiresApproval,
		})
	}
	return out
}

func agentToolStatusResponse(s *toolconfig.Status) gen.AgentToolStatusResponse {
	var r gen.AgentToolStatusResponse
	r.Data.Tool = toAgentToolStatus(s)
	return r
}

func toAgentToolOperation(o *toolconfig.Operation) gen.AgentToolOperation {
	return gen.AgentToolOperation{
		ToolClass: o.ToolClass, Operation: o.Name, Description: o.Description, ToolEnabled: o.ToolEnabled,
		Enabled: o.Override.Enabled, AutoApprove: o.Override.AutoApprove, ApprovalTimeoutSeconds: o.Override.ApprovalTimeoutSeconds,
		EnabledByDefault: o.EnabledByDefault, RequiresApprovalByDefault: o.RequiresApprovalByDefault,
		EffectiveEnabled: o.EffectiveEnabled, RequiresApproval: o.RequiresApproval,
	}
}

func agentToolOperationResponse(o *toolconfig.Operation) gen.AgentToolOperationResponse {
	var r gen.AgentToolOperationResponse
	r.Data.Operation = toAgentToolOperation(o)
	return r
}

func agentToolOverrideResponse(l *toolconfig.Layer) gen.AgentToolOverrideResponse {
	var r gen.AgentToolOverrideResponse
	r.Data.Override = gen.AgentToolOverride{ToolClass: l.ToolClass, Settings: l.Settings, UpdatedAt: l.UpdatedAt}
	return r
}

// ListAgentToolStatuses shows every registered tool's status for an agent the caller can see.
func (a *API) ListAgentToolStatuses(ctx context.Context, req gen.ListAgentToolStatusesRequestObject) (gen.ListAgentToolStatusesResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	list, err := a.tcfg.Statuses(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	var r gen.ListAgentToolStatuses200JSONResponse
	r.Data.Tools = make([]gen.AgentToolStatus, 0, len(list))
	for i := range list {
		r.Data.Tools = append(r.Data.Tools, toAgentToolStatus(&list[i]))
	}
	return r, nil
}

// ListAgentToolOperations shows every operation of every registered tool for an agent.
func (a *API) ListAgentToolOperations(ctx context.Context, req gen.ListAgentToolOperationsRequestObject) (gen.ListAgentToolOperationsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	list, err := a.tcfg.Operations(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	var r gen.ListAgentToolOperations200JSONResponse
	r.Data.Operations = make([]gen.AgentToolOperation, 0, len(list))
	for i := range list {
		r.Data.Operations = append(r.Data.Operations, toAgentToolOperation(&list[i]))
	}
	return r, nil
}

// GetAgentToolStatus shows one tool's status for an agent.
func (a *API) GetAgentToolStatus(ctx context.Context, req gen.GetAgentToolStatusRequestObject) (gen.GetAgentToolStatusResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	s, err := a.tcfg.Status(ctx, id.User, req.Id, req.ToolId)
	if err != nil {
		return nil, err
	}
	return gen.GetAgentToolStatus200JSONResponse(agentToolStatusResponse(s)), nil
}

// EnableAgentTool enables a tool for an agent (manage right).
func (a *API) EnableAgentTool(ctx context.Context, req gen.EnableAgentToolRequestObject) (gen.EnableAgentToolResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	s, err := a.tcfg.Enable(ctx, id.User, req.Id, req.ToolId)
	if err != nil {
		return nil, err
	}
	return gen.EnableAgentTool200JSONResponse(agentToolStatusResponse(s)), nil
}

// DisableAgentTool disables a tool for an agent (manage right).
func (a *API) DisableAgentTool(ctx context.Context, req gen.DisableAgentToolRequestObject) (gen.DisableAgentToolResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.tcfg.Disable(ctx, id.User, req.Id, req.ToolId); err != nil {
		return nil, err
	}
	return gen.DisableAgentTool200JSONResponse(deleted()), nil
}

// GetAgentToolOperation shows one operation with the agent's override.
func (a *API) GetAgentToolOperation(ctx context.Context, req gen.GetAgentToolOperationRequestObject) (gen.GetAgentToolOperationResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	o, err := a.tcfg.Operation(ctx, id.User, req.Id, req.ToolId, req.Operation)
	if err != nil {
		return nil, err
	}
	return gen.GetAgentToolOperation200JSONResponse(agentToolOperationResponse(o)), nil
}

// UpdateAgentToolOperation sets the agent's override of one operation (manage right).
func (a *API) UpdateAgentToolOperation(ctx context.Context, req gen.UpdateAgentToolOperationRequestObject) (gen.UpdateAgentToolOperationResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	o, err := a.tcfg.SetOperation(ctx, id.User, req.Id, req.ToolId, req.Operation,
		tools.OperationOverride{Enabled: req.Body.Enabled, AutoApprove: req.Body.AutoApprove, ApprovalTimeoutSeconds: req.Body.ApprovalTimeoutSeconds})
	if err != nil {
		return nil, err
	}
	return gen.UpdateAgentToolOperation200JSONResponse(agentToolOperationResponse(o)), nil
}

// GetAgentToolOverride shows the agent-level settings of a tool (manage right).
func (a *API) GetAgentToolOverride(ctx context.Context, req gen.GetAgentToolOverrideRequestObject) (gen.GetAgentToolOverrideResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.tcfg.Override(ctx, id.User, req.Id, req.ToolId)
	if err != nil {
		return nil, err
	}
	return gen.GetAgentToolOverride200JSONResponse(agentToolOverrideResponse(l)), nil
}

// ReplaceAgentToolOverride replaces the agent-level settings of a tool (manage right).
func (a *API) ReplaceAgentToolOverride(ctx context.Context, req gen.ReplaceAgentToolOverrideRequestObject) (gen.ReplaceAgentToolOverrideResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.tcfg.ReplaceOverride(ctx, id.User, req.Id, req.ToolId, req.Body.Settings)
	if err != nil {
		return nil, err
	}
	return gen.ReplaceAgentToolOverride200JSONResponse(agentToolOverrideResponse(l)), nil
}

// DeleteAgentToolOverride removes the agent-level settings of a tool (manage right).
func (a *API) DeleteAgentToolOverride(ctx context.Context, req gen.DeleteAgentToolOverrideRequestObject) (gen.DeleteAgentToolOverrideResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.tcfg.DeleteOverride(ctx, id.User, req.Id, req.ToolId); err != nil {
		return nil, err
	}
	return gen.DeleteAgentToolOverride200JSONResponse(deleted()), nil
}
