package server_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// taskWorld is one service with an administrator, an owner with an agent (max_steps 7), a
// stranger with an agent of their own, and a group whose member can see the group's agent.
type taskWorld struct {
	env                      *apitest.Env
	admin, owner, stranger   *apitest.Client
	ownerU, strangerU        gen.User
	agent, strangerAgent     gen.Agent
	member                   *apitest.Client
	groupAgent               gen.Agent
	groupPrincipal, memberID int64
}

func newTaskWorld(t *testing.T) *taskWorld {
	t.Helper()
	w := &taskWorld{env: apitest.New(t)}
	w.admin, _ = w.env.UserClient("root@example.com")
	w.owner, w.ownerU = w.env.UserClient("owner@example.com")
	w.stranger, w.strangerU = w.env.UserClient("stranger@example.com")
	var mu gen.User
	w.member, mu = w.env.UserClient("member@example.com")
	w.memberID = mu.Id
	w.agent = mkAgent(t, w.owner, map[string]any{"name": "Helper", "max_steps": 7})
	w.strangerAgent = mkAgent(t, w.stranger, map[string]any{"name": "Private"})
	_, w.groupPrincipal = mkGroup(t, w.owner, "team", map[int64]string{mu.Id: "member"})
	w.groupAgent = mkAgent(t, w.owner, map[string]any{"name": "Team agent", "principal_id": w.groupPrincipal})
	return w
}

func taskPath(id int64, action string) string {
	if action == "" {
		return fmt.Sprintf("/tasks/%d", id)
	}
	return fmt.Sprintf("/tasks/%d/%s", id, action)
}

func decodeTask(t *testing.T, r *apitest.Response) gen.Task {
	t.Helper()
	var out gen.TaskResponse
	r.Decode(t, &out)
	return out.Data.Task
}

func (w *taskWorld) newTask(t *testing.T, c *apitest.Client, agentID int64) gen.Task {
	t.Helper()
	return decodeTask(t, c.Post("/tasks", map[string]any{"agent_id": agentID, "prompt": "Summarise the report"}).Expect(t, 201))
}

func (w *taskWorld) st() *store.Store { return w.env.App.Store }

// claim takes task id as worker "w1" (it must be the oldest queued task).
func (w *taskWorld) claim(t *testing.T, id int64) {
	t.Helper()
	got, err := w.st().ClaimQueued(context.Background(), "w1", time.Hour, 1)
	if err != nil || len(got) != 1 || got[0].ID != id {
		t.Fatalf("claim = %+v, %v; want task %d", got, err, id)
	}
}

// finish claims task id and ends its step in status (with calls or questions recorded first).
func (w *taskWorld) finish(t *testing.T, id int64, o store.StepOutcome, calls []store.NewToolCall, questions map[string][]store.Question) {
	t.Helper()
	ctx := context.Background()
	w.claim(t, id)
	if len(calls) > 0 {
		if _, _, err := w.st().AppendAssistantTurn(ctx, id, "w1", store.NewTaskMessage{Role: store.RoleAssistant}, calls); err != nil {
			t.Fatal(err)
		}
	}
	for _, callID := range slices.Sorted(maps.Keys(questions)) { // batches in call id order
		if _, err := w.st().RecordQuestions(ctx, id, "w1", callID, questions[callID]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.st().FinishStep(ctx, id, "w1", o); err != nil {
		t.Fatal(err)
	}
}

func (w *taskWorld) taskStatus(t *testing.T, id int64) string {
	t.Helper()
	tk, err := w.st().Task(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tk.Status
}

func TestTaskCreateAndShow(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	tk := w.newTask(t, w.owner, w.agent.Id)
	if tk.Status != gen.TaskStatus("QUEUED") || tk.MaxSteps != 7 || tk.UserId != w.ownerU.Id || tk.PrincipalId != w.agent.PrincipalId ||
		tk.Pending != nil || tk.Error != nil || tk.Answer != nil || tk.ParentTaskId != nil || tk.FinishedAt != nil || tk.Prompt != "Summarise the report" {
		t.Fatalf("created task = %+v", tk)
	}
	got := decodeTask(t, w.owner.Get(taskPath(tk.Id, "")).Expect(t, 200))
	if got.Id != tk.Id || got.Status != tk.Status {
		t.Fatalf("show = %+v", got)
	}
	explicit := decodeTask(t, w.owner.Post("/tasks", map[string]any{"agent_id": w.agent.Id, "prompt": "x", "max_steps": 100}).Expect(t, 201))
	if explicit.MaxSteps != 100 {
		t.Fatalf("max_steps = %d, want 100", explicit.MaxSteps)
	}
	// A group member may start a task for the group's agent; the task is theirs, the principal the group's.
	gt := w.newTask(t, w.member, w.groupAgent.Id)
	if gt.UserId != w.memberID || gt.PrincipalId != w.groupPrincipal {
		t.Fatalf("group task = %+v", gt)
	}

	bad := []struct {
		name   string
		body   any
		status int
	}{
		{"stranger's agent", map[string]any{"agent_id": w.strangerAgent.Id, "prompt": "x"}, 422},
		{"unknown agent", map[string]any{"agent_id": 99999, "prompt": "x"}, 422},
		{"max_steps 0", map[string]any{"agent_id": w.agent.Id, "prompt": "x", "max_steps": 0}, 422},
		{"max_steps 101", map[string]any{"agent_id": w.agent.Id, "prompt": "x", "max_steps": 101}, 422},
		{"media ids", map[string]any{"agent_id": w.agent.Id, "prompt": "x", "media_ids": []string{"m1"}}, 422},
		{"blank prompt", map[string]any{"agent_id": w.agent.Id, "prompt": "   "}, 422},
		{"empty prompt", map[string]any{"agent_id": w.agent.Id, "prompt": ""}, 422},
		{"missing prompt", map[string]any{"agent_id": w.agent.Id}, 422},
		{"wrong type", map[string]any{"agent_id": "seven", "prompt": "x"}, 422},
		{"unknown field", map[string]any{"agent_id": w.agent.Id, "prompt": "x", "priority": 1}, 422},
		{"not json", "{", 400},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			r := w.owner.Do(apitest.Request{Method: http.MethodPost, Path: "/tasks", Body: b.body})
			r.Expect(t, b.status)
		})
	}
	var list gen.TaskListResponse
	w.owner.Get("/tasks").Expect(t, 200).Decode(t, &list)
	if len(list.Data.Tasks) != 2 {
		t.Fatalf("owner has %d tasks after refused creations, want 2", len(list.Data.Tasks))
	}
}

func TestTaskOwnerIsolation(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	tk := w.newTask(t, w.owner, w.agent.Id)
	for _, c := range []*apitest.Client{w.stranger, w.admin, w.member} {
		c.Get(taskPath(tk.Id, "")).Expect(t, 404, "NOT_FOUND")
		c.Delete(taskPath(tk.Id, "")).Expect(t, 404, "NOT_FOUND")
		c.Post(taskPath(tk.Id, "abort"), nil).Expect(t, 404, "NOT_FOUND")
		c.Post(taskPath(tk.Id, "abort-sub-agent"), nil).Expect(t, 404, "NOT_FOUND")
		c.Post(taskPath(tk.Id, "retry"), nil).Expect(t, 404, "NOT_FOUND")
		c.Delete(taskPath(tk.Id, "retry-chain")).Expect(t, 404, "NOT_FOUND")
		c.Post(taskPath(tk.Id, "continue"), map[string]any{"prompt": "x"}).Expect(t, 404, "NOT_FOUND")
		c.Post(taskPath(tk.Id, "reject"), map[string]any{"reason": "x"}).Expect(t, 404, "NOT_FOUND")
		c.Post(taskPath(tk.Id, "approve"), map[string]any{"decisions": []any{map[string]any{"provider_call_id": "c", "decision": "approve"}}}).Expect(t, 404, "NOT_FOUND")
		c.Post(taskPath(tk.Id, "answer"), map[string]any{"tool_call_id": "q", "answers": []any{map[string]any{"header": "h", "selections": []string{}}}}).Expect(t, 404, "NOT_FOUND")
		var list gen.TaskListResponse
		c.Get("/tasks").Expect(t, 200).Decode(t, &list)
		if len(list.Data.Tasks) != 0 {
			t.Fatalf("someone else lists %d tasks of the owner", len(list.Data.Tasks))
		}
	}
	for _, p := range []string{"/tasks/abc", "/tasks/0", "/tasks/007", "/tasks/99999"} {
		w.owner.Get(p).Expect(t, 404, "NOT_FOUND")
	}
	if st := w.taskStatus(t, tk.Id); st != taskstate.Queued {
		t.Fatalf("status %s after refused requests", st)
	}
	w.owner.Get("/tasks").Expect(t, 200)
	w.env.Client().Get("/tasks").Expect(t, 401, "UNAUTHENTICATED")
}

func TestTaskList(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	var ids []int64
	for range 4 {
		tk := w.newTask(t, w.owner, w.agent.Id)
		ids = append(ids, tk.Id)
		w.env.Clock.Advance(time.Second) // distinct created_at, newest first
	}
	mark := w.env.Clock.Now()
	w.env.Clock.Advance(time.Second)
	w.owner.Post(taskPath(ids[0], "abort"), nil).Expect(t, 200) // updated after mark
	w.newTask(t, w.stranger, w.strangerAgent.Id)
	team := w.newTask(t, w.owner, w.groupAgent.Id)
	ids = append(ids, team.Id)
	list := func(q string) []int64 {
		var r gen.TaskListResponse
		w.owner.Get("/tasks"+q).Expect(t, 200).Decode(t, &r)
		out := []int64{}
		for _, x := range r.Data.Tasks {
			out = append(out, x.Id)
		}
		return out
	}
	for q, want := range map[string][]int64{
		"":                          {ids[4], ids[3], ids[2], ids[1], ids[0]},
		"?per_page=2&page=2":        {ids[2], ids[1]},
		"?status=ABORTED":           {ids[0]},
		"?status=QUEUED&per_page=1": {ids[4]},
		"?since=" + mark.Format(time.RFC3339Nano):             {ids[4], ids[0]},
		fmt.Sprintf("?agent_id=%d", w.agent.Id):               {ids[3], ids[2], ids[1], ids[0]},
		fmt.Sprintf("?agent_id=%d&status=QUEUED", w.agent.Id): {ids[3], ids[2], ids[1]},
		fmt.Sprintf("?agent_id=%d", w.groupAgent.Id):          {ids[4]},
		fmt.Sprintf("?agent_id=%d", w.strangerAgent.Id):       {},
	} {
		if got := list(q); !sameIDs(got, want) {
			t.Errorf("GET /tasks%s = %v, want %v", q, got, want)
		}
	}
	w.owner.Get("/tasks?status=SLEEPING").Expect(t, 422)
	w.owner.Get("/tasks?since=yesterday").Expect(t, 422)
	w.owner.Get("/tasks?agent_id=0").Expect(t, 422)
}

func TestTaskAbortAndDelete(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	queued := w.newTask(t, w.owner, w.agent.Id)
	ab := decodeTask(t, w.owner.Post(taskPath(queued.Id, "abort"), nil).Expect(t, 200))
	if ab.Status != "ABORTED" || ab.FinishedAt == nil {
		t.Fatalf("aborted = %+v", ab)
	}
	w.owner.Post(taskPath(queued.Id, "abort"), nil).Expect(t, 409, "INVALID_STATE") // already paused

	running := w.newTask(t, w.owner, w.agent.Id)
	w.claim(t, running.Id)
	w.owner.Delete(taskPath(running.Id, "")).Expect(t, 409, "INVALID_STATE")
	if decodeTask(t, w.owner.Post(taskPath(running.Id, "abort"), nil).Expect(t, 200)).Status != "ABORTED" {
		t.Fatal("running task not aborted")
	}
	// The worker lost the task: its next write is refused and nothing changes.
	if _, err := w.st().FinishStep(context.Background(), running.Id, "w1", store.StepOutcome{Status: taskstate.Completed, Answer: new("late")}); err == nil {
		t.Fatal("a stale worker wrote to an aborted task")
	}

	done := w.newTask(t, w.owner, w.agent.Id)
	w.finish(t, done.Id, store.StepOutcome{Status: taskstate.Completed, Answer: new("42"), Steps: 1}, nil, nil)
	w.owner.Post(taskPath(done.Id, "abort"), nil).Expect(t, 409, "INVALID_STATE")
	w.owner.Post(taskPath(done.Id, "abort-sub-agent"), nil).Expect(t, 409, "INVALID_STATE")

	w.owner.Delete(taskPath(done.Id, "")).Expect(t, 200)
	w.owner.Get(taskPath(done.Id, "")).Expect(t, 404, "NOT_FOUND")
	w.owner.Delete(taskPath(done.Id, "")).Expect(t, 404, "NOT_FOUND")
}

func TestTaskAbortSubAgent(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	ctx := context.Background()
	parent := w.newTask(t, w.owner, w.agent.Id)
	w.finish(t, parent.Id, store.StepOutcome{Status: taskstate.AwaitingSubAgents, Steps: 1}, nil, nil)
	child, err := w.st().CreateTask(ctx, store.NewTask{AgentID: w.agent.Id, PrincipalID: w.agent.PrincipalId, UserID: w.ownerU.Id, ParentTaskID: &parent.Id, Prompt: "sub", MaxSteps: 3})
	if err != nil {
		t.Fatal(err)
	}
	w.stranger.Post(taskPath(child.ID, "abort-sub-agent"), nil).Expect(t, 404, "NOT_FOUND")
	got := decodeTask(t, w.owner.Post(taskPath(child.ID, "abort-sub-agent"), nil).Expect(t, 200))
	if got.Id != child.ID || got.Status != "ABORTED" || got.ParentTaskId == nil || *got.ParentTaskId != parent.Id {
		t.Fatalf("abort-sub-agent = %+v", got)
	}
	if st := w.taskStatus(t, parent.Id); st != taskstate.Aborted {
		t.Fatalf("parent is %s, want ABORTED", st)
	}
	w.owner.Post(taskPath(child.ID, "abort-sub-agent"), nil).Expect(t, 409, "INVALID_STATE")
}

func readURLCall(id, url string) store.NewToolCall {
	return store.NewToolCall{ProviderCallID: id, ToolClass: "core.ReadURLTool", Name: "read_url", Operation: "fetch",
		Status: store.ToolCallPendingApproval, Arguments: map[string]any{"url": url}}
}

func TestTaskApproveReject(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	ctx := context.Background()
	tk := w.newTask(t, w.owner, w.agent.Id)
	w.owner.Post(taskPath(tk.Id, "approve"), map[string]any{"decisions": []any{map[string]any{"provider_call_id": "c1", "decision": "approve"}}}).Expect(t, 409, "INVALID_STATE")
	w.owner.Post(taskPath(tk.Id, "reject"), map[string]any{"reason": "no"}).Expect(t, 409, "INVALID_STATE")
	w.finish(t, tk.Id, store.StepOutcome{Status: taskstate.PendingApproval, Steps: 1}, []store.NewToolCall{readURLCall("c1", "https://a.example"), readURLCall("c2", "https://b.example")}, nil)

	got := decodeTask(t, w.owner.Get(taskPath(tk.Id, "")).Expect(t, 200))
	if got.Status != "PENDING_APPROVAL" || got.Pending == nil || len(got.Pending.ToolCalls) != 2 || len(got.Pending.Questions) != 0 {
		t.Fatalf("pending task = %+v", got)
	}
	pc := got.Pending.ToolCalls[0]
	if pc.ProviderCallId != "c1" || pc.Name != "read_url" || pc.Operation != "fetch" || pc.Description == "" || pc.Arguments["url"] != "https://a.example" {
		t.Fatalf("pending call = %+v", pc)
	}
	w.owner.Post(taskPath(tk.Id, "abort"), nil).Expect(t, 409, "INVALID_STATE") // paused

	dec := func(ds ...map[string]any) map[string]any { return map[string]any{"decisions": ds} }
	for name, body := range map[string]any{
		"unknown id":       dec(map[string]any{"provider_call_id": "zz", "decision": "approve"}),
		"twice":            dec(map[string]any{"provider_call_id": "c1", "decision": "approve"}, map[string]any{"provider_call_id": "c1", "decision": "reject"}),
		"row id":           dec(map[string]any{"provider_call_id": fmt.Sprint(pc.Id), "decision": "approve"}),
		"bad decision":     dec(map[string]any{"provider_call_id": "c1", "decision": "maybe"}),
		"empty decisions":  dec(),
		"args on reject":   dec(map[string]any{"provider_call_id": "c1", "decision": "reject", "arguments": map[string]any{}}),
		"missing decision": dec(map[string]any{"provider_call_id": "c1"}),
	} {
		t.Run(name, func(t *testing.T) {
			w.owner.Post(taskPath(tk.Id, "approve"), body).Expect(t, 422, "VALIDATION_ERROR")
		})
	}
	w.owner.Post(taskPath(tk.Id, "reject"), map[string]any{}).Expect(t, 422, "VALIDATION_ERROR")

	// Partial: approve c1 with edited arguments → still PENDING_APPROVAL with c2 left.
	part := decodeTask(t, w.owner.Post(taskPath(tk.Id, "approve"), dec(map[string]any{"provider_call_id": "c1", "decision": "approve", "arguments": map[string]any{"url": "https://safe.example"}})).Expect(t, 200))
	if part.Status != "PENDING_APPROVAL" || len(part.Pending.ToolCalls) != 1 || part.Pending.ToolCalls[0].ProviderCallId != "c2" {
		t.Fatalf("after partial approve = %+v", part)
	}
	w.owner.Post(taskPath(tk.Id, "approve"), dec(map[string]any{"provider_call_id": "c1", "decision": "approve"})).Expect(t, 422, "VALIDATION_ERROR") // already decided
	fin := decodeTask(t, w.owner.Post(taskPath(tk.Id, "approve"), dec(map[string]any{"provider_call_id": "c2", "decision": "reject", "reason": "not that one"})).Expect(t, 200))
	if fin.Status != "QUEUED" || fin.Pending != nil {
		t.Fatalf("after last decision = %+v", fin)
	}
	calls, _ := w.st().ToolCalls(ctx, tk.Id)
	if calls[0].Status != store.ToolCallApproved || calls[0].ApprovedArguments["url"] != "https://safe.example" || calls[0].ProposedArguments["url"] != "https://a.example" ||
		calls[0].DecidedBy == nil || *calls[0].DecidedBy != w.ownerU.Id || calls[0].DecidedAt == nil {
		t.Fatalf("approved call = %+v", calls[0])
	}
	if calls[1].Status != store.ToolCallRejected || *calls[1].Reason != "not that one" {
		t.Fatalf("rejected call = %+v", calls[1])
	}

	// Reject-all on a second task (the first leaves the queue first).
	w.owner.Post(taskPath(tk.Id, "abort"), nil).Expect(t, 200)
	tk2 := w.newTask(t, w.owner, w.agent.Id)
	w.finish(t, tk2.Id, store.StepOutcome{Status: taskstate.PendingApproval}, []store.NewToolCall{readURLCall("d1", "https://c.example"), readURLCall("d2", "https://d.example")}, nil)
	rj := decodeTask(t, w.owner.Post(taskPath(tk2.Id, "reject"), map[string]any{"reason": "Do not fetch external pages."}).Expect(t, 200))
	if rj.Status != "QUEUED" {
		t.Fatalf("after reject = %+v", rj)
	}
	calls, _ = w.st().ToolCalls(ctx, tk2.Id)
	for _, c := range calls {
		if c.Status != store.ToolCallRejected || *c.Reason != "Do not fetch external pages." || len(c.Result) == 0 {
			t.Fatalf("rejected call = %+v", c)
		}
	}
}

func TestTaskAnswer(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	tk := w.newTask(t, w.owner, w.agent.Id)
	ans := func(callID string, answers ...map[string]any) map[string]any {
		return map[string]any{"tool_call_id": callID, "answers": answers}
	}
	ok := ans("q1", map[string]any{"header": "Format", "selections": []string{"PDF"}}, map[string]any{"header": "Extras", "selections": []string{"TOC", "Index"}, "free_text": "and a cover"})
	w.owner.Post(taskPath(tk.Id, "answer"), ok).Expect(t, 409, "INVALID_STATE")
	qs := []store.Question{
		{Question: "Which format?", Header: "Format", Options: []string{"PDF", "Markdown"}},
		{Question: "Which extras?", Header: "Extras", Options: []string{"TOC", "Index", "Cover"}, Multiple: true, AllowFreeText: true},
	}
	w.finish(t, tk.Id, store.StepOutcome{Status: taskstate.AwaitingInput, Steps: 1}, nil, map[string][]store.Question{
		"q1": qs, "q2": {{Question: "Language?", Header: "Lang", Options: []string{"en", "fr"}}},
	})
	got := decodeTask(t, w.owner.Get(taskPath(tk.Id, "")).Expect(t, 200))
	if got.Status != "AWAITING_INPUT" || got.Pending == nil || len(got.Pending.Questions) != 2 || len(got.Pending.ToolCalls) != 0 ||
		got.Pending.Questions[0].ToolCallId != "q1" || !got.Pending.Questions[0].Questions[1].Multiple {
		t.Fatalf("awaiting task = %+v", got)
	}
	fmtPDF := map[string]any{"header": "Format", "selections": []string{"PDF"}}
	for name, body := range map[string]any{
		"unknown batch":      ans("zz", fmtPDF),
		"unknown header":     ans("q1", fmtPDF, map[string]any{"header": "Size", "selections": []string{"TOC"}}),
		"unknown selection":  ans("q1", map[string]any{"header": "Format", "selections": []string{"Word"}}, map[string]any{"header": "Extras", "selections": []string{"TOC"}}),
		"missing question":   ans("q1", fmtPDF),
		"two on single":      ans("q1", map[string]any{"header": "Format", "selections": []string{"PDF", "Markdown"}}, map[string]any{"header": "Extras", "selections": []string{"TOC"}}),
		"free text refused":  ans("q1", map[string]any{"header": "Format", "selections": []string{"PDF"}, "free_text": "x"}, map[string]any{"header": "Extras", "selections": []string{"TOC"}}),
		"empty answer":       ans("q1", map[string]any{"header": "Format", "selections": []string{}}, map[string]any{"header": "Extras", "selections": []string{"TOC"}}),
		"header twice":       ans("q1", fmtPDF, fmtPDF, map[string]any{"header": "Extras", "selections": []string{"TOC"}}),
		"no answers":         ans("q1"),
		"missing selections": ans("q1", map[string]any{"header": "Format"}),
		"unknown field":      map[string]any{"tool_call_id": "q1", "answers": []any{fmtPDF}, "extra": true},
	} {
		t.Run(name, func(t *testing.T) {
			w.owner.Post(taskPath(tk.Id, "answer"), body).Expect(t, 422, "VALIDATION_ERROR")
		})
	}
	first := decodeTask(t, w.owner.Post(taskPath(tk.Id, "answer"), ok).Expect(t, 200))
	if first.Status != "AWAITING_INPUT" || len(first.Pending.Questions) != 1 || first.Pending.Questions[0].ToolCallId != "q2" {
		t.Fatalf("after first batch = %+v", first)
	}
	w.owner.Post(taskPath(tk.Id, "answer"), ok).Expect(t, 422, "VALIDATION_ERROR") // already answered
	last := decodeTask(t, w.owner.Post(taskPath(tk.Id, "answer"), ans("q2", map[string]any{"header": "Lang", "selections": []string{"fr"}})).Expect(t, 200))
	if last.Status != "QUEUED" || last.Pending != nil {
		t.Fatalf("after last batch = %+v", last)
	}
}

func TestTaskContinueRetryCancel(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	ctx := context.Background()
	tk := w.newTask(t, w.owner, w.agent.Id)
	w.owner.Post(taskPath(tk.Id, "continue"), map[string]any{"prompt": "more"}).Expect(t, 409, "INVALID_STATE") // QUEUED
	w.owner.Post(taskPath(tk.Id, "retry"), nil).Expect(t, 409, "INVALID_STATE")
	w.owner.Delete(taskPath(tk.Id, "retry-chain")).Expect(t, 409, "INVALID_STATE")

	w.finish(t, tk.Id, store.StepOutcome{Status: taskstate.Completed, Answer: new("first answer"), Steps: 2, InputTokens: 100, OutputTokens: 20}, nil, nil)
	done := decodeTask(t, w.owner.Get(taskPath(tk.Id, "")).Expect(t, 200))
	if done.Status != "COMPLETED" || *done.Answer != "first answer" || done.Usage.InputTokens != 100 || done.StepsUsed != 2 || done.FinishedAt == nil {
		t.Fatalf("completed = %+v", done)
	}
	for name, body := range map[string]any{
		"steps 0":   map[string]any{"prompt": "x", "additional_steps": 0},
		"steps 101": map[string]any{"prompt": "x", "additional_steps": 101},
		"media":     map[string]any{"prompt": "x", "media_ids": []string{"m"}},
		"blank":     map[string]any{"prompt": " "},
		"missing":   map[string]any{},
	} {
		t.Run(name, func(t *testing.T) {
			w.owner.Post(taskPath(tk.Id, "continue"), body).Expect(t, 422, "VALIDATION_ERROR")
		})
	}
	cont := decodeTask(t, w.owner.Post(taskPath(tk.Id, "continue"), map[string]any{"prompt": "Now in French", "additional_steps": 3}).Expect(t, 200))
	if cont.Status != "QUEUED" || cont.MaxSteps != 5 || cont.Answer != nil || cont.FinishedAt != nil || cont.Prompt != "Summarise the report" {
		t.Fatalf("continued = %+v", cont)
	}
	msgs, _ := w.st().Messages(ctx, tk.Id, 0)
	if len(msgs) != 2 || msgs[1].Text != "Now in French" || msgs[1].Role != store.RoleUser {
		t.Fatalf("messages = %+v", msgs)
	}

	// FAILED: retry, then a failure with a pending automatic retry, cancelled.
	w.finish(t, tk.Id, store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeRateLimit, Message: "429"}}, nil, nil)
	failed := decodeTask(t, w.owner.Get(taskPath(tk.Id, "")).Expect(t, 200))
	if failed.Error == nil || failed.Error.Code != "RATE_LIMIT" || failed.NextRetryAt != nil {
		t.Fatalf("failed = %+v", failed)
	}
	w.owner.Delete(taskPath(tk.Id, "retry-chain")).Expect(t, 409, "INVALID_STATE") // no chain
	rt := decodeTask(t, w.owner.Post(taskPath(tk.Id, "retry"), nil).Expect(t, 200))
	if rt.Status != "QUEUED" || rt.RetryCount != 1 || rt.Error != nil {
		t.Fatalf("retried = %+v", rt)
	}
	w.finish(t, tk.Id, store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeServerError, Message: "502"}}, nil, nil)
	if ok, err := w.st().ScheduleTaskRetry(ctx, tk.Id, 10*time.Minute, 5); err != nil || !ok {
		t.Fatalf("ScheduleTaskRetry = %v, %v", ok, err)
	}
	if decodeTask(t, w.owner.Get(taskPath(tk.Id, "")).Expect(t, 200)).NextRetryAt == nil {
		t.Fatal("next_retry_at not shown")
	}
	cc := decodeTask(t, w.owner.Delete(taskPath(tk.Id, "retry-chain")).Expect(t, 200))
	if cc.Status != "CANCELLED" || cc.NextRetryAt != nil || cc.FinishedAt == nil {
		t.Fatalf("cancelled = %+v", cc)
	}
	w.owner.Delete(taskPath(tk.Id, "retry-chain")).Expect(t, 409, "INVALID_STATE")
	w.owner.Post(taskPath(tk.Id, "continue"), map[string]any{"prompt": "x"}).Expect(t, 409, "INVALID_STATE") // CANCELLED is terminal
	w.owner.Post(taskPath(tk.Id, "retry"), nil).Expect(t, 409, "INVALID_STATE")

	// An agent without follow-ups refuses continue on COMPLETED but not on ABORTED.
	noFollow := mkAgent(t, w.owner, map[string]any{"name": "One shot", "allow_followup": false})
	t2 := w.newTask(t, w.owner, noFollow.Id)
	w.finish(t, t2.Id, store.StepOutcome{Status: taskstate.Completed, Answer: new("done")}, nil, nil)
	w.owner.Post(taskPath(t2.Id, "continue"), map[string]any{"prompt": "again"}).Expect(t, 409, "INVALID_STATE")
	t3 := w.newTask(t, w.owner, noFollow.Id)
	w.owner.Post(taskPath(t3.Id, "abort"), nil).Expect(t, 200)
	c3 := decodeTask(t, w.owner.Post(taskPath(t3.Id, "continue"), map[string]any{"prompt": "again"}).Expect(t, 200))
	if c3.Status != "QUEUED" || c3.MaxSteps != 10 { // steps_used 0 + the agent's default 10
		t.Fatalf("continued aborted = %+v", c3)
	}
}

// TestTaskStateCASConcurrent: of many simultaneous aborts exactly one wins; the others get 409.
func TestTaskStateCASConcurrent(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	tk := w.newTask(t, w.owner, w.agent.Id)
	const n = 8
	clients := make([]*apitest.Client, n) // one session each: a client's cookie jar is not shared
	for i := range clients {
		clients[i] = w.env.Client()
		clients[i].IP = fmt.Sprintf("192.0.2.%d", 100+i) // the login rate limit is per address
		clients[i].Login("owner@example.com", "password-owner@example.com")
	}
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { codes[i] = clients[i].Post(taskPath(tk.Id, "abort"), nil).Status })
	}
	wg.Wait()
	ok, conflict := 0, 0
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 409:
			conflict++
		}
	}
	if ok != 1 || conflict != n-1 {
		t.Fatalf("statuses %v: want one 200 and %d × 409", codes, n-1)
	}
}
