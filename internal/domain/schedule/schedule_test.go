package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/schedule"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestDispatchDue(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := context.Background()
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	now := time.Now().UTC()
	due := now.Add(-time.Minute)
	later := now.Add(time.Hour)
	cron, prompt := "*/5 * * * *", "Go"
	allow := func(*store.Agent, *store.PromptTemplate) error { return nil }
	r1, err := s.CreateScheduledRun(ctx, a.ID, u.ID, store.ScheduledRunFields{Name: "c", Prompt: &prompt, CronExpression: &cron, Timezone: "Europe/Berlin", IsActive: true, NextRunAt: &due}, allow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateScheduledRun(ctx, a.ID, u.ID, store.ScheduledRunFields{Name: "later", Prompt: &prompt, RunAt: &later, Timezone: "UTC", IsActive: true, NextRunAt: &later}, allow); err != nil {
		t.Fatal(err)
	}
	svc := schedule.New(s)
	n, err := svc.DispatchDue(ctx, now)
	if err != nil || n != 1 {
		t.Fatalf("DispatchDue = %d, %v; want 1", n, err)
	}
	if n, err := svc.DispatchDue(ctx, now); err != nil || n != 0 {
		t.Fatalf("second DispatchDue = %d, %v; want 0", n, err)
	}
	r, err := s.ScheduledRun(ctx, a.ID, r1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.LastTaskID == nil || r.NextRunAt == nil || !r.NextRunAt.After(now) || r.NextRunAt.Minute()%5 != 0 {
		t.Fatalf("run after dispatch %+v", r)
	}
	tk, err := s.Task(ctx, *r.LastTaskID)
	if err != nil || tk.UserID != u.ID || tk.Status != taskstate.Queued || tk.Prompt != "Go" || tk.MaxSteps != a.MaxSteps {
		t.Fatalf("task %+v, %v", tk, err)
	}
}
