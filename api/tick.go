package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
)

// TickTask runs one worker tick of the caller's task (client-worker mode only).
func (a *API) TickTask(ctx context.Context, req gen.TickTaskRequestObject) (gen.TickTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.ticks.Tick(ctx, id.User, req.TaskId)
	if err != nil {
		return nil, err
	}
	return gen.TickTask200JSONResponse(taskResponse(v)), nil
}

// RunWorkerHousekeeping reaps tasks whose browser went away and dispatches due scheduled runs
// (client-worker mode only).
func (a *API) RunWorkerHousekeeping(ctx context.Context, _ gen.RunWorkerHousekeepingRequestObject) (gen.RunWorkerHousekeepingResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	h, err := a.ticks.Housekeeping(ctx, id.User)
	if err != nil {
		return nil, err
	}
	var r gen.RunWorkerHousekeeping200JSONResponse
	r.Data.OrphansReaped, r.Data.ScheduledRunsDispatched = h.OrphansReaped, h.ScheduledRunsDispatched
	return r, nil
}
