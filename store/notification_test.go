package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestNotificationsFollowTransitions: a transition creates its notification in its own
// transaction and hands it on only after the commit; a refused transition (a lost lease)
// creates none; a reaped task past its recoveries reports task_orphaned, a scheduled retry
// task_retry_queued, a completed scheduled run scheduled_run_completed; sub-agent tasks notify
// nobody.
func TestNotificationsFollowTransitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))
	s := storetest.NewWithClock(t, clock.Now)
	var mu sync.Mutex
	var hooked []store.Notification
	s.OnNotifications(func(_ context.Context, ns []store.Notification) {
		mu.Lock()
		defer mu.Unlock()
		hooked = append(hooked, ns...)
	})
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	kinds := func() []string {
		ns, err := s.Notifications(ctx, store.NotificationQuery{UserID: u.ID, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for i := len(ns) - 1; i >= 0; i-- { // oldest first
			out = append(out, ns[i].Kind)
		}
		return out
	}
	claim := func() int64 {
		t.Helper()
		got, err := s.ClaimQueued(ctx, "w", time.Minute, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %v %v", got, err)
		}
		return got[0].ID
	}

	tk := storetest.Task(t, s, a, u.ID)
	claim()
	if _, err := s.FinishStep(ctx, tk.ID, "someone-else", store.StepOutcome{Status: taskstate.Completed}); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("finish with a lost lease = %v", err)
	}
	if got := kinds(); len(got) != 0 || len(hooked) != 0 {
		t.Fatalf("a refused transition notified: %v", got)
	}
	if _, err := s.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.Running, Steps: 1}); err != nil {
		t.Fatal(err)
	}
	answer := "done"
	if _, err := s.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.Completed, Answer: &answer}); err != nil {
		t.Fatal(err)
	}
	if got := kinds(); len(got) != 1 || got[0] != store.NotifyTaskCompleted || len(hooked) != 1 || hooked[0].UserID != u.ID {
		t.Fatalf("after completion: %v, hooked %+v", got, hooked)
	}

	// Reaped past its recoveries: orphaned; then the automatic retry is scheduled.
	orphan := storetest.Task(t, s, a, u.ID)
	for range store.MaxRecoveries + 1 {
		claim()
		clock.Advance(2 * time.Minute)
		if _, err := s.ReapStale(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Second) // notifications of one instant have no order among themselves
	if ok, err := s.ScheduleTaskRetry(ctx, orphan.ID, time.Minute, 3); err != nil || !ok {
		t.Fatalf("schedule retry: %v %v", ok, err)
	}
	if got := kinds(); len(got) != 3 || got[1] != store.NotifyTaskOrphaned || got[2] != store.NotifyTaskRetryQueued {
		t.Fatalf("after the reaper and the retry: %v", got)
	}

	// A scheduled run's task; a sub-agent task notifies nobody.
	clock.Advance(time.Second)
	run := storetest.Task(t, s, a, u.ID, func(nt *store.NewTask) { nt.Data = map[string]any{"scheduled_run_id": 7} })
	claim()
	if _, err := s.FinishStep(ctx, run.ID, "w", store.StepOutcome{Status: taskstate.Completed, Answer: &answer}); err != nil {
		t.Fatal(err)
	}
	parent := run.ID
	kid := storetest.Task(t, s, a, u.ID, func(nt *store.NewTask) { nt.ParentTaskID = &parent })
	claim()
	if _, err := s.FinishStep(ctx, kid.ID, "w", store.StepOutcome{Status: taskstate.Completed, Answer: &answer}); err != nil {
		t.Fatal(err)
	}
	if got := kinds(); len(got) != 4 || got[3] != store.NotifyScheduledRunCompleted {
		t.Fatalf("after the scheduled run and the sub-agent: %v", got)
	}
	if n, err := s.UnreadNotifications(ctx, u.ID); err != nil || n != 4 {
		t.Fatalf("unread = %d, %v", n, err)
	}
	// Retention: read ones older than the cutoff go.
	if n, err := s.MarkAllNotificationsRead(ctx, u.ID); err != nil || n != 4 {
		t.Fatalf("read all = %d, %v", n, err)
	}
	clock.Advance(time.Hour)
	if n, err := s.DeleteReadNotificationsBefore(ctx, clock.Now()); err != nil || n != 4 {
		t.Fatalf("retention removed %d, %v", n, err)
	}
}

// TestScheduledRunMailInTransition: the mail of a finished scheduled run is queued in the
// transaction of the transition (a refused transition queues none), not for a failure whose
// automatic retry is to come, and also for a task the reaper fails; the dispatcher is woken
// after the commit.
func TestScheduledRunMailInTransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))
	s := storetest.NewWithClock(t, clock.Now)
	var outcomes []store.ScheduledRunOutcome
	woken := 0
	s.OnScheduledRunFinished(func(o store.ScheduledRunOutcome) (store.NewMail, bool) {
		outcomes = append(outcomes, o)
		return store.NewMail{To: o.To, Subject: "run " + o.RunName, Text: o.Detail + "\n", Kind: store.MailKindScheduledRun}, true
	})
	s.OnMailQueued(func() { woken++ })
	u := storetest.User(t, s)
	retries := 1
	a := storetest.Agent(t, s, u.PrincipalID, func(f *store.AgentFields) { f.MaxRetries = &retries })
	run, err := s.CreateScheduledRun(ctx, a.ID, u.ID, store.ScheduledRunFields{Name: "Digest", Prompt: ptrTo("Digest"),
		RunAt: ptrTo(clock.Now()), Timezone: "UTC", IsActive: true}, func(*store.Agent, *store.PromptTemplate) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	scheduled := func(nt *store.NewTask) { nt.Data = map[string]any{"scheduled_run_id": run.ID} }
	mails := func() []store.Mail {
		ms, err := s.Mails(ctx, string(u.Email))
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	finish := func(id int64, o store.StepOutcome) {
		t.Helper()
		if got, err := s.ClaimQueued(ctx, "w", time.Minute, 1); err != nil || len(got) != 1 {
			t.Fatalf("claim: %v %v", got, err)
		}
		if _, err := s.FinishStep(ctx, id, "w", o); err != nil {
			t.Fatal(err)
		}
	}
	answer := "All quiet."
	done := storetest.Task(t, s, a, u.ID, scheduled)
	finish(done.ID, store.StepOutcome{Status: taskstate.Completed, Answer: &answer})
	if ms := mails(); len(ms) != 1 || ms[0].Subject != "run Digest" || woken != 1 || outcomes[0].Detail != answer || outcomes[0].Failed {
		t.Fatalf("after a completed run: %+v, woken %d, outcomes %+v", ms, woken, outcomes)
	}
	// A transient failure with a retry to come: no mail yet.
	flaky := storetest.Task(t, s, a, u.ID, scheduled)
	finish(flaky.ID, store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeRateLimit, Message: "slow down"}})
	if ms := mails(); len(ms) != 1 {
		t.Fatalf("a failure with a retry to come was mailed: %+v", ms)
	}
	// A permanent failure: mailed with its code; an ordinary task: never.
	broken := storetest.Task(t, s, a, u.ID, scheduled)
	finish(broken.ID, store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeAuthError, Message: "bad key"}})
	plain := storetest.Task(t, s, a, u.ID)
	finish(plain.ID, store.StepOutcome{Status: taskstate.Completed, Answer: &answer})
	if ms := mails(); len(ms) != 2 || outcomes[1].Detail != "AUTH_ERROR: bad key" || !outcomes[1].Failed {
		t.Fatalf("after a permanent failure and a plain task: %d mails, outcomes %+v", len(ms), outcomes)
	}
	// Reaped past its recoveries after its retry was spent: mailed by the reaper's transaction.
	reaped := storetest.Task(t, s, a, u.ID, func(nt *store.NewTask) { scheduled(nt) })
	storetest.MoveTo(t, s, reaped.ID, taskstate.Failed)
	if _, err := s.TransitionTask(ctx, reaped.ID, store.TaskTransition{Action: taskstate.Retry, To: taskstate.Queued}); err != nil { // retry_count 1
		t.Fatal(err)
	}
	for range store.MaxRecoveries + 1 {
		if got, err := s.ClaimQueued(ctx, "w", time.Minute, 1); err != nil || len(got) != 1 {
			t.Fatalf("claim: %v %v", got, err)
		}
		clock.Advance(2 * time.Minute)
		if _, err := s.ReapStale(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if ms := mails(); len(ms) != 3 || !strings.HasPrefix(outcomes[2].Detail, taskstate.CodeOrphaned) {
		t.Fatalf("after the reaper: %d mails, outcomes %+v", len(ms), outcomes)
	}
}

func ptrTo[T any](v T) *T { return &v }
