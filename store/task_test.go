package store_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

type taskFixture struct {
	s     *store.Store
	clock *testkit.Clock
	user  *store.User
	other *store.User
	agent *store.Agent
}

func newTaskFixture(t *testing.T) *taskFixture {
	t.Helper()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	f := &taskFixture{s: s, clock: clock, user: storetest.User(t, s), other: storetest.User(t, s)}
	f.agent = storetest.Agent(t, s, f.user.PrincipalID)
	return f
}

func (f *taskFixture) create(t *testing.T, prompt string) *store.Task {
	t.Helper()
	return storetest.Task(t, f.s, f.agent, f.user.ID, func(nt *store.NewTask) { nt.Prompt, nt.MaxSteps = prompt, 5 })
}

// claimOne creates a task and claims it for worker w.
func (f *taskFixture) claimOne(t *testing.T, w string) *store.Task {
	t.Helper()
	tk := f.create(t, "do it")
	got, err := f.s.ClaimQueued(context.Background(), w, time.Minute, 1)
	if err != nil || len(got) != 1 || got[0].ID != tk.ID {
		t.Fatalf("ClaimQueued = %v, %v; want task %d", got, err, tk.ID)
	}
	return &got[0]
}

func TestCreateTaskAndRead(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.create(t, "Summarise <this> & that")
	if tk.Status != taskstate.Queued || tk.MaxSteps != 5 || tk.Source != store.TaskSourceSession || tk.UserID != f.user.ID ||
		tk.Data == nil || tk.FinishedAt != nil || !tk.CreatedAt.Equal(t0.Truncate(time.Microsecond)) {
		t.Fatalf("created task = %+v", tk)
	}
	got, err := f.s.Task(ctx, tk.ID)
	if err != nil || got.Prompt != "Summarise <this> & that" {
		t.Fatalf("Task = %+v, %v", got, err)
	}
	msgs, err := f.s.Messages(ctx, tk.ID, 0)
	if err != nil || len(msgs) != 1 || msgs[0].Sequence != 1 || msgs[0].Role != store.RoleUser || msgs[0].Text != tk.Prompt {
		t.Fatalf("Messages = %+v, %v", msgs, err)
	}
	_, err = f.s.Task(ctx, tk.ID+100)
	wantErr(t, err, svcerr.ErrNotFound)

	for name, nt := range map[string]store.NewTask{
		"unknown agent": {AgentID: 999, PrincipalID: f.agent.PrincipalID, UserID: f.user.ID, Prompt: "x", MaxSteps: 1},
		"unknown user":  {AgentID: f.agent.ID, PrincipalID: f.agent.PrincipalID, UserID: 999, Prompt: "x", MaxSteps: 1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.s.CreateTask(ctx, nt)
			wantErr(t, err, svcerr.ErrInvalid)
		})
	}
	if n := countRows(t, f.s, "tasks", "1 = 1"); n != 1 {
		t.Fatalf("%d tasks after refused creations, want 1", n)
	}
}

func TestListTasks(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	var ids []int64
	for i := range 5 {
		ids = append(ids, f.create(t, fmt.Sprintf("p%d", i)).ID)
		f.clock.Advance(time.Second)
	}
	mark := f.clock.Now()
	f.clock.Advance(time.Second)
	if _, err := f.s.TransitionTask(ctx, ids[1], store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}); err != nil {
		t.Fatal(err)
	}
	storetest.Task(t, f.s, f.agent, f.other.ID)
	idsOf := func(ts []store.Task) []int64 {
		out := []int64{}
		for _, x := range ts {
			out = append(out, x.ID)
		}
		return out
	}
	tests := []struct {
		name string
		q    store.TaskQuery
		want []int64
	}{
		{"all newest first", store.TaskQuery{UserID: f.user.ID}, []int64{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		{"page 2", store.TaskQuery{UserID: f.user.ID, Page: 2, PerPage: 2}, []int64{ids[2], ids[1]}},
		{"past the end", store.TaskQuery{UserID: f.user.ID, Page: 9, PerPage: 2}, []int64{}},
		{"status", store.TaskQuery{UserID: f.user.ID, Status: taskstate.Aborted}, []int64{ids[1]}},
		{"since", store.TaskQuery{UserID: f.user.ID, Since: &mark}, []int64{ids[1]}},
		{"stranger", store.TaskQuery{UserID: 999}, []int64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.s.ListTasks(ctx, tc.q)
			if err != nil || fmt.Sprint(idsOf(got)) != fmt.Sprint(tc.want) {
				t.Fatalf("ListTasks = %v, %v; want %v", idsOf(got), err, tc.want)
			}
		})
	}
}

func TestDeleteTask(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	running := f.claimOne(t, "w1")
	wantErr(t, f.s.DeleteTask(ctx, running.ID), svcerr.ErrInvalidState)

	parent := f.create(t, "parent")
	child, err := f.s.CreateTask(ctx, store.NewTask{AgentID: f.agent.ID, PrincipalID: f.agent.PrincipalID, UserID: f.user.ID, ParentTaskID: &parent.ID, Prompt: "child", MaxSteps: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.s.DeleteTask(ctx, parent.ID), nil)
	for _, id := range []int64{parent.ID, child.ID} {
		_, err := f.s.Task(ctx, id)
		wantErr(t, err, svcerr.ErrNotFound)
	}
	if n := countRows(t, f.s, "task_messages", "task_id IN (?, ?)", parent.ID, child.ID); n != 0 {
		t.Fatalf("%d messages left", n)
	}
	wantErr(t, f.s.DeleteTask(ctx, parent.ID), svcerr.ErrNotFound)

	// Deleting the agent removes its tasks.
	f.clock.Advance(2 * time.Minute)
	if _, err := f.s.ReapStale(ctx, f.clock.Now()); err != nil { // the running task: queued again
		t.Fatal(err)
	}
	wantErr(t, f.s.DeleteAgent(ctx, f.agent.ID, nil), nil)
	if n := countRows(t, f.s, "tasks", "1 = 1"); n != 0 {
		t.Fatalf("%d tasks left after deleting the agent", n)
	}
}

func TestTransitionTaskCAS(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.create(t, "x")
	abort := store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}

	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = f.s.TransitionTask(ctx, tk.ID, abort) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, svcerr.ErrInvalidState):
			t.Fatalf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d concurrent aborts succeeded, want exactly 1", ok)
	}
	got, _ := f.s.Task(ctx, tk.ID)
	if got.Status != taskstate.Aborted || got.FinishedAt == nil {
		t.Fatalf("after abort: %+v", got)
	}
	_, err := f.s.TransitionTask(ctx, 999, abort)
	wantErr(t, err, svcerr.ErrNotFound)

	// continue: new user message, steps granted, answer cleared, data key dropped.
	cont, err := f.s.TransitionTask(ctx, tk.ID, store.TaskTransition{
		Action: taskstate.Continue, To: taskstate.Queued, GrantSteps: 3,
		UserMessage: &store.NewTaskMessage{Text: "more"}, UnsetData: []string{"max_steps_reached"},
	})
	if err != nil || cont.Status != taskstate.Queued || cont.MaxSteps != 3 || cont.FinishedAt != nil {
		t.Fatalf("continue = %+v, %v", cont, err)
	}
	msgs, _ := f.s.Messages(ctx, tk.ID, 1)
	if len(msgs) != 1 || msgs[0].Sequence != 2 || msgs[0].Text != "more" || msgs[0].Role != store.RoleUser {
		t.Fatalf("messages after continue = %+v", msgs)
	}
}

func TestClaimLeaseReap(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	a, b := f.create(t, "a"), f.create(t, "b")
	got, err := f.s.ClaimQueued(ctx, "w1", time.Minute, 1)
	if err != nil || len(got) != 1 || got[0].ID != a.ID || got[0].Status != taskstate.Running ||
		*got[0].LeaseOwner != "w1" || !got[0].LeaseExpiresAt.Equal(f.clock.Now().Add(time.Minute).Truncate(time.Microsecond)) {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	_, err = f.s.ClaimQueued(ctx, "", time.Minute, 1)
	wantErr(t, err, svcerr.ErrInvalid)

	// The lease guards every write of the worker.
	wantErr(t, f.s.ExtendLease(ctx, a.ID, "w2", time.Minute), svcerr.ErrInvalidState)
	f.clock.Advance(50 * time.Second)
	wantErr(t, f.s.ExtendLease(ctx, a.ID, "w1", time.Minute), nil)
	f.clock.Advance(50 * time.Second) // still inside the extended lease
	if _, err := f.s.AppendMessages(ctx, a.ID, "w1", []store.NewTaskMessage{{Role: store.RoleAssistant, Text: "hi", Reasoning: json.RawMessage(`{"r": 1}`)}}); err != nil {
		t.Fatal(err)
	}
	reaped, err := f.s.ReapStale(ctx, f.clock.Now())
	if err != nil || len(reaped.Requeued)+len(reaped.Failed) != 0 {
		t.Fatalf("ReapStale before expiry = %+v, %v", reaped, err)
	}
	f.clock.Advance(time.Minute)
	_, err = f.s.AppendMessages(ctx, a.ID, "w1", []store.NewTaskMessage{{Role: store.RoleAssistant, Text: "late"}})
	wantErr(t, err, svcerr.ErrInvalidState) // lease expired
	// A task whose worker stopped answering is queued again to resume, MaxRecoveries times in a
	// row; the next time it fails ORPHANED.
	for i := 1; i <= store.MaxRecoveries; i++ {
		reaped, err = f.s.ReapStale(ctx, f.clock.Now())
		if err != nil || fmt.Sprint(reaped.Requeued) != fmt.Sprint([]int64{a.ID}) || len(reaped.Failed) != 0 {
			t.Fatalf("ReapStale %d = %+v, %v", i, reaped, err)
		}
		ra, _ := f.s.Task(ctx, a.ID)
		if ra.Status != taskstate.Queued || ra.LeaseOwner != nil || ra.LeaseExpiresAt != nil || ra.Recoveries != i || ra.FinishedAt != nil || ra.Error != nil {
			t.Fatalf("requeued task = %+v", ra)
		}
		if got, err := f.s.ClaimQueued(ctx, "w1", time.Minute, 1); err != nil || len(got) != 1 || got[0].ID != a.ID {
			t.Fatalf("claim of the requeued task = %+v, %v", got, err)
		}
		f.clock.Advance(2 * time.Minute)
	}
	reaped, err = f.s.ReapStale(ctx, f.clock.Now())
	if err != nil || fmt.Sprint(reaped.Failed) != fmt.Sprint([]int64{a.ID}) || len(reaped.Requeued) != 0 {
		t.Fatalf("ReapStale = %+v, %v", reaped, err)
	}
	ra, _ := f.s.Task(ctx, a.ID)
	if ra.Status != taskstate.Failed || ra.Error == nil || ra.Error.Code != taskstate.CodeOrphaned || ra.LeaseOwner != nil || ra.FinishedAt == nil {
		t.Fatalf("reaped task = %+v", ra)
	}
	_, err = f.s.FinishStep(ctx, a.ID, "w1", store.StepOutcome{Status: taskstate.Completed, Answer: ptr("x")})
	wantErr(t, err, svcerr.ErrInvalidState)

	// Automatic retry: scheduled, not claimable before it is due, then claimed with retry_count+1.
	ok, err := f.s.ScheduleTaskRetry(ctx, a.ID, 5*time.Minute, 1)
	if err != nil || !ok {
		t.Fatalf("ScheduleTaskRetry = %v, %v", ok, err)
	}
	if ok, _ := f.s.ScheduleTaskRetry(ctx, a.ID, 5*time.Minute, 1); ok {
		t.Fatal("a second retry was scheduled")
	}
	got, _ = f.s.ClaimQueued(ctx, "w2", time.Minute, 5)
	if len(got) != 1 || got[0].ID != b.ID {
		t.Fatalf("claim before the retry is due = %+v", got)
	}
	f.clock.Advance(5 * time.Minute)
	got, _ = f.s.ClaimQueued(ctx, "w2", time.Minute, 5)
	if len(got) != 1 || got[0].ID != a.ID || got[0].RetryCount != 1 || got[0].Error != nil || got[0].NextRetryAt != nil {
		t.Fatalf("claim of the due retry = %+v", got)
	}
}

func TestFinishStepAndAbortWhileRunning(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.claimOne(t, "w1")
	out, err := f.s.FinishStep(ctx, tk.ID, "w1", store.StepOutcome{Status: taskstate.Running, InputTokens: 10, OutputTokens: 2, Steps: 1})
	if err != nil || out.Status != taskstate.Running || out.StepsUsed != 1 || out.InputTokens != 10 || out.LeaseOwner == nil {
		t.Fatalf("FinishStep running = %+v, %v", out, err)
	}
	for name, o := range map[string]store.StepOutcome{
		"failed without error": {Status: taskstate.Failed},
		"error when completed": {Status: taskstate.Completed, Error: &store.TaskError{Code: taskstate.CodeUnknown}},
		"unknown code":         {Status: taskstate.Failed, Error: &store.TaskError{Code: "NOPE"}},
		"queued":               {Status: taskstate.Queued},
		"negative":             {Status: taskstate.Running, Steps: -1},
	} {
		_, err := f.s.FinishStep(ctx, tk.ID, "w1", o)
		if !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	// An abort takes the task away from the worker: its next write is refused.
	if _, err := f.s.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.FinishStep(ctx, tk.ID, "w1", store.StepOutcome{Status: taskstate.Completed, Answer: ptr("done"), Steps: 1})
	wantErr(t, err, svcerr.ErrInvalidState)
	wantErr(t, f.s.ExtendLease(ctx, tk.ID, "w1", time.Minute), svcerr.ErrInvalidState)
	got, _ := f.s.Task(ctx, tk.ID)
	if got.Status != taskstate.Aborted || got.Answer != nil || got.StepsUsed != 1 || got.LeaseOwner != nil {
		t.Fatalf("aborted task written by a stale worker: %+v", got)
	}

	// Budget spent: ABORTED with data.max_steps_reached.
	tk2 := f.claimOne(t, "w1")
	out, err = f.s.FinishStep(ctx, tk2.ID, "w1", store.StepOutcome{Status: taskstate.Aborted, Steps: 5, Data: map[string]any{"max_steps_reached": true}})
	if err != nil || out.Status != taskstate.Aborted || out.Data["max_steps_reached"] != true || out.FinishedAt == nil {
		t.Fatalf("FinishStep budget = %+v, %v", out, err)
	}
}

func TestToolCallDecisions(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.claimOne(t, "w1")
	_, calls, err := f.s.AppendAssistantTurn(ctx, tk.ID, "w1", store.NewTaskMessage{Role: store.RoleAssistant}, []store.NewToolCall{
		{ProviderCallID: "c1", ToolClass: "core.ReadURLTool", Name: "read_url", Operation: "fetch", Status: store.ToolCallPendingApproval, Arguments: map[string]any{"url": "https://a"}},
		{ProviderCallID: "c2", ToolClass: "core.ReadURLTool", Name: "read_url", Operation: "fetch", Status: store.ToolCallPendingApproval, Arguments: map[string]any{"url": "https://b"}},
		{ProviderCallID: "c3", ToolClass: "core.ReadURLTool", Name: "read_url", Operation: "fetch", Status: store.ToolCallPending},
	})
	if err != nil || len(calls) != 3 {
		t.Fatalf("RecordToolCalls = %v, %v", calls, err)
	}
	_, _, err = f.s.AppendAssistantTurn(ctx, tk.ID, "w1", store.NewTaskMessage{Role: store.RoleAssistant}, []store.NewToolCall{{ProviderCallID: "c1", ToolClass: "x", Name: "x", Status: store.ToolCallPending}})
	wantErr(t, err, svcerr.ErrConflict)
	wantErr(t, f.s.UpdateToolCall(ctx, tk.ID, "w1", calls[2].ID, store.ToolCallUpdate{Status: store.ToolCallExecuted, Result: json.RawMessage(`{"ok": true}`)}), nil)
	wantErr(t, f.s.UpdateToolCall(ctx, tk.ID, "w1", calls[2].ID, store.ToolCallUpdate{Status: store.ToolCallExecuted, Result: json.RawMessage(`{`)}), svcerr.ErrInvalid)

	// Deciding before the task is PENDING_APPROVAL is refused.
	_, err = f.s.DecideToolCalls(ctx, tk.ID, f.user.ID, []store.ToolDecision{{ProviderCallID: "c1", Approve: true}})
	wantErr(t, err, svcerr.ErrInvalidState)
	if _, err := f.s.FinishStep(ctx, tk.ID, "w1", store.StepOutcome{Status: taskstate.PendingApproval, Steps: 1}); err != nil {
		t.Fatal(err)
	}
	for name, ds := range map[string][]store.ToolDecision{
		"unknown":        {{ProviderCallID: "nope", Approve: true}},
		"not pending":    {{ProviderCallID: "c3", Approve: true}},
		"twice":          {{ProviderCallID: "c1", Approve: true}, {ProviderCallID: "c1", Approve: true}},
		"valid then bad": {{ProviderCallID: "c1", Approve: true}, {ProviderCallID: "zzz"}},
	} {
		_, err := f.s.DecideToolCalls(ctx, tk.ID, f.user.ID, ds)
		if !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if n := countRows(t, f.s, "task_tool_calls", "task_id = ? AND status = ?", tk.ID, store.ToolCallPendingApproval); n != 2 {
		t.Fatalf("a refused decision wrote: %d pending", n)
	}
	f.clock.Advance(time.Second)
	out, err := f.s.DecideToolCalls(ctx, tk.ID, f.user.ID, []store.ToolDecision{{ProviderCallID: "c1", Approve: true, Arguments: map[string]any{"url": "https://safe"}}})
	if err != nil || out.Status != taskstate.PendingApproval {
		t.Fatalf("partial approve = %+v, %v", out, err)
	}
	out, err = f.s.DecideToolCalls(ctx, tk.ID, f.user.ID, []store.ToolDecision{{ProviderCallID: "c2", Reason: ptr("no")}})
	if err != nil || out.Status != taskstate.Queued {
		t.Fatalf("final decision = %+v, %v", out, err)
	}
	all, _ := f.s.ToolCalls(ctx, tk.ID)
	c1, c2 := all[0], all[1]
	if c1.Status != store.ToolCallApproved || c1.ApprovedArguments["url"] != "https://safe" || c1.ProposedArguments["url"] != "https://a" ||
		*c1.DecidedBy != f.user.ID || !c1.DecidedAt.Equal(f.clock.Now().Truncate(time.Microsecond)) {
		t.Fatalf("approved call = %+v", c1)
	}
	if c2.Status != store.ToolCallRejected || *c2.Reason != "no" || string(c2.Result) != `{"reason":"no","rejected":true}` || c2.ApprovedArguments != nil {
		t.Fatalf("rejected call = %+v (result %s)", c2, c2.Result)
	}
	if all[2].Status != store.ToolCallExecuted || string(all[2].Result) != `{"ok":true}` || all[2].ExecutedAt == nil {
		t.Fatalf("executed call = %+v", all[2])
	}

	// Reject-all (the first task is taken out of the queue first).
	if _, err := f.s.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}); err != nil {
		t.Fatal(err)
	}
	tk2 := f.claimOne(t, "w1")
	if _, _, err := f.s.AppendAssistantTurn(ctx, tk2.ID, "w1", store.NewTaskMessage{Role: store.RoleAssistant}, []store.NewToolCall{
		{ProviderCallID: "d1", ToolClass: "x", Name: "x", Status: store.ToolCallPendingApproval},
		{ProviderCallID: "d2", ToolClass: "x", Name: "x", Status: store.ToolCallPendingApproval},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.FinishStep(ctx, tk2.ID, "w1", store.StepOutcome{Status: taskstate.PendingApproval}); err != nil {
		t.Fatal(err)
	}
	out, err = f.s.RejectToolCalls(ctx, tk2.ID, f.user.ID, "Do not fetch")
	if err != nil || out.Status != taskstate.Queued {
		t.Fatalf("RejectToolCalls = %+v, %v", out, err)
	}
	if n := countRows(t, f.s, "task_tool_calls", "task_id = ? AND status = ? AND reason = ?", tk2.ID, store.ToolCallRejected, "Do not fetch"); n != 2 {
		t.Fatalf("%d calls rejected, want 2", n)
	}
	_, err = f.s.RejectToolCalls(ctx, tk2.ID, f.user.ID, "again")
	wantErr(t, err, svcerr.ErrInvalidState)
}

func TestQuestions(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.claimOne(t, "w1")
	qs := []store.Question{{Question: "Which?", Header: "Format", Options: []string{"PDF", "MD"}}}
	for _, id := range []string{"q1", "q2"} {
		if _, err := f.s.RecordQuestions(ctx, tk.ID, "w1", id, qs); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.s.RecordQuestions(ctx, tk.ID, "w1", "q1", qs)
	wantErr(t, err, svcerr.ErrConflict)
	if _, err := f.s.FinishStep(ctx, tk.ID, "w1", store.StepOutcome{Status: taskstate.AwaitingInput}); err != nil {
		t.Fatal(err)
	}
	ans := []store.QuestionAnswer{{Header: "Format", Selections: []string{"PDF"}}}
	_, err = f.s.AnswerQuestions(ctx, tk.ID, "nope", ans, nil)
	wantErr(t, err, svcerr.ErrInvalid)
	refuse := errors.New("refused")
	_, err = f.s.AnswerQuestions(ctx, tk.ID, "q1", ans, func(*store.QuestionBatch) error { return refuse })
	if !errors.Is(err, refuse) {
		t.Fatalf("check error not returned: %v", err)
	}
	out, err := f.s.AnswerQuestions(ctx, tk.ID, "q1", ans, nil)
	if err != nil || out.Status != taskstate.AwaitingInput {
		t.Fatalf("first answer = %+v, %v", out, err)
	}
	_, err = f.s.AnswerQuestions(ctx, tk.ID, "q1", ans, nil)
	wantErr(t, err, svcerr.ErrInvalid) // already answered
	pending, _ := f.s.PendingQuestions(ctx, tk.ID)
	if len(pending) != 1 || pending[0].ToolCallID != "q2" {
		t.Fatalf("pending = %+v", pending)
	}
	out, err = f.s.AnswerQuestions(ctx, tk.ID, "q2", ans, nil)
	if err != nil || out.Status != taskstate.Queued {
		t.Fatalf("last answer = %+v, %v", out, err)
	}
	all, _ := f.s.QuestionBatches(ctx, tk.ID)
	if len(all) != 2 || all[0].AnsweredAt == nil || all[0].Answers[0].Selections[0] != "PDF" {
		t.Fatalf("batches = %+v", all)
	}
	_, err = f.s.AnswerQuestions(ctx, tk.ID, "q2", ans, nil)
	wantErr(t, err, svcerr.ErrInvalidState)
}

func TestAbortTaskChain(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	mk := func(parent *int64, status string) int64 {
		tk := storetest.Task(t, f.s, f.agent, f.user.ID, func(nt *store.NewTask) { nt.ParentTaskID = parent })
		if err := f.s.GormDBForTest().Exec("UPDATE tasks SET status = ? WHERE id = ?", status, tk.ID).Error; err != nil {
			t.Fatal(err)
		}
		return tk.ID
	}
	root := mk(nil, taskstate.Running) // not waiting: the cascade stops below it
	mid := mk(&root, taskstate.AwaitingSubAgents)
	top := mk(&mid, taskstate.AwaitingSubAgents)
	leaf := mk(&top, taskstate.Queued)
	out, err := f.s.AbortTaskChain(ctx, leaf)
	if err != nil || out.ID != leaf || out.Status != taskstate.Aborted {
		t.Fatalf("AbortTaskChain = %+v, %v", out, err)
	}
	for id, want := range map[int64]string{leaf: taskstate.Aborted, top: taskstate.Aborted, mid: taskstate.Aborted, root: taskstate.Running} {
		got, _ := f.s.Task(ctx, id)
		if got.Status != want {
			t.Errorf("task %d: %s, want %s", id, got.Status, want)
		}
	}
	_, err = f.s.AbortTaskChain(ctx, leaf)
	wantErr(t, err, svcerr.ErrInvalidState)
}

// TestClaimQueuedConcurrent: two claimers (each transaction on its own pooled connection) never
// receive the same task, and together they claim all of them.
func TestClaimQueuedConcurrent(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	const total = 50
	for i := range total {
		f.create(t, fmt.Sprintf("t%d", i))
	}
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	for _, w := range []string{"w1", "w2"} {
		wg.Go(func() {
			for {
				got, err := f.s.ClaimQueued(ctx, w, time.Minute, 3)
				if err != nil {
					t.Errorf("%s: %v", w, err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range got {
					if prev, dup := seen[tk.ID]; dup {
						t.Errorf("task %d claimed by %s and %s", tk.ID, prev, w)
					}
					seen[tk.ID] = w
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("claimed %d tasks, want %d", len(seen), total)
	}
	if n := countRows(t, f.s, "tasks", "status = ?", taskstate.Running); n != total {
		t.Fatalf("%d RUNNING, want %d", n, total)
	}
}

// TestClaimQueuedFair: 100 queued tasks of one user, then one of another: the first batch of 4
// takes the other user's task beside the first user's three oldest (round-robin across users,
// oldest first within each).
func TestClaimQueuedFair(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	var mine []int64
	for i := range 100 {
		mine = append(mine, f.create(t, fmt.Sprintf("a%d", i)).ID)
	}
	otherAgent := storetest.Agent(t, f.s, f.other.PrincipalID)
	theirs := storetest.Task(t, f.s, otherAgent, f.other.ID)
	got, err := f.s.ClaimQueued(ctx, "w1", time.Minute, 4)
	if err != nil || len(got) != 4 {
		t.Fatalf("ClaimQueued = %d tasks, %v", len(got), err)
	}
	want := []int64{mine[0], mine[1], mine[2], theirs.ID} // returned in id order
	for i, tk := range got {
		if tk.ID != want[i] {
			t.Fatalf("claimed %v, want %v", ids(got), want)
		}
	}
	// The next batches go on in order through the first user's tasks.
	got, err = f.s.ClaimQueued(ctx, "w2", time.Minute, 2)
	if err != nil || len(got) != 2 || got[0].ID != mine[3] || got[1].ID != mine[4] {
		t.Fatalf("second batch %v, %v", ids(got), err)
	}
}

// TestClaimQueuedFairOrder checks claims against the rule itself on random queues: rank 1 of
// every user (by id within the user) before rank 2 of any, ties by id; fewer users than the
// batch, more users than the batch, and one user with a long queue among short ones.
func TestClaimQueuedFairOrder(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(14, 1))
	type user struct {
		id    int64
		agent *store.Agent
	}
	var users []user
	for range 12 {
		u := storetest.User(t, s)
		users = append(users, user{u.ID, storetest.Agent(t, s, u.PrincipalID)})
	}
	owner := map[int64]int64{} // queued task → user
	worker := 0
	for round := range 8 {
		// Queue tasks for a random subset of users, interleaved, one user often far ahead.
		active := users[:1+rng.IntN(len(users))]
		for range 5 + rng.IntN(40) {
			u := active[rng.IntN(len(active))]
			if round%2 == 0 && rng.IntN(2) == 0 {
				u = active[0]
			}
			owner[storetest.Task(t, s, u.agent, u.id).ID] = u.id
		}
		for range 3 {
			limit := 1 + rng.IntN(16)
			want := fairReference(owner, limit)
			worker++
			got, err := s.ClaimQueued(ctx, fmt.Sprintf("w%d", worker), time.Minute, limit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), want) {
				t.Fatalf("round %d, limit %d: claimed %v, want %v", round, limit, ids(got), want)
			}
			for _, id := range want {
				delete(owner, id)
			}
		}
	}
}

// fairReference is the fair batch of up to limit tasks from queued (task → user), in id order.
func fairReference(queued map[int64]int64, limit int) []int64 {
	all := slices.Sorted(maps.Keys(queued))
	rank := map[int64]int{}
	type ranked struct {
		r  int
		id int64
	}
	var order []ranked
	for _, id := range all {
		rank[queued[id]]++
		order = append(order, ranked{rank[queued[id]], id})
	}
	slices.SortFunc(order, func(a, b ranked) int { return cmp.Or(cmp.Compare(a.r, b.r), cmp.Compare(a.id, b.id)) })
	var out []int64
	for _, o := range order[:min(limit, len(order))] {
		out = append(out, o.id)
	}
	slices.Sort(out)
	return out
}

func ids(ts []store.Task) []int64 {
	out := make([]int64, len(ts))
	for i := range ts {
		out[i] = ts[i].ID
	}
	return out
}
