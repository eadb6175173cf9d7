// Package tick holds the rules of client-worker mode (SVC_WORKER_RUNTIME_MODE=client): the
// browser of a task's owner drives it one step per POST /tasks/{id}/tick, and any signed-in
// browser runs housekeeping (reaping tasks whose driving browser went away, dispatching due
// scheduled runs) through POST /worker/housekeeping. In server mode both answer 404: the worker
// daemon does this work.
package tick

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/agentsvc/svc/config"
	"github.com/agentsvc/svc/ratelimit"
	"github.com/agentsvc/svc/schedule"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/svcerr"
	"github.com/agentsvc/svc/task"
)

// Default per-user rate limits (docs/decisions.md).
const (
	TicksPerMinute        = 120
	HousekeepingPerMinute = 2
)

// TickFunc runs one step of a RUNNING task whose lease workerID holds (agentloop.Loop.Tick).
type TickFunc func(ctx context.Context, taskID int64, workerID string) (*store.Task, error)

// Options are what the service needs. Zero limits mean the defaults; a nil Clock is time.Now
// (it drives the rate limiters and housekeeping's "now"; leases follow the store's own clock,
// which the server gives the same time source).
type Options struct {
	Store  *store.Store
	Tasks  *task.Service
	Config func() *config.Config
	Tick   TickFunc
	Clock  func() time.Time
	// SweepMedia removes expired media uploads during housekeeping (media.Service.Sweep);
	// nil: no sweep.
	SweepMedia func(ctx context.Context) (int, error)

	TicksPerMinute, HousekeepingPerMinute int
}

// Service applies the client-worker rules.
type Service struct {
	store   *store.Store
	tasks   *task.Service
	cfg     func() *config.Config
	tick    TickFunc
	sweep   func(ctx context.Context) (int, error)
	now     func() time.Time
	ticks   *ratelimit.Limiter
	chores  *ratelimit.Limiter
	mu      sync.Mutex
	running map[int64]bool // tasks with a tick in flight in this process
}

// New returns the service.
func New(o Options) *Service {
	tpm, hpm := o.TicksPerMinute, o.HousekeepingPerMinute
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if tpm <= 0 {
		tpm = TicksPerMinute
	}
	if hpm <= 0 {
		hpm = HousekeepingPerMinute
	}
	return &Service{store: o.Store, tasks: o.Tasks, cfg: o.Config, tick: o.Tick, sweep: o.SweepMedia, now: o.Clock,
		ticks:   ratelimit.New(tpm, time.Minute, o.Clock),
		chores:  ratelimit.New(hpm, time.Minute, o.Clock),
		running: map[int64]bool{}}
}

// WorkerID is the lease holder of ticks driven by user u's browsers.
func WorkerID(userID int64) string { return "tick:user:" + strconv.FormatInt(userID, 10) }

// clientMode refuses with 404 unless the worker runtime mode is client (read per request).
func (s *Service) clientMode(what string) error {
	if s.cfg().WorkerRuntimeMode != "client" {
		return svcerr.New(svcerr.ErrNotFound, "%s exists in client-worker mode only", what)
	}
	return nil
}

func allow(l *ratelimit.Limiter, key string) error {
	if ok, wait := l.Allow(key); !ok {
		return svcerr.RateLimited(wait, "too many requests; retry later")
	}
	return nil
}

// Tick runs one step (one model turn and its tool calls) of task id for its owner u under a
// lease of tick_lease_seconds held by WorkerID(u.ID), and returns the task as the step left it.
// Errors: ErrNotFound (server mode; unknown, malformed or someone else's task), ErrRateLimited
// (beyond the per-user tick rate; carries the wait), ErrInvalidState (terminal or quiescent
// task, or another caller ticking it: another worker's live lease, or a tick of the same task
// still in flight in this process), and infrastructure failures of the step.
func (s *Service) Tick(ctx context.Context, u *store.User, id string) (*task.View, error) {
	if err := s.clientMode("tick"); err != nil {
		return nil, err
	}
	if err := allow(s.ticks, strconv.FormatInt(u.ID, 10)); err != nil {
		return nil, err
	}
	tid, err := task.ParseID(id)
	if err != nil {
		return nil, err
	}
	t, err := s.store.Task(ctx, tid)
	if err != nil {
		return nil, err
	}
	if t.UserID != u.ID {
		return nil, svcerr.New(svcerr.ErrNotFound, "task not found")
	}
	// Two tabs of one user share the worker id, so the lease alone does not keep their ticks
	// apart; within this process a second tick of the same task is refused while one runs.
	if !s.begin(tid) {
		return nil, svcerr.New(svcerr.ErrInvalidState, "the task is being ticked by another caller")
	}
	defer s.end(tid)
	if s.tick == nil {
		return nil, errors.New("tick: no agent loop configured")
	}
	worker := WorkerID(u.ID)
	lease := time.Duration(s.cfg().TickLeaseSeconds) * time.Second
	if _, err := s.store.AcquireTick(ctx, tid, worker, lease); err != nil {
		return nil, err
	}
	// The step runs to its end even when the browser gives up: its writes are guarded by the lease.
	out, err := s.tick(context.WithoutCancel(ctx), tid, worker)
	if err != nil {
		return nil, err
	}
	return s.tasks.ViewOf(ctx, out)
}

func (s *Service) begin(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[id] {
		return false
	}
	s.running[id] = true
	return true
}

func (s *Service) end(id int64) {
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
}

// Housekeeping is what one pass did.
type Housekeeping struct {
	OrphansReaped           int
	ScheduledRunsDispatched int
}

// Housekeeping reaps RUNNING tasks whose lease expired (their browser went away: FAILED with
// WORKER_DISCONNECTED, then the agent's automatic retry is scheduled when it applies) and
// dispatches due scheduled runs (tasks owned by each run's creator). Any signed-in user.
// Errors: ErrNotFound (server mode), ErrRateLimited (beyond the per-user housekeeping rate),
// database failures.
func (s *Service) Housekeeping(ctx context.Context, u *store.User) (*Housekeeping, error) {
	if err := s.clientMode("housekeeping"); err != nil {
		return nil, err
	}
	if err := allow(s.chores, strconv.FormatInt(u.ID, 10)); err != nil {
		return nil, err
	}
	ids, err := s.store.ReapDisconnected(ctx, s.now())
	if err != nil {
		return nil, err
	}
	var first error
	for _, id := range ids {
		if err := s.tasks.Reaped(ctx, id); err != nil && !errors.Is(err, svcerr.ErrNotFound) && first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	n, err := schedule.New(s.store).DispatchDue(ctx, s.now())
	if err != nil {
		return nil, err
	}
	if s.sweep != nil {
		if _, err := s.sweep(ctx); err != nil {
			return nil, err
		}
	}
	return &Housekeeping{OrphansReaped: len(ids), ScheduledRunsDispatched: n}, nil
}
