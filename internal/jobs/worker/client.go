// Client-worker mode (SVC_WORKER_RUNTIME_MODE=client): the browser of a task's owner drives it
// one step per POST /tasks/{id}/tick, and any signed-in browser runs housekeeping (reaping tasks
// whose driving browser went away, dispatching due scheduled runs) through POST
// /worker/housekeeping. In server mode both answer 404: the Daemon does this work.

package worker

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/ratelimit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Default per-user rate limits (docs/decisions.md).
const (
	TicksPerMinute        = 120
	HousekeepingPerMinute = 2
)

// Loop runs the steps of tasks: *agentloop.Loop satisfies it.
type Loop interface {
	// Tick runs one step of a RUNNING task whose lease workerID holds.
	Tick(ctx context.Context, taskID int64, workerID string) (*store.Task, error)
}

// ClientOptions are what the service needs. Zero limits mean the defaults; a nil Clock is time.Now
// (it drives the rate limiters; leases follow the store's own clock, which the server gives the
// same time source).
type ClientOptions struct {
	Store  *store.Store
	Tasks  *task.Service
	Config func() *config.Config
	Loop   Loop
	Clock  func() time.Time
	// Chores is the housekeeping pass, reaping with store.ReapDisconnected.
	Chores *Chores

	TicksPerMinute, HousekeepingPerMinute int
}

// Client applies the client-worker rules.
type Client struct {
	store        *store.Store
	tasks        *task.Service
	cfg          func() *config.Config
	loop         Loop
	housekeeping *Chores
	ticks        ratelimit.Checker
	chores       ratelimit.Checker
	mu           sync.Mutex
	running      map[int64]bool // tasks with a tick in flight in this process
}

// New returns the service.
func NewClient(o ClientOptions) *Client {
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
	return &Client{store: o.Store, tasks: o.Tasks, cfg: o.Config, loop: o.Loop, housekeeping: o.Chores,
		// Shared through the database: the budgets hold across every API process.
		ticks:   ratelimit.NewShared(o.Store, "tick", tpm, time.Minute, o.Clock),
		chores:  ratelimit.NewShared(o.Store, "housekeeping", hpm, time.Minute, o.Clock),
		running: map[int64]bool{}}
}

// WorkerID is the lease holder of ticks driven by user u's browsers.
func WorkerID(userID int64) string { return "tick:user:" + strconv.FormatInt(userID, 10) }

// clientMode refuses with 404 unless the worker runtime mode is client (read per request).
func (s *Client) clientMode(what string) error {
	if s.cfg().WorkerRuntimeMode != "client" {
		return svcerr.New(svcerr.ErrNotFound, "%s exists in client-worker mode only", what)
	}
	return nil
}

func allow(ctx context.Context, l ratelimit.Checker, key string) error {
	ok, wait, err := l.Check(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
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
func (s *Client) Tick(ctx context.Context, u *store.User, id string) (*task.View, error) {
	if err := s.clientMode("tick"); err != nil {
		return nil, err
	}
	if err := allow(ctx, s.ticks, strconv.FormatInt(u.ID, 10)); err != nil {
		return nil, err
	}
	// The task service decides who may drive the task (its owner; anyone else's, unknown or
	// malformed answers ErrNotFound without revealing which).
	t, err := s.tasks.Get(ctx, u, id)
	if err != nil {
		return nil, err
	}
	tid := t.ID
	// Two tabs of one user share the worker id, so the lease alone does not keep their ticks
	// apart; within this process a second tick of the same task is refused while one runs.
	if !s.begin(tid) {
		return nil, svcerr.New(svcerr.ErrInvalidState, "the task is being ticked by another caller")
	}
	defer s.end(tid)
	worker := WorkerID(u.ID)
	lease := time.Duration(s.cfg().TickLeaseSeconds) * time.Second
	if _, err := s.store.AcquireTick(ctx, tid, worker, lease); err != nil {
		return nil, err
	}
	// The step runs to its end even when the browser gives up: its writes are guarded by the lease.
	out, err := s.loop.Tick(context.WithoutCancel(ctx), tid, worker)
	if err != nil {
		return nil, err
	}
	return s.tasks.ViewOf(ctx, out)
}

func (s *Client) begin(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[id] {
		return false
	}
	s.running[id] = true
	return true
}

func (s *Client) end(id int64) {
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
}

// Housekeeping runs one pass of the client-mode chores (reaping tasks whose browser went away:
// FAILED with WORKER_DISCONNECTED; dispatching due scheduled runs; sweeping expired media) for
// any signed-in user. Errors: ErrNotFound (server mode), ErrRateLimited (beyond the per-user
// housekeeping rate), and those of Chores.Run.
func (s *Client) Housekeeping(ctx context.Context, u *store.User) (*Housekeeping, error) {
	if err := s.clientMode("housekeeping"); err != nil {
		return nil, err
	}
	if err := allow(ctx, s.chores, strconv.FormatInt(u.ID, 10)); err != nil {
		return nil, err
	}
	h, err := s.housekeeping.Run(ctx)
	if err != nil {
		return nil, err
	}
	return &h, nil
}
