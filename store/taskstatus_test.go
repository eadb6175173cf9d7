package store_test

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// statusAssigned matches an UPDATE of the tasks table whose SET names the status column, in
// either dialect's quoting.
var statusAssigned = regexp.MustCompile("(?is)^\\s*UPDATE\\s+[`\"]?tasks[`\"]?\\s+SET\\s+.*?[,\\s`\"]status[`\"]?\\s*=.*\\bWHERE\\b")

// setStatusWhere is the condition setStatus writes (placeholders as ? or, on PostgreSQL, $n).
var setStatusWhere = regexp.MustCompile(`WHERE status = (\?|\$\d+) AND \(`)

// TestOneStatusWriter: every statement that writes tasks.status comes from the store's one
// writer (setStatus, whose UPDATE is conditional on the status it leaves), across the whole
// life of tasks: create, claim, steps, approval, answers, sub-agents, abort chains, continue,
// retry, cancel, tick, hand-back, reap.
func TestOneStatusWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := time.Now()
	var mu sync.Mutex
	s, faults := storetest.NewCounted(t)
	var writes, rogue []string
	faults.Trace(func(q string) {
		if !statusAssigned.MatchString(q) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		writes = append(writes, q)
		if !setStatusWhere.MatchString(q) {
			rogue = append(rogue, q)
		}
	})
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID, func(f *store.AgentFields) { f.MaxRetries = ptr(2) })
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	newTask := func(parent *int64) int64 {
		return storetest.Task(t, s, a, u.ID, func(nt *store.NewTask) { nt.ParentTaskID = parent }).ID
	}

	// Claim, a step that asks for approval, the decision, a step that asks a question, the
	// answer, a step that waits on a sub-agent whose abort resumes nobody but aborts the chain.
	id := newTask(nil)
	must(s.ClaimQueued(ctx, "w", time.Minute, 1))
	_, _, err := s.AppendAssistantTurn(ctx, id, "w", store.NewTaskMessage{Role: store.RoleAssistant},
		[]store.NewToolCall{{ProviderCallID: "c1", ToolClass: "time", Name: "time__now", Operation: "now", Status: store.ToolCallPendingApproval}})
	must(nil, err)
	must(s.FinishStep(ctx, id, "w", store.StepOutcome{Status: taskstate.PendingApproval, Steps: 1}))
	must(s.DecideToolCalls(ctx, id, u.ID, []store.ToolDecision{{ProviderCallID: "c1", Approve: true}}))
	must(s.ClaimQueued(ctx, "w", time.Minute, 1))
	must(s.RecordQuestions(ctx, id, "w", "q1", []store.Question{{Header: "H", Question: "?", Options: []string{"a", "b"}}}))
	must(s.FinishStep(ctx, id, "w", store.StepOutcome{Status: taskstate.AwaitingInput}))
	must(s.AnswerQuestions(ctx, id, "q1", []store.QuestionAnswer{{Header: "H", Selections: []string{"a"}}}, nil))
	must(s.ClaimQueued(ctx, "w", time.Minute, 1))
	must(s.FinishStep(ctx, id, "w", store.StepOutcome{Status: taskstate.AwaitingSubAgents}))
	child := newTask(&id)
	must(s.AbortTaskChain(ctx, child))
	must(s.TransitionTask(ctx, id, store.TaskTransition{Action: taskstate.Continue, To: taskstate.Queued,
		UserMessage: &store.NewTaskMessage{Text: "more"}}))

	// A failure, its automatic retry scheduled and claimed when due, a manual retry, a
	// cancelled retry chain, a sub-agent that completes and resumes its parent.
	must(s.ClaimQueued(ctx, "w", time.Minute, 1))
	must(s.FinishStep(ctx, id, "w", store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeServerError, Message: "m"}}))
	must(s.ScheduleTaskRetry(ctx, id, 0, 2))
	must(s.ClaimQueued(ctx, "w", time.Minute, 1))
	must(s.FinishStep(ctx, id, "w", store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeServerError, Message: "m"}}))
	must(s.TransitionTask(ctx, id, store.TaskTransition{Action: taskstate.Retry, To: taskstate.Queued}))
	must(s.ClaimQueued(ctx, "w", time.Minute, 1))
	must(s.FinishStep(ctx, id, "w", store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeServerError, Message: "m"}}))
	must(s.ScheduleTaskRetry(ctx, id, time.Hour, 5))
	must(s.TransitionTask(ctx, id, store.TaskTransition{Action: taskstate.CancelRetry, To: taskstate.Cancelled, RequireRetryPending: true}))

	parent := newTask(nil)
	must(s.ClaimQueued(ctx, "w", time.Minute, 1))
	must(s.FinishStep(ctx, parent, "w", store.StepOutcome{Status: taskstate.AwaitingSubAgents}))
	kid := newTask(&parent)
	must(s.AcquireTick(ctx, kid, "tick", time.Minute))
	must(s.FinishStep(ctx, kid, "tick", store.StepOutcome{Status: taskstate.Completed, Answer: ptr("done")}))
	must(s.ResumeWhenChildrenSettled(ctx, parent))

	// A hand-back, a reap, a follow-up on a queued chat.
	must(s.ClaimQueued(ctx, "w", time.Minute, 1))
	must(s.HandBack(ctx, parent, "w", true))
	must(s.ClaimQueued(ctx, "w", time.Minute, 1))
	must(s.ReapStale(ctx, clock.Add(time.Hour)))
	must(s.TransitionTask(ctx, parent, store.TaskTransition{Action: taskstate.FollowUp, To: taskstate.Queued,
		UserMessage: &store.NewTaskMessage{Text: "and"}}))

	mu.Lock()
	defer mu.Unlock()
	if len(writes) < 20 {
		t.Fatalf("saw %d writes of tasks.status; the trace or the pattern is broken", len(writes))
	}
	for _, q := range rogue {
		t.Errorf("tasks.status written outside the store's writer (setStatus): %s", q)
	}
}
