package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/runtimesettings"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// GetRuntimeSettings answers the runtime settings administrators may change, with their
// effective values and sources. Errors: ErrForbidden (not an administrator), ErrUnavailable.
func (a *API) GetRuntimeSettings(ctx context.Context, _ gen.GetRuntimeSettingsRequestObject) (gen.GetRuntimeSettingsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	list, err := a.settings.List(ctx, id.User)
	if err != nil {
		return nil, err
	}
	return gen.GetRuntimeSettings200JSONResponse(runtimeSettingsResponse(list)), nil
}

// UpdateRuntimeSettings stores (or, for null, clears) the runtime settings named, all or
// nothing. Errors: ErrForbidden, ErrBadRequest (no body), ErrInvalid (a key not editable, a
// wrong type, a value the configuration refuses).
func (a *API) UpdateRuntimeSettings(ctx context.Context, req gen.UpdateRuntimeSettingsRequestObject) (gen.UpdateRuntimeSettingsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.Body == nil {
		return nil, svcerr.New(svcerr.ErrBadRequest, "a JSON body is required")
	}
	list, err := a.settings.Update(ctx, id.User, req.Body.Settings) // a null value clears the stored one
	if err != nil {
		return nil, err
	}
	return gen.UpdateRuntimeSettings200JSONResponse(runtimeSettingsResponse(list)), nil
}

func runtimeSettingsResponse(list []runtimesettings.Setting) gen.RuntimeSettingsResponse {
	var out gen.RuntimeSettingsResponse
	out.Data.Settings = make([]gen.RuntimeSetting, 0, len(list))
	for _, s := range list {
		out.Data.Settings = append(out.Data.Settings, gen.RuntimeSetting{Key: s.Key, Type: gen.RuntimeSettingType(s.Type),
			Value: s.Value, Default: s.Default, Source: gen.RuntimeSettingSource(s.Source), Description: s.Description})
	}
	return out
}
