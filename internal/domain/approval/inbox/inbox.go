// Package inbox is the approvals inbox (GET /approvals), batch decisions and the approval
// timeout, over the one rule of who may decide (approval.MayDecide).
package inbox

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/approval"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/text"
	"github.com/agentsvc/svc/store"
)

// Store is what the approvals service reads and writes; *store.Store satisfies it.
type Store interface {
	access.Memberships
	Task(ctx context.Context, id int64) (*store.Task, error)
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	PendingApprovals(ctx context.Context, q store.ApprovalQuery) ([]store.PendingApproval, error)
	LastAssistantText(ctx context.Context, taskID int64) (*string, error)
	ExpiredApprovals(ctx context.Context, now time.Time, limit int) ([]store.ExpiringCall, error)
	ExpireToolCalls(ctx context.Context, taskID int64, callIDs []string, abort bool) (*store.Task, error)
}

var _ Store = (*store.Store)(nil)

// Service is the approvals inbox, batch decisions and the approval timeout.
type Service struct {
	store Store
	tasks *task.Service
	log   *slog.Logger
	now   func() time.Time
}

// New returns the service; tasks applies each decision (its Approve checks approval.MayDecide
// again); clock is "now" (nil: time.Now).
func New(st Store, tasks *task.Service, log *slog.Logger, clock func() time.Time) *Service {
	if log == nil {
		log = slog.Default()
	}
	if clock == nil {
		clock = time.Now
	}
	return &Service{store: st, tasks: tasks, log: log, now: clock}
}

// Item is one entry of the inbox.
type Item struct {
	store.PendingApproval
	Task        *store.Task
	Agent       *store.Agent
	Title       string
	LastMessage *string
	Description string // the call's operation description
}

// InboxQuery narrows and pages the inbox.
type InboxQuery struct {
	AgentID   int64
	Tool      string
	OlderThan time.Duration
	// Page starts at 1; PerPage 1..100.
	Page, PerPage int
}

// TitleLen is how much of a task's prompt the inbox shows as its title.
const TitleLen = 200

// Inbox returns one page of what u may decide (approval.MayDecide), oldest first. Errors: the store's.
func (s *Service) Inbox(ctx context.Context, u *store.User, q InboxQuery) ([]Item, error) {
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	sq := store.ApprovalQuery{AgentID: q.AgentID, Tool: q.Tool}
	if q.OlderThan > 0 {
		sq.CreatedBefore = s.now().Add(-q.OlderThan)
	}
	ps, err := s.store.PendingApprovals(ctx, sq)
	if err != nil {
		return nil, err
	}
	if q.Page < 1 {
		q.Page = 1
	}
	skip, out := (q.Page-1)*q.PerPage, []Item{}
	tasks, agents := map[int64]*store.Task{}, map[int64]*store.Agent{}
	for _, p := range ps {
		t, a, err := s.taskAndAgent(ctx, u, p, tasks, agents)
		if err != nil {
			return nil, err
		}
		if t == nil || a == nil || !approval.MayDecide(sc, a, t) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		it := Item{PendingApproval: p, Task: t, Agent: a, Title: text.Clip(t.Prompt, TitleLen)}
		if it.LastMessage, err = s.store.LastAssistantText(ctx, t.ID); err != nil {
			return nil, err
		}
		if p.Call != nil {
			it.Description = s.tasks.Describe(p.Call.ToolClass, p.Call.Operation)
		}
		out = append(out, it)
		if len(out) == q.PerPage {
			break
		}
	}
	return out, nil
}

// taskAndAgent reads (once per id) the task and agent of p; nil, nil when either is gone.
func (s *Service) taskAndAgent(ctx context.Context, u *store.User, p store.PendingApproval, tasks map[int64]*store.Task, agents map[int64]*store.Agent) (*store.Task, *store.Agent, error) {
	t, ok := tasks[p.TaskID]
	if !ok {
		var err error
		if t, err = s.store.Task(ctx, p.TaskID); err != nil && !errors.Is(err, svcerr.ErrNotFound) {
			return nil, nil, err
		}
		tasks[p.TaskID] = t
	}
	if t == nil {
		return nil, nil, nil
	}
	a, ok := agents[t.AgentID]
	if !ok {
		var err error
		if a, err = s.store.Agent(ctx, t.AgentID, u.ID); err != nil && !errors.Is(err, svcerr.ErrNotFound) {
			return nil, nil, err
		}
		agents[t.AgentID] = a
	}
	return t, a, nil
}

// Decision is one decision of a batch.
type Decision struct {
	TaskID int64
	store.ToolDecision
}

// Result is the outcome of one decision of a batch: the task as it is afterwards, or Err.
type Result struct {
	Task *task.View
	Err  error
}

// MaxBatch bounds the decisions of one batch.
const MaxBatch = 100

// DecideBatch applies each decision on its own, as task.Service.Approve would with that one
// decision (approval.MayDecide, the task's state, the call's), and reports each outcome in order. Errors:
// ErrInvalid for an empty or oversized batch; each decision's own error is in its Result.
func (s *Service) DecideBatch(ctx context.Context, u *store.User, ds []Decision) ([]Result, error) {
	if len(ds) == 0 || len(ds) > MaxBatch {
		return nil, svcerr.New(svcerr.ErrInvalid, "decisions must hold 1 to %d entries", MaxBatch)
	}
	out := make([]Result, 0, len(ds))
	for _, d := range ds {
		v, err := s.tasks.Approve(ctx, u, strconv.FormatInt(d.TaskID, 10), []store.ToolDecision{d.ToolDecision})
		out = append(out, Result{Task: v, Err: err})
	}
	return out, nil
}

// ExpireBatch bounds the calls one Expire pass decides.
const ExpireBatch = 100

// Expire decides, as the service, the tool calls whose agent's approval timeout ran out
// (reject with store.ApprovalTimeoutReason, or abort the task), and returns the tasks it
// moved. Several processes may run it at once: each task's calls are expired under the task's
// row lock while still pending, so exactly one of them does (the others get ErrInvalidState,
// skipped). Errors: the store's, other than those lost races.
func (s *Service) Expire(ctx context.Context) ([]int64, error) {
	calls, err := s.store.ExpiredApprovals(ctx, s.now(), ExpireBatch)
	if err != nil {
		return nil, err
	}
	type group struct {
		ids   []string
		abort bool
	}
	byTask, order := map[int64]*group{}, []int64{}
	for _, c := range calls {
		g, ok := byTask[c.TaskID]
		if !ok {
			g = &group{abort: c.Action == store.ApprovalTimeoutAbort}
			byTask[c.TaskID] = g
			order = append(order, c.TaskID)
		}
		g.ids = append(g.ids, c.ProviderCallID)
	}
	var moved []int64
	for _, id := range order {
		g := byTask[id]
		_, err := s.store.ExpireToolCalls(ctx, id, g.ids, g.abort)
		switch {
		case errors.Is(err, svcerr.ErrInvalidState), errors.Is(err, svcerr.ErrNotFound):
			continue // decided, aborted or deleted meanwhile (by a person or another process)
		case err != nil:
			return moved, err
		}
		moved = append(moved, id)
		s.log.InfoContext(ctx, "approval timeout", "task_id", id, "calls", len(g.ids), "abort", g.abort)
	}
	return moved, nil
}
