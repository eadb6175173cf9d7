package task_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func wantInvalid(t *testing.T, name string, err error, msg string) {
	t.Helper()
	if !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("%s: %v, want ErrInvalid", name, err)
		return
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %q, want it to say %q", name, err, msg)
	}
}

func countTasks(t *testing.T, st *store.Store, u *store.User) int {
	t.Helper()
	ts, err := st.ListTasks(context.Background(), store.TaskQuery{UserID: u.ID, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

// TestNewTaskRules: a new task's rules (once the store's CreateTask checks) refuse with
// ErrInvalid before anything is written, through Start (which Create and the per-agent API
// use) and CheckNew (which the scheduled runs and the loop's sub-agents call).
func TestNewTaskRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	u := storetest.User(t, st)
	a := storetest.Agent(t, st, u.PrincipalID)
	svc := task.New(st, nil)
	ok := store.NewTask{AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: u.ID, Prompt: "x", MaxSteps: 1}
	for name, tc := range map[string]struct {
		change func(*store.NewTask)
		msg    string
	}{
		"blank prompt":    {func(nt *store.NewTask) { nt.Prompt = "  " }, "prompt is required"},
		"nul":             {func(nt *store.NewTask) { nt.Prompt = "a\x00b" }, "prompt must be valid UTF-8"},
		"oversize prompt": {func(nt *store.NewTask) { nt.Prompt = strings.Repeat("x", store.MaxTaskPromptLen+1) }, "prompt must be at most"},
		"zero steps":      {func(nt *store.NewTask) { nt.MaxSteps = 0 }, "max_steps must be at least 1"},
		"bad source":      {func(nt *store.NewTask) { nt.Source = "cron" }, "source must be"},
		"data not JSON":   {func(nt *store.NewTask) { nt.Data = map[string]any{"f": func() {}} }, "data must be valid JSON"},
		"oversize data":   {func(nt *store.NewTask) { nt.Data = map[string]any{"k": strings.Repeat("x", store.MaxTaskJSONLen)} }, "data must be at most"},
	} {
		nt := ok
		tc.change(&nt)
		wantInvalid(t, name, task.CheckNew(nt), tc.msg)
		_, err := svc.Start(ctx, nt)
		wantInvalid(t, "start: "+name, err, tc.msg)
	}
	if n := countTasks(t, st, u); n != 0 {
		t.Fatalf("%d tasks after refused starts", n)
	}
	_, err := svc.Create(ctx, u, task.CreateInput{AgentID: a.ID, Prompt: " "})
	wantInvalid(t, "create", err, "prompt is required")
	if _, err := svc.Start(ctx, ok); err != nil {
		t.Fatal(err)
	}
}

// TestCallerInputOfARunningTask: follow-ups, decisions, rejections and answers are checked
// before the store (a refusal writes nothing); which calls and batches are pending stays the
// store's answer.
func TestCallerInputOfARunningTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	u := storetest.User(t, st)
	a := storetest.Agent(t, st, u.PrincipalID)
	svc := task.New(st, nil)
	id := func(tk *store.Task) string { return strconv.FormatInt(tk.ID, 10) }

	// Follow-up text.
	done := storetest.MoveTo(t, st, storetest.Task(t, st, a, u.ID).ID, taskstate.Aborted)
	_, err := svc.Continue(ctx, u, id(done), task.ContinueInput{Prompt: "a\x00b"})
	wantInvalid(t, "follow-up", err, "message text must be valid UTF-8")
	if got, err := st.Task(ctx, done.ID); err != nil || got.Status != taskstate.Aborted {
		t.Fatalf("refused follow-up moved the task: %+v, %v", got, err)
	}

	// Decisions.
	tk := storetest.Task(t, st, a, u.ID)
	if _, err := st.AcquireTick(ctx, tk.ID, "w", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.AppendAssistantTurn(ctx, tk.ID, "w", store.NewTaskMessage{Role: store.RoleAssistant}, []store.NewToolCall{
		{ProviderCallID: "c1", ToolClass: "core.ReadURLTool", Name: "read_url", Operation: "fetch", Status: store.ToolCallPendingApproval},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.PendingApproval, Steps: 1}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("r", store.MaxTaskReasonLen+1)
	for name, tc := range map[string]struct {
		ds  []store.ToolDecision
		msg string
	}{
		"empty":             {nil, "decisions must not be empty"},
		"args on rejection": {[]store.ToolDecision{{ProviderCallID: "c1", Arguments: map[string]any{}}}, "arguments are only accepted when approving"},
		"oversize reason":   {[]store.ToolDecision{{ProviderCallID: "c1", Reason: &long}}, "reason must be at most"},
		"approve with oversize reason": {[]store.ToolDecision{{ProviderCallID: "c1", Approve: true, Reason: &long}},
			"reason must be at most"},
		"oversize arguments": {[]store.ToolDecision{{ProviderCallID: "c1", Approve: true,
			Arguments: map[string]any{"k": strings.Repeat("x", store.MaxTaskJSONLen)}}}, "arguments must be at most"},
		"unknown call (the store's)": {[]store.ToolDecision{{ProviderCallID: "nope", Approve: true}}, "no pending tool call"},
		"twice (the store's)": {[]store.ToolDecision{{ProviderCallID: "c1", Approve: true}, {ProviderCallID: "c1", Approve: true}},
			"appears twice"},
	} {
		_, err := svc.Approve(ctx, u, id(tk), tc.ds)
		wantInvalid(t, "approve: "+name, err, tc.msg)
	}
	_, err = svc.Reject(ctx, u, id(tk), long)
	wantInvalid(t, "reject", err, "reason must be at most")
	if calls, err := st.ToolCalls(ctx, tk.ID); err != nil || len(calls) != 1 || calls[0].Status != store.ToolCallPendingApproval {
		t.Fatalf("refused decisions wrote: %+v, %v", calls, err)
	}

	// Answers.
	q := storetest.Task(t, st, a, u.ID)
	if _, err := st.AcquireTick(ctx, q.ID, "w", time.Hour); err != nil {
		t.Fatal(err)
	}
	qs := []store.Question{{Header: "Note", Question: "Anything?", AllowFreeText: true}}
	if _, err := st.RecordQuestions(ctx, q.ID, "w", "q1", qs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishStep(ctx, q.ID, "w", store.StepOutcome{Status: taskstate.AwaitingInput}); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", store.MaxTaskJSONLen)
	_, err = svc.Answer(ctx, u, id(q), "q1", []store.QuestionAnswer{{Header: "Note", FreeText: &huge}})
	wantInvalid(t, "oversize answers", err, "answers must be at most")
	if p, err := st.PendingQuestions(ctx, q.ID); err != nil || len(p) != 1 {
		t.Fatalf("refused answers wrote: %+v, %v", p, err)
	}
}
