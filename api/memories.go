package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
)

func toMemory(m *store.Memory) gen.AgentMemory {
	return gen.AgentMemory{Id: m.ID, AgentId: m.AgentID, UserId: m.UserID, Text: m.Text, TaskId: m.TaskID,
		MessageSequence: m.MessageSequence, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

// ListAgentMemories implements listAgentMemories.
func (a *API) ListAgentMemories(ctx context.Context, req gen.ListAgentMemoriesRequestObject) (gen.ListAgentMemoriesResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	ms, total, err := a.memories.List(ctx, id.User, req.Id, deref(req.Params.Q), page, per)
	if err != nil {
		return nil, err
	}
	var out gen.AgentMemoryListResponse
	out.Data.Memories = make([]gen.AgentMemory, len(ms))
	for i := range ms {
		out.Data.Memories[i] = toMemory(&ms[i])
	}
	out.Data.Total = total
	return gen.ListAgentMemories200JSONResponse(out), nil
}

// UpdateAgentMemory implements updateAgentMemory.
func (a *API) UpdateAgentMemory(ctx context.Context, req gen.UpdateAgentMemoryRequestObject) (gen.UpdateAgentMemoryResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	m, err := a.memories.Update(ctx, id.User, req.Id, req.MemoryId, req.Body.Text)
	if err != nil {
		return nil, err
	}
	var out gen.AgentMemoryResponse
	out.Data.Memory = toMemory(m)
	return gen.UpdateAgentMemory200JSONResponse(out), nil
}

// DeleteAgentMemory implements deleteAgentMemory.
func (a *API) DeleteAgentMemory(ctx context.Context, req gen.DeleteAgentMemoryRequestObject) (gen.DeleteAgentMemoryResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.memories.Delete(ctx, id.User, req.Id, req.MemoryId); err != nil {
		return nil, err
	}
	return gen.DeleteAgentMemory200JSONResponse(deleted()), nil
}
