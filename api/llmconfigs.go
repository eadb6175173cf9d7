package api

import (
	"context"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/group"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// toLlmConfig converts a model configuration. The sealed API key never leaves: only whether one
// is stored.
func toLlmConfig(c *store.LLMConfig) gen.LlmConfig {
	return gen.LlmConfig{
		Id: c.ID, GroupId: c.GroupID, PrincipalId: c.PrincipalID, Name: c.Name, Driver: gen.LlmDriver(c.Driver),
		Model: c.Model, BaseUrl: c.BaseURL, ApiKeySet: c.APIKeySet(), Temperature: toFloat32(c.Temperature),
		MaxTokensOutput: c.MaxTokensOutput, ContextWindow: c.ContextWindow, Timeout: c.Timeout,
		IsDefault: c.IsDefault, IsGlobal: c.IsGlobal, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		Prices: gen.LlmPrices{Input: c.Prices.Input, Output: c.Prices.Output, CachedInput: c.Prices.CachedInput},
	}
}

// fromLlmPrices converts the prices of a request (nil when absent).
func fromLlmPrices(p *gen.LlmPrices) *store.LLMPrices {
	if p == nil {
		return nil
	}
	return &store.LLMPrices{Input: p.Input, Output: p.Output, CachedInput: p.CachedInput}
}

func llmConfigResponse(c *store.LLMConfig) gen.LlmConfigResponse {
	var r gen.LlmConfigResponse
	r.Data.LlmConfig = toLlmConfig(c)
	return r
}

// fromFloat32 widens the generated float32 through its shortest decimal form, so 0.2 is stored
// as 0.2 rather than 0.20000000298023224.
func fromFloat32(f *float32) *float64 {
	if f == nil {
		return nil
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(*f), 'g', -1, 32), 64)
	return &v
}

func toFloat32(f *float64) *float32 {
	if f == nil {
		return nil
	}
	v := float32(*f)
	return &v
}

// ListGroupLlmConfigs lists a group's model configurations (members, administrators).
func (a *API) ListGroupLlmConfigs(ctx context.Context, req gen.ListGroupLlmConfigsRequestObject) (gen.ListGroupLlmConfigsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := a.groups.LLMConfigs(ctx, id.User, req.Id, deref(req.Params.IncludeGlobal))
	if err != nil {
		return nil, err
	}
	var r gen.ListGroupLlmConfigs200JSONResponse
	r.Data.LlmConfigs = make([]gen.LlmConfig, 0, len(cs))
	for i := range cs {
		r.Data.LlmConfigs = append(r.Data.LlmConfigs, toLlmConfig(&cs[i]))
	}
	return r, nil
}

// CreateGroupLlmConfig adds a model configuration (owners, admins, administrators).
func (a *API) CreateGroupLlmConfig(ctx context.Context, req gen.CreateGroupLlmConfigRequestObject) (gen.CreateGroupLlmConfigResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	in := group.LLMConfigInput{
		Name: b.Name, Driver: string(b.Driver), Model: b.Model, BaseURL: b.BaseUrl, APIKey: b.ApiKey,
		Temperature: fromFloat32(b.Temperature), MaxTokensOutput: b.MaxTokensOutput, ContextWindow: b.ContextWindow,
		Timeout: b.Timeout, IsDefault: deref(b.IsDefault), IsGlobal: deref(b.IsGlobal),
	}
	if pr := fromLlmPrices(b.Prices); pr != nil {
		in.Prices = *pr
	}
	c, err := a.groups.CreateLLMConfig(ctx, id.User, req.Id, in)
	if err != nil {
		return nil, err
	}
	return gen.CreateGroupLlmConfig201JSONResponse(llmConfigResponse(c)), nil
}

// UpdateGroupLlmConfig changes a model configuration (owners, admins, administrators).
func (a *API) UpdateGroupLlmConfig(ctx context.Context, req gen.UpdateGroupLlmConfigRequestObject) (gen.UpdateGroupLlmConfigResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	p := group.LLMConfigPatch{
		Name: b.Name, Model: b.Model, BaseURL: b.BaseUrl, APIKey: b.ApiKey, Temperature: fromFloat32(b.Temperature),
		MaxTokensOutput: b.MaxTokensOutput, ContextWindow: b.ContextWindow, Timeout: b.Timeout,
		IsDefault: b.IsDefault, IsGlobal: b.IsGlobal, Prices: fromLlmPrices(b.Prices),
	}
	if b.Driver != nil {
		d := string(*b.Driver)
		p.Driver = &d
	}
	if b.Clear != nil {
		for _, f := range *b.Clear {
			p.Clear = append(p.Clear, string(f))
		}
	}
	c, err := a.groups.UpdateLLMConfig(ctx, id.User, req.Id, req.Cid, p)
	if err != nil {
		return nil, err
	}
	return gen.UpdateGroupLlmConfig200JSONResponse(llmConfigResponse(c)), nil
}

// DeleteGroupLlmConfig removes a model configuration (owners, admins, administrators).
func (a *API) DeleteGroupLlmConfig(ctx context.Context, req gen.DeleteGroupLlmConfigRequestObject) (gen.DeleteGroupLlmConfigResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.groups.DeleteLLMConfig(ctx, id.User, req.Id, req.Cid); err != nil {
		return nil, err
	}
	return gen.DeleteGroupLlmConfig200JSONResponse(deleted()), nil
}

// SetDefaultGroupLlmConfig makes a model configuration the default of its scope.
func (a *API) SetDefaultGroupLlmConfig(ctx context.Context, req gen.SetDefaultGroupLlmConfigRequestObject) (gen.SetDefaultGroupLlmConfigResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := a.groups.SetDefaultLLMConfig(ctx, id.User, req.Id, req.Cid)
	if err != nil {
		return nil, err
	}
	return gen.SetDefaultGroupLlmConfig200JSONResponse(llmConfigResponse(c)), nil
}

// maxTestReply bounds the reply text a test call returns, in characters.
const maxTestReply = 200

// TestGroupLlmConfig makes one minimal model call with a configuration through the driver a
// step uses; the provider's refusal is the answer (ok false), not an error of the operation.
func (a *API) TestGroupLlmConfig(ctx context.Context, req gen.TestGroupLlmConfigRequestObject) (gen.TestGroupLlmConfigResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := a.groups.LLMConfigToTest(ctx, id.User, req.Id, req.Cid)
	if err != nil {
		return nil, err
	}
	var r gen.TestGroupLlmConfig200JSONResponse
	t := &r.Data.Test
	t.Model = &c.Model
	start := time.Now()
	d, err := a.llmDriver(c)
	if err != nil {
		code, msg := taskstate.CodeBadRequest, "model configuration unusable: "+err.Error()
		t.ErrorCode, t.Message = &code, &msg
		return r, nil
	}
	resp, err := llm.Probe(ctx, d)
	t.DurationMs = int(time.Since(start).Milliseconds())
	var le *llm.Error
	switch {
	case err == nil:
		t.Ok = true
		reply := resp.Text
		if utf8.RuneCountInString(reply) > maxTestReply {
			reply = string([]rune(reply)[:maxTestReply]) + "…"
		}
		t.Reply = &reply
	case errors.As(err, &le):
		t.ErrorCode, t.Message = &le.Code, &le.Message
		if le.StatusCode != 0 {
			t.StatusCode = &le.StatusCode
		}
	default:
		return nil, err
	}
	return r, nil
}

// GetDefaultLlmConfig shows the installation's global default model configuration, if any.
func (a *API) GetDefaultLlmConfig(ctx context.Context, _ gen.GetDefaultLlmConfigRequestObject) (gen.GetDefaultLlmConfigResponseObject, error) {
	if _, err := caller(ctx); err != nil {
		return nil, err
	}
	c, _, err := a.groups.ResolvedLLMConfig(ctx, nil)
	if err != nil {
		return nil, err
	}
	return gen.GetDefaultLlmConfig200JSONResponse(resolvedLlmConfig(c, false)), nil
}

// GetAgentLlmConfig shows the model configuration the agent's tasks run with, if any.
func (a *API) GetAgentLlmConfig(ctx context.Context, req gen.GetAgentLlmConfigRequestObject) (gen.GetAgentLlmConfigResponseObject, error) {
	ag, err := a.visibleAgent(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	c, fromGroup, err := a.groups.ResolvedLLMConfig(ctx, &ag.PrincipalID)
	if err != nil {
		return nil, err
	}
	return gen.GetAgentLlmConfig200JSONResponse(resolvedLlmConfig(c, fromGroup)), nil
}

func resolvedLlmConfig(c *store.LLMConfig, fromGroup bool) gen.ResolvedLlmConfigResponse {
	var r gen.ResolvedLlmConfigResponse
	if c == nil {
		return r
	}
	v := toLlmConfig(c)
	src := gen.ResolvedLlmConfigResponseDataSourceGlobal
	if fromGroup {
		src = gen.ResolvedLlmConfigResponseDataSourceGroup
	}
	r.Data.LlmConfig, r.Data.Source = &v, &src
	return r
}
