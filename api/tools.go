package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/toolconfig"
)

func toRegisteredTool(spec tools.Spec) gen.RegisteredTool {
	out := gen.RegisteredTool{
		ToolClass: spec.Class, Name: tools.ModelName(spec), DisplayName: tools.DisplayName(spec),
		Description: spec.Description, Category: gen.RegisteredToolCategory(tools.Category(spec)),
		Icon: tools.Icon(spec, ""), RecommendsSkills: append([]string{}, spec.RecommendsSkills...),
		Operations: make([]gen.RegisteredToolOperation, 0, len(spec.Operations)),
		Settings:   make([]gen.RegisteredToolSetting, 0, len(spec.Settings)),
	}
	if spec.PluginSlug != "" {
		slug := spec.PluginSlug
		out.PluginSlug = &slug
	}
	for _, op := range spec.Operations {
		out.Operations = append(out.Operations, gen.RegisteredToolOperation{
			Name: op.Name, Description: op.Description, EnabledByDefault: op.EnabledByDefault,
			RequiresApprovalByDefault: op.RequiresApprovalByDefault, Repeatable: op.Repeatable,
		})
	}
	for _, st := range spec.Settings {
		s := gen.RegisteredToolSetting{
			Key: st.Key, Type: gen.RegisteredToolSettingType(st.Type), Label: st.Label,
			Description: st.Description, Required: st.Required, Default: st.Default,
		}
		if st.Type == tools.SettingPassword {
			s.Default = nil // never shown, even if a declaration slipped one through
		}
		if st.Type == tools.SettingSelect {
			opts := append([]string{}, st.Options...)
			s.Options = &opts
		}
		out.Settings = append(out.Settings, s)
	}
	return out
}

func toSettingsLayer(l *toolconfig.Layer) gen.ToolSettingsLayerResponse {
	var r gen.ToolSettingsLayerResponse
	r.Data.Settings = gen.ToolSettingsLayer{
		ToolClass: l.ToolClass, Scope: gen.ToolSettingsLayerScope(l.Scope), Settings: l.Settings, UpdatedAt: l.UpdatedAt,
	}
	return r
}

func toGroupTool(t *toolconfig.GroupTool) gen.GroupTool {
	return gen.GroupTool{ToolClass: t.ToolClass, Enabled: t.Enabled, Settings: t.Settings, UpdatedAt: t.UpdatedAt}
}

// ListTools lists every registered tool with its declarations.
func (a *API) ListTools(ctx context.Context, _ gen.ListToolsRequestObject) (gen.ListToolsResponseObject, error) {
	if _, err := caller(ctx); err != nil {
		return nil, err
	}
	specs, err := a.tcfg.Registered()
	if err != nil {
		return nil, err
	}
	var r gen.ListTools200JSONResponse
	r.Data.Tools = make([]gen.RegisteredTool, 0, len(specs))
	for _, spec := range specs {
		r.Data.Tools = append(r.Data.Tools, toRegisteredTool(spec))
	}
	return r, nil
}

// GetToolSettings shows the global layer of a tool (administrators).
func (a *API) GetToolSettings(ctx context.Context, req gen.GetToolSettingsRequestObject) (gen.GetToolSettingsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.tcfg.GlobalSettings(ctx, id.User, req.ToolId)
	if err != nil {
		return nil, err
	}
	return gen.GetToolSettings200JSONResponse(toSettingsLayer(l)), nil
}

// PutToolSettings writes keys of the global layer of a tool (administrators).
func (a *API) PutToolSettings(ctx context.Context, req gen.PutToolSettingsRequestObject) (gen.PutToolSettingsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.tcfg.PutGlobalSettings(ctx, id.User, req.ToolId, req.Body.Settings)
	if err != nil {
		return nil, err
	}
	return gen.PutToolSettings200JSONResponse(toSettingsLayer(l)), nil
}

// DeleteToolSettings removes the global layer of a tool (administrators).
func (a *API) DeleteToolSettings(ctx context.Context, req gen.DeleteToolSettingsRequestObject) (gen.DeleteToolSettingsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.tcfg.DeleteGlobalSettings(ctx, id.User, req.ToolId); err != nil {
		return nil, err
	}
	return gen.DeleteToolSettings200JSONResponse(deleted()), nil
}

// GetToolUserSettings shows the caller's own layer of a tool.
func (a *API) GetToolUserSettings(ctx context.Context, req gen.GetToolUserSettingsRequestObject) (gen.GetToolUserSettingsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.tcfg.UserSettings(ctx, id.User, req.ToolId)
	if err != nil {
		return nil, err
	}
	return gen.GetToolUserSettings200JSONResponse(toSettingsLayer(l)), nil
}

// PutToolUserSettings writes keys of the caller's own layer of a tool.
func (a *API) PutToolUserSettings(ctx context.Context, req gen.PutToolUserSettingsRequestObject) (gen.PutToolUserSettingsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	l, err := a.tcfg.PutUserSettings(ctx, id.User, req.ToolId, req.Body.Settings)
	if err != nil {
		return nil, err
	}
	return gen.PutToolUserSettings200JSONResponse(toSettingsLayer(l)), nil
}

// DeleteToolUserSettings removes the caller's own layer of a tool.
func (a *API) DeleteToolUserSettings(ctx context.Context, req gen.DeleteToolUserSettingsRequestObject) (gen.DeleteToolUserSettingsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.tcfg.DeleteUserSettings(ctx, id.User, req.ToolId); err != nil {
		return nil, err
	}
	return gen.DeleteToolUserSettings200JSONResponse(deleted()), nil
}

// ListGroupTools lists a group's tool entries (members, administrators).
func (a *API) ListGroupTools(ctx context.Context, req gen.ListGroupToolsRequestObject) (gen.ListGroupToolsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	list, err := a.tcfg.GroupTools(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	var r gen.ListGroupTools200JSONResponse
	r.Data.Tools = make([]gen.GroupTool, 0, len(list))
	for i := range list {
		r.Data.Tools = append(r.Data.Tools, toGroupTool(&list[i]))
	}
	return r, nil
}

// UpsertGroupTool creates or updates a group's tool entry (owners, admins, administrators).
func (a *API) UpsertGroupTool(ctx context.Context, req gen.UpsertGroupToolRequestObject) (gen.UpsertGroupToolResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := a.tcfg.UpsertGroupTool(ctx, id.User, req.Id, req.ToolClass, req.Body.Enabled, deref(req.Body.Settings))
	if err != nil {
		return nil, err
	}
	var r gen.UpsertGroupTool200JSONResponse
	r.Data.Tool = toGroupTool(t)
	return r, nil
}

// RemoveGroupTool removes a group's tool entry and its group-level settings.
func (a *API) RemoveGroupTool(ctx context.Context, req gen.RemoveGroupToolRequestObject) (gen.RemoveGroupToolResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.tcfg.RemoveGroupTool(ctx, id.User, req.Id, req.ToolClass); err != nil {
		return nil, err
	}
	return gen.RemoveGroupTool200JSONResponse(deleted()), nil
}
