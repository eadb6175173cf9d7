package api

import (
	"context"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

type agentKeyCtx struct{}

// WithAgentKey returns ctx carrying the per-agent API key the gate authenticated.
func WithAgentKey(ctx context.Context, k *store.AgentAPIKey) context.Context {
	return context.WithValue(ctx, agentKeyCtx{}, k)
}

// agentKey returns the key the gate authenticated for a per-agent API operation:
// ErrUnauthenticated when there is none (the gate never lets such a request through).
// AgentKeyFrom returns the per-agent API key the gate authenticated, or nil.
func AgentKeyFrom(ctx context.Context) *store.AgentAPIKey {
	k, _ := ctx.Value(agentKeyCtx{}).(*store.AgentAPIKey)
	return k
}

func agentKey(ctx context.Context) (*store.AgentAPIKey, error) {
	if k, ok := ctx.Value(agentKeyCtx{}).(*store.AgentAPIKey); ok && k != nil {
		return k, nil
	}
	return nil, svcerr.New(svcerr.ErrUnauthenticated, "a valid API key is required")
}
