package task_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestCheckAnswers(t *testing.T) {
	t.Parallel()
	qs := []store.Question{
		{Header: "Format", Options: []string{"PDF", "MD"}},
		{Header: "Extras", Options: []string{"TOC", "Index"}, Multiple: true, AllowFreeText: true},
	}
	text := func(s string) *string { return &s }
	fmtPDF := store.QuestionAnswer{Header: "Format", Selections: []string{"PDF"}}
	tests := []struct {
		name string
		in   []store.QuestionAnswer
		ok   bool
	}{
		{"all answered", []store.QuestionAnswer{fmtPDF, {Header: "Extras", Selections: []string{"TOC", "Index"}}}, true},
		{"free text only", []store.QuestionAnswer{fmtPDF, {Header: "Extras", Selections: []string{}, FreeText: text("cover")}}, true},
		{"unknown header", []store.QuestionAnswer{fmtPDF, {Header: "Nope", Selections: []string{"TOC"}}}, false},
		{"unknown selection", []store.QuestionAnswer{{Header: "Format", Selections: []string{"pdf"}}, {Header: "Extras", Selections: []string{"TOC"}}}, false},
		{"missing question", []store.QuestionAnswer{fmtPDF}, false},
		{"two on single", []store.QuestionAnswer{{Header: "Format", Selections: []string{"PDF", "MD"}}, {Header: "Extras", Selections: []string{"TOC"}}}, false},
		{"repeated selection", []store.QuestionAnswer{fmtPDF, {Header: "Extras", Selections: []string{"TOC", "TOC"}}}, false},
		{"free text not allowed", []store.QuestionAnswer{{Header: "Format", Selections: []string{"PDF"}, FreeText: text("x")}, {Header: "Extras", Selections: []string{"TOC"}}}, false},
		{"blank free text", []store.QuestionAnswer{fmtPDF, {Header: "Extras", Selections: []string{}, FreeText: text(" ")}}, false},
		{"header twice", []store.QuestionAnswer{fmtPDF, fmtPDF, {Header: "Extras", Selections: []string{"TOC"}}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := task.CheckAnswers(qs, tc.in)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, svcerr.ErrInvalid)) {
				t.Fatalf("CheckAnswers = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestParseID(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "0", "-1", "01", "x", "1.0", "99999999999999999999"} {
		if _, err := task.ParseID(s); !errors.Is(err, svcerr.ErrNotFound) {
			t.Errorf("ParseID(%q) = %v, want ErrNotFound", s, err)
		}
	}
	if id, err := task.ParseID("42"); err != nil || id != 42 {
		t.Fatalf("ParseID(42) = %d, %v", id, err)
	}
}

func TestScheduleRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	st := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, st)
	minutes, retries := 5, 1
	a := storetest.Agent(t, st, u.PrincipalID, func(f *store.AgentFields) { f.RetryAfterMinutes, f.MaxRetries = &minutes, &retries })
	svc := task.New(st, nil)
	fail := func(code string) int64 { return storetest.FailedTask(t, st, a, u.ID, code) }
	permanent := fail(taskstate.CodeAuthError)
	if ok, err := svc.ScheduleRetry(ctx, permanent); ok || err != nil {
		t.Fatalf("permanent error scheduled: %v %v", ok, err)
	}
	transient := fail(taskstate.CodeRateLimit)
	if ok, err := svc.ScheduleRetry(ctx, transient); !ok || err != nil {
		t.Fatalf("transient error not scheduled: %v %v", ok, err)
	}
	tk, _ := st.Task(ctx, transient)
	if tk.NextRetryAt == nil || !tk.NextRetryAt.Equal(clock.Now().Add(5*time.Minute)) {
		t.Fatalf("next_retry_at = %v", tk.NextRetryAt)
	}
	// The retry runs (retry_count 1) and fails again: max_retries 1 is spent.
	clock.Advance(5 * time.Minute)
	if got, _ := st.ClaimQueued(ctx, "w", time.Minute, 1); len(got) != 1 || got[0].RetryCount != 1 {
		t.Fatalf("due retry not claimed: %+v", got)
	}
	if _, err := st.FinishStep(ctx, transient, "w", store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeOrphaned, Message: "m"}}); err != nil {
		t.Fatal(err)
	}
	if ok, err := svc.ScheduleRetry(ctx, transient); ok || err != nil {
		t.Fatalf("retry beyond max_retries scheduled: %v %v", ok, err)
	}
	if _, err := svc.ScheduleRetry(ctx, 999); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}

// TestScheduleMissedRetries: a failure whose status event promised an automatic retry, left
// unscheduled because its process stopped before ScheduleRetry, is scheduled by housekeeping
// once the failure is a minute old (not before: the writing process schedules it itself), once;
// a failure that promised nothing (no retries left then) is not retried when its agent later
// allows more, nor is a permanent error.
func TestScheduleMissedRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	st := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, st)
	minutes, none := 5, 0
	a := storetest.Agent(t, st, u.PrincipalID, func(f *store.AgentFields) { f.RetryAfterMinutes, f.MaxRetries = &minutes, &none })
	svc := task.New(st, nil)
	// Each failure is left as a process that stopped before ScheduleRetry leaves it.
	fail := func(code string) int64 { return storetest.FailedTask(t, st, a, u.ID, code) }
	unpromised := fail(taskstate.CodeGatewayError) // max_retries 0: its event says no retry
	retries := 2
	if _, err := st.UpdateAgent(ctx, a.ID, u.ID, store.AgentFields{MaxRetries: &retries}, nil); err != nil {
		t.Fatal(err)
	}
	promised := fail(taskstate.CodeGatewayError)
	permanent := fail(taskstate.CodeAuthError)

	if got, err := svc.ScheduleMissedRetries(ctx, clock.Now()); err != nil || len(got) != 0 {
		t.Fatalf("within the grace: scheduled %v, %v", got, err)
	}
	clock.Advance(time.Minute + time.Second)
	if got, err := svc.ScheduleMissedRetries(ctx, clock.Now()); err != nil || len(got) != 1 || got[0] != promised {
		t.Fatalf("after the grace: scheduled %v, %v; want [%d]", got, err, promised)
	}
	tk, _ := st.Task(ctx, promised)
	if tk.NextRetryAt == nil || !tk.NextRetryAt.Equal(clock.Now().Add(5*time.Minute)) {
		t.Fatalf("next_retry_at = %v", tk.NextRetryAt)
	}
	for _, id := range []int64{unpromised, permanent} {
		if tk, _ := st.Task(ctx, id); tk.NextRetryAt != nil {
			t.Fatalf("task %d got a retry: %v", id, tk.NextRetryAt)
		}
	}
	if got, err := svc.ScheduleMissedRetries(ctx, clock.Now()); err != nil || len(got) != 0 {
		t.Fatalf("second pass: scheduled %v, %v", got, err)
	}
	// The scheduled retry is announced on the task's event stream (a status event with next_retry_at).
	evs, err := st.TaskEvents(ctx, promised, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Status == nil || last.Status.NextRetryAt == nil {
		t.Fatalf("last event = %+v", last)
	}
}

// TestScheduleMissedRetriesPages: more failures that promised nothing than one page of
// candidates (100) do not hide a promised one behind them, and a promise older than a day is
// left (the task stays FAILED).
func TestScheduleMissedRetriesPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	st := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, st)
	none, retries := 0, 1
	a := storetest.Agent(t, st, u.PrincipalID, func(f *store.AgentFields) { f.MaxRetries = &retries })
	setMax := func(n *int) {
		t.Helper()
		if _, err := st.UpdateAgent(ctx, a.ID, u.ID, store.AgentFields{MaxRetries: n}, nil); err != nil {
			t.Fatal(err)
		}
	}
	old := storetest.FailedTask(t, st, a, u.ID, taskstate.CodeServerError) // promised, a day ago
	clock.Advance(25 * time.Hour)
	setMax(&none)
	for range 101 {
		storetest.FailedTask(t, st, a, u.ID, taskstate.CodeServerError) // promised nothing
	}
	setMax(&retries)
	promised := storetest.FailedTask(t, st, a, u.ID, taskstate.CodeServerError)
	clock.Advance(2 * time.Minute)
	svc := task.New(st, nil)
	if got, err := svc.ScheduleMissedRetries(ctx, clock.Now()); err != nil || len(got) != 1 || got[0] != promised {
		t.Fatalf("scheduled %v, %v; want [%d] (not the day-old %d)", got, err, promised, old)
	}
}

// TestTransitionsAreLogged: every status change writes one "task transition" line at info
// naming the task, the action and both statuses (the store's writer logs it once the change
// committed); a refused action writes none.
func TestTransitionsAreLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log, logs := testkit.NewLogger()
	st := storetest.Twin(t, storetest.New(t), func(o *store.Options) { o.Logger = log })
	u := storetest.User(t, st)
	a := storetest.Agent(t, st, u.PrincipalID)
	svc := task.New(st, nil)
	id := func(v *task.View) string { return strconv.FormatInt(v.Task.ID, 10) }

	v, err := svc.Create(ctx, u, task.CreateInput{AgentID: a.ID, Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Abort(ctx, u, id(v)); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Retry(ctx, u, id(v)); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("retry of an aborted task = %v", err) // refused: no line
	}
	if _, err := svc.Continue(ctx, u, id(v), task.ContinueInput{Prompt: "again"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimQueued(ctx, "w", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishStep(ctx, v.Task.ID, "w", store.StepOutcome{Status: taskstate.Failed,
		Error: &store.TaskError{Code: taskstate.CodeAuthError, Message: "m"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Retry(ctx, u, id(v)); err != nil {
		t.Fatal(err)
	}

	want := []map[string]any{
		{"action": "create", "from": "", "to": taskstate.Queued},
		{"action": "abort", "from": taskstate.Queued, "to": taskstate.Aborted},
		{"action": "continue", "from": taskstate.Aborted, "to": taskstate.Queued},
		{"action": "claim", "from": taskstate.Queued, "to": taskstate.Running, "worker": "w"},
		{"action": "step", "from": taskstate.Running, "to": taskstate.Failed, "error_code": taskstate.CodeAuthError},
		{"action": "retry", "from": taskstate.Failed, "to": taskstate.Queued},
	}
	got := logs.Lines(t, "task transition")
	if len(got) != len(want) {
		t.Fatalf("logged %d transitions, want %d:\n%s", len(got), len(want), logs)
	}
	for i, w := range want {
		if got[i]["level"] != "INFO" || got[i]["task_id"] != float64(v.Task.ID) {
			t.Errorf("line %d = %v", i, got[i])
		}
		for k, val := range w {
			if got[i][k] != val {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, got[i][k], val, got[i])
			}
		}
	}
}

// TestScheduleRetryAfter: a provider's Retry-After holds the automatic retry back at least that
// long, cut to the bound (llm_retry_after_max_seconds); the agent's retry_after_minutes wins
// when longer (issue 23, item 5: a 429 with Retry-After: 30 was retried at once).
func TestScheduleRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	st := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, st)
	agent := func(minutes int) *store.Agent {
		retries := 3
		return storetest.Agent(t, st, u.PrincipalID, func(f *store.AgentFields) { f.RetryAfterMinutes, f.MaxRetries = &minutes, &retries })
	}
	bound := 60 * time.Second
	svc := task.New(st, nil).WithRetryAfterMax(func() time.Duration { return bound })
	for _, tc := range []struct {
		name      string
		minutes   int
		bound     time.Duration
		asked     time.Duration
		wantAfter time.Duration
	}{
		{"provider's wait", 0, time.Minute, 30 * time.Second, 30 * time.Second},
		{"bounded", 0, 10 * time.Second, 30 * time.Second, 10 * time.Second},
		{"bound zero ignores it", 0, 0, 30 * time.Second, 0},
		{"agent's longer wait", 5, time.Minute, 30 * time.Second, 5 * time.Minute},
		{"no wait asked", 0, time.Minute, 0, 0},
	} {
		bound = tc.bound
		id := storetest.FailedTask(t, st, agent(tc.minutes), u.ID, taskstate.CodeRateLimit)
		if ok, err := svc.ScheduleRetryAfter(ctx, id, tc.asked); !ok || err != nil {
			t.Fatalf("%s: not scheduled: %v %v", tc.name, ok, err)
		}
		tk, _ := st.Task(ctx, id)
		if tk.NextRetryAt == nil || !tk.NextRetryAt.Equal(clock.Now().Add(tc.wantAfter)) {
			t.Errorf("%s: next_retry_at = %v, want now+%s", tc.name, tk.NextRetryAt, tc.wantAfter)
		}
	}
}
