package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/domain/schedule"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/jobs/worker"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestChoresPass: reaping uses the injected clock's now (a live lease stays), a reaped task
// fails with the reaper's code and is followed like a step's (Changed), and a failing reaper does not keep the due scheduled run from
// being dispatched.
func TestChoresPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	tk := storetest.Task(t, s, a, u.ID)
	if got, err := s.ClaimQueued(ctx, "gone", time.Minute, 1); err != nil || len(got) != 1 {
		t.Fatalf("ClaimQueued = %+v, %v", got, err)
	}
	var changed []int64
	chores := &worker.Chores{Reap: s.ReapDisconnected, Tasks: task.New(s, nil), Schedules: schedule.New(s),
		Media: media.New(s, t.TempDir(), clock.Now), Clock: clock.Now,
		Changed: func(_ context.Context, id int64) { changed = append(changed, id) }}
	if h, err := chores.Run(ctx); err != nil || h != (worker.Housekeeping{}) {
		t.Fatalf("pass within the lease = %+v, %v", h, err)
	}
	clock.Advance(time.Minute + time.Second)
	if h, err := chores.Run(ctx); err != nil || h.OrphansReaped != 1 {
		t.Fatalf("pass after the lease = %+v, %v", h, err)
	}
	if got, err := s.Task(ctx, tk.ID); err != nil || got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != taskstate.CodeWorkerDisconnected {
		t.Fatalf("reaped task = %+v, %v", got, err)
	}
	if len(changed) != 1 || changed[0] != tk.ID {
		t.Fatalf("Changed was told %v, want the reaped task (its event, callback and mail follow)", changed)
	}

	prompt, due := "daily digest", clock.Now()
	if _, err := s.CreateScheduledRun(ctx, a.ID, u.ID, store.ScheduledRunFields{Name: "digest", Prompt: &prompt, RunAt: &due,
		Timezone: "UTC", IsActive: true, NextRunAt: &due}, func(*store.Agent, *store.PromptTemplate) error { return nil }); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("database gone")
	chores.Reap = func(context.Context, time.Time) (store.Reaped, error) { return store.Reaped{}, broken }
	if h, err := chores.Run(ctx); !errors.Is(err, broken) || h.ScheduledRunsDispatched != 1 {
		t.Fatalf("pass with a failing reaper = %+v, %v; want the run dispatched and the error", h, err)
	}
}

// TestChoresScheduleMissedRetries: a pass schedules the automatic retry a stopped process
// promised but did not schedule (task.Service.ScheduleMissedRetries) and follows the task
// (Changed), once.
func TestChoresScheduleMissedRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	retries := 1
	a := storetest.Agent(t, s, u.PrincipalID, func(f *store.AgentFields) { f.MaxRetries = &retries })
	id := storetest.FailedTask(t, s, a, u.ID, taskstate.CodeRateLimit)
	var changed []int64
	chores := &worker.Chores{Tasks: task.New(s, nil), Schedules: schedule.New(s), Media: media.New(s, t.TempDir(), clock.Now),
		Clock: clock.Now, Changed: func(_ context.Context, id int64) { changed = append(changed, id) }}
	clock.Advance(2 * time.Minute)
	for range 2 {
		if _, err := chores.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Task(ctx, id); err != nil || got.NextRetryAt == nil {
		t.Fatalf("task = %+v, %v; want its retry scheduled", got, err)
	}
	if len(changed) != 1 || changed[0] != id {
		t.Fatalf("Changed was told %v, want the task once", changed)
	}
}
