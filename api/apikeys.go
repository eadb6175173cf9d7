package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
)

func toAgentAPIKey(k *store.AgentAPIKey) gen.AgentApiKey {
	return gen.AgentApiKey{Id: k.KeyID, Name: k.Name, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt}
}

// ListAgentApiKeys lists the metadata of the agent's active keys, newest first (manage role).
func (a *API) ListAgentApiKeys(ctx context.Context, req gen.ListAgentApiKeysRequestObject) (gen.ListAgentApiKeysResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := a.apiKeys.List(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	var r gen.ListAgentApiKeys200JSONResponse
	r.Data.ApiKeys = make([]gen.AgentApiKey, 0, len(keys))
	for i := range keys {
		r.Data.ApiKeys = append(r.Data.ApiKeys, toAgentAPIKey(&keys[i]))
	}
	return r, nil
}

// CreateAgentApiKey mints a key for the agent (manage role); the full key is in this answer only.
func (a *API) CreateAgentApiKey(ctx context.Context, req gen.CreateAgentApiKeyRequestObject) (gen.CreateAgentApiKeyResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	k, full, err := a.apiKeys.Create(ctx, id.User, req.Id, req.Body.Name)
	if err != nil {
		return nil, err
	}
	var r gen.CreateAgentApiKey201JSONResponse
	r.Data = gen.AgentApiKeyWithSecret{Id: k.KeyID, Name: k.Name, Key: full, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt}
	return r, nil
}

// RevokeAgentApiKey revokes a key of the agent (manage role); the same answer whether or not
// the key existed.
func (a *API) RevokeAgentApiKey(ctx context.Context, req gen.RevokeAgentApiKeyRequestObject) (gen.RevokeAgentApiKeyResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.apiKeys.Revoke(ctx, id.User, req.Id, req.KeyId); err != nil {
		return nil, err
	}
	var r gen.RevokeAgentApiKey200JSONResponse
	r.Data.Revoked = true
	r.Data.KeyId = req.KeyId
	return r, nil
}
