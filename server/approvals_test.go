package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// approvalWorld: a group (owner "lead", admin "manager", member "member") whose agent names as
// approvers the task's owner, the group's managers and a named user outside the group; an
// outsider who is none of these.
type approvalWorld struct {
	*taskWorld
	lead, manager, mem, named, outsider *apitest.Client
	leadID, managerID, memID, namedID   int64
	agent                               gen.Agent
}

func newApprovalWorld(t *testing.T, env *apitest.Env) *approvalWorld {
	t.Helper()
	w := &approvalWorld{taskWorld: &taskWorld{env: env}}
	var u gen.User
	w.lead, u = env.UserClient("lead@example.com")
	w.leadID = u.Id
	w.manager, u = env.UserClient("manager@example.com")
	w.managerID = u.Id
	w.mem, u = env.UserClient("member@example.com")
	w.memID = u.Id
	w.named, u = env.UserClient("named@example.com")
	w.namedID = u.Id
	w.outsider, _ = env.UserClient("outsider@example.com")
	_, principal := mkGroup(t, w.lead, "team", map[int64]string{w.managerID: "admin", w.memID: "member"})
	w.agent = mkAgent(t, w.lead, map[string]any{"name": "Team agent", "principal_id": principal,
		"approvers": map[string]any{"owner": true, "managers": true, "user_ids": []int64{w.namedID}}})
	return w
}

// pending starts a task of the member's and leaves it PENDING_APPROVAL on calls.
func (w *approvalWorld) pending(t *testing.T, calls ...store.NewToolCall) gen.Task {
	t.Helper()
	tk := w.newTask(t, w.mem, w.agent.Id)
	w.finish(t, tk.Id, store.StepOutcome{Status: taskstate.PendingApproval, Steps: 1}, calls, nil)
	if _, err := w.env.App.DrainNotifications(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tk
}

func inbox(t *testing.T, c *apitest.Client, q string) []gen.Approval {
	t.Helper()
	var r gen.ApprovalListResponse
	c.Get("/approvals"+q).Expect(t, http.StatusOK).Decode(t, &r)
	return r.Data.Approvals
}

func TestAgentApproversField(t *testing.T) {
	t.Parallel()
	w := newApprovalWorld(t, apitest.New(t))
	if ap := w.agent.Approvers; !ap.Owner || !ap.Managers || len(ap.UserIds) != 1 || ap.UserIds[0] != w.namedID ||
		w.agent.ApprovalTimeoutSeconds != 0 || w.agent.ApprovalTimeoutAction != "reject" {
		t.Fatalf("agent = %+v", w.agent)
	}
	plain := mkAgent(t, w.lead, map[string]any{"name": "Plain"})
	if ap := plain.Approvers; !ap.Owner || ap.Managers || len(ap.UserIds) != 0 {
		t.Fatalf("default approvers = %+v", ap)
	}
	path := fmt.Sprintf("/agents/%d", plain.Id)
	for name, body := range map[string]map[string]any{
		"nobody":         {"approvers": map[string]any{"owner": false, "managers": false, "user_ids": []int64{}}},
		"unknown user":   {"approvers": map[string]any{"owner": true, "managers": false, "user_ids": []int64{999999}}},
		"negative":       {"approval_timeout_seconds": -1},
		"bad action":     {"approval_timeout_action": "ignore"},
		"partial object": {"approvers": map[string]any{"owner": true}},
	} {
		t.Run(name, func(t *testing.T) {
			w.lead.Patch(path, body).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		})
	}
	var r gen.AgentResponse
	w.lead.Patch(path, map[string]any{"approvers": map[string]any{"owner": false, "managers": true, "user_ids": []int64{w.namedID}},
		"approval_timeout_seconds": 600, "approval_timeout_action": "abort"}).Expect(t, http.StatusOK).Decode(t, &r)
	if a := r.Data.Agent; a.Approvers.Owner || !a.Approvers.Managers || a.ApprovalTimeoutSeconds != 600 || a.ApprovalTimeoutAction != "abort" {
		t.Fatalf("updated = %+v", a)
	}
}

// TestApproversDecide: a manager of the agent's group approves a member's task, a named user
// rejects, an outsider gets 404; each decision records its decider, and the approvers'
// notifications are read once the calls are decided by anyone.
func TestApproversDecide(t *testing.T) {
	t.Parallel()
	w := newApprovalWorld(t, apitest.New(t))
	ctx := context.Background()
	tk := w.pending(t, readURLCall("c1", "https://a.example"), readURLCall("c2", "https://b.example"))

	dec := func(id, decision string) map[string]any {
		return map[string]any{"decisions": []any{map[string]any{"provider_call_id": id, "decision": decision}}}
	}
	w.outsider.Post(taskPath(tk.Id, "approve"), dec("c1", "approve")).Expect(t, http.StatusNotFound, "NOT_FOUND")
	w.outsider.Post(taskPath(tk.Id, "reject"), map[string]any{"reason": "no"}).Expect(t, http.StatusNotFound, "NOT_FOUND")
	if got := inbox(t, w.outsider, ""); len(got) != 0 {
		t.Fatalf("outsider's inbox = %+v", got)
	}
	// The manager and the named user are told; the outsider is not.
	for _, c := range []*apitest.Client{w.manager, w.named, w.mem} {
		ns, unread := listNotifications(t, c, "")
		if len(ns) != 1 || unread != 1 || ns[0].Kind != "pending_approval" {
			t.Fatalf("notifications = %+v", ns)
		}
	}
	if ns, _ := listNotifications(t, w.outsider, ""); len(ns) != 0 {
		t.Fatalf("outsider notified: %+v", ns)
	}

	part := decodeTask(t, w.manager.Post(taskPath(tk.Id, "approve"), dec("c1", "approve")).Expect(t, http.StatusOK))
	if part.Status != "PENDING_APPROVAL" {
		t.Fatalf("after the manager = %+v", part)
	}
	if ns, unread := listNotifications(t, w.named, ""); len(ns) != 1 || unread != 1 {
		t.Fatalf("a call is still pending: the notification stays unread: %+v", ns)
	}
	fin := decodeTask(t, w.named.Post(taskPath(tk.Id, "approve"), dec("c2", "reject")).Expect(t, http.StatusOK))
	if fin.Status != "QUEUED" {
		t.Fatalf("after the named user = %+v", fin)
	}
	calls, err := w.st().ToolCalls(ctx, tk.Id)
	if err != nil {
		t.Fatal(err)
	}
	if *calls[0].DecidedBy != w.managerID || *calls[1].DecidedBy != w.namedID {
		t.Fatalf("deciders = %v, %v", *calls[0].DecidedBy, *calls[1].DecidedBy)
	}
	// The event log shows who decided.
	evs, err := w.st().TaskEvents(ctx, tk.Id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Type == store.EventToolCallDecided && e.ToolCall.DecidedBy != nil {
			seen[fmt.Sprintf("%s:%d", e.ToolCall.ProviderCallID, *e.ToolCall.DecidedBy)] = true
		}
	}
	if !seen[fmt.Sprintf("c1:%d", w.managerID)] || !seen[fmt.Sprintf("c2:%d", w.namedID)] {
		t.Fatalf("decided events = %v", seen)
	}
	if _, err := w.env.App.DrainNotifications(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*apitest.Client{w.manager, w.named, w.mem} {
		if ns, unread := listNotifications(t, c, ""); len(ns) != 1 || unread != 0 || ns[0].ReadAt == nil {
			t.Fatalf("decided: notifications = %+v (unread %d)", ns, unread)
		}
	}

	// An agent whose approvers leave the owner out: the owner's own task answers 403.
	var r gen.AgentResponse
	w.lead.Patch(fmt.Sprintf("/agents/%d", w.agent.Id), map[string]any{"approvers": map[string]any{"owner": false, "managers": false, "user_ids": []int64{w.namedID}}}).
		Expect(t, http.StatusOK).Decode(t, &r)
	w.claim(t, tk.Id) // the queued task out of the way
	tk2 := w.pending(t, readURLCall("c1", "https://a.example"))
	w.mem.Post(taskPath(tk2.Id, "approve"), dec("c1", "approve")).Expect(t, http.StatusForbidden, "FORBIDDEN")
	w.manager.Post(taskPath(tk2.Id, "approve"), dec("c1", "approve")).Expect(t, http.StatusNotFound, "NOT_FOUND")
	w.named.Post(taskPath(tk2.Id, "reject"), map[string]any{"reason": "no"}).Expect(t, http.StatusOK)
}

// TestApprovalsInbox: the inbox lists only what the caller may decide, with its context,
// filters and paging; batch decisions are applied one by one.
func TestApprovalsInbox(t *testing.T) {
	t.Parallel()
	w := newApprovalWorld(t, apitest.New(t))
	t1 := w.pending(t, readURLCall("c1", "https://a.example"), readURLCall("c2", "https://b.example"))
	w.env.Clock.Advance(time.Hour)
	t2 := w.pending(t, store.NewToolCall{ProviderCallID: "k1", ToolClass: "core.CalculatorTool", Name: "calculator",
		Operation: "calculate", Status: store.ToolCallPendingApproval, Arguments: map[string]any{"expression": "1+1"}})
	// The lead's own agent (default approvers): only the lead decides it.
	own := mkAgent(t, w.lead, map[string]any{"name": "Lead's"})
	t3 := w.newTask(t, w.lead, own.Id)
	w.finish(t, t3.Id, store.StepOutcome{Status: taskstate.PendingApproval, Steps: 1}, []store.NewToolCall{readURLCall("x1", "https://x.example")}, nil)

	all := inbox(t, w.named, "")
	if len(all) != 3 || all[0].TaskId != t1.Id || all[2].TaskId != t2.Id {
		t.Fatalf("named inbox = %+v", all)
	}
	it := all[0]
	if it.Kind != gen.ToolCall || it.AgentId != w.agent.Id || it.AgentName != "Team agent" || it.TaskTitle != "Summarise the report" ||
		it.TaskUserId != w.memID || it.ToolCall == nil || it.ToolCall.Operation != "fetch" || it.ToolCall.Arguments["url"] != "https://a.example" ||
		it.QuestionBatch != nil {
		t.Fatalf("item = %+v", it)
	}
	if got := inbox(t, w.lead, ""); len(got) != 4 { // a manager of the group, and the owner of t3
		t.Fatalf("lead's inbox = %+v", got)
	}
	if got := inbox(t, w.named, "?tool=calculator"); len(got) != 1 || got[0].TaskId != t2.Id {
		t.Fatalf("tool filter = %+v", got)
	}
	if got := inbox(t, w.named, "?older_than=1800"); len(got) != 2 || got[1].TaskId != t1.Id {
		t.Fatalf("older_than = %+v", got)
	}
	if got := inbox(t, w.lead, fmt.Sprintf("?agent_id=%d", own.Id)); len(got) != 1 || got[0].TaskId != t3.Id {
		t.Fatalf("agent filter = %+v", got)
	}
	p1, p2 := inbox(t, w.named, "?per_page=2"), inbox(t, w.named, "?per_page=2&page=2")
	if len(p1) != 2 || len(p2) != 1 || p2[0].TaskId != t2.Id {
		t.Fatalf("pages = %+v / %+v", p1, p2)
	}
	w.named.Get("/approvals?older_than=-1").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")

	// Batch: two good decisions, one on a task the named user may not decide, one unknown call.
	var res gen.ApprovalDecisionResults
	w.named.Post("/approvals/decisions", map[string]any{"decisions": []any{
		map[string]any{"task_id": t1.Id, "provider_call_id": "c1", "decision": "approve"},
		map[string]any{"task_id": t3.Id, "provider_call_id": "x1", "decision": "approve"},
		map[string]any{"task_id": t1.Id, "provider_call_id": "nope", "decision": "approve"},
		map[string]any{"task_id": t1.Id, "provider_call_id": "c2", "decision": "reject", "reason": "not b"},
	}}).Expect(t, http.StatusOK).Decode(t, &res)
	rs := res.Data.Results
	if len(rs) != 4 || !rs[0].Ok || *rs[0].TaskStatus != "PENDING_APPROVAL" || rs[1].Ok || rs[1].Error.Error.Code != gen.ErrorCodeNOTFOUND ||
		rs[2].Ok || rs[2].Error.Error.Code != gen.ErrorCodeVALIDATIONERROR || !rs[3].Ok || *rs[3].TaskStatus != "QUEUED" {
		t.Fatalf("batch = %+v", rs)
	}
	w.named.Post("/approvals/decisions", map[string]any{"decisions": []any{}}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	if got := inbox(t, w.named, ""); len(got) != 1 || got[0].TaskId != t2.Id {
		t.Fatalf("after the batch = %+v", got)
	}

	// A question batch: listed with its questions, answered by the named user, who is recorded.
	w.claim(t, t1.Id) // the queued task out of the way
	t4 := w.newTask(t, w.mem, w.agent.Id)
	w.finish(t, t4.Id, store.StepOutcome{Status: taskstate.AwaitingInput, Steps: 1}, nil,
		map[string][]store.Question{"q1": {{Question: "Which?", Header: "Pick", Options: []string{"a", "b"}}}})
	got := inbox(t, w.named, "")
	if len(got) != 2 || got[1].Kind != gen.QuestionBatch || got[1].QuestionBatch == nil || got[1].QuestionBatch.ToolCallId != "q1" || got[1].ToolCall != nil {
		t.Fatalf("with a question = %+v", got)
	}
	w.outsider.Post(taskPath(t4.Id, "answer"), map[string]any{"tool_call_id": "q1", "answers": []any{map[string]any{"header": "Pick", "selections": []string{"a"}}}}).
		Expect(t, http.StatusNotFound, "NOT_FOUND")
	w.named.Post(taskPath(t4.Id, "answer"), map[string]any{"tool_call_id": "q1", "answers": []any{map[string]any{"header": "Pick", "selections": []string{"a"}}}}).
		Expect(t, http.StatusOK)
	evs, err := w.st().TaskEvents(context.Background(), t4.Id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	answered := false
	for _, e := range evs {
		if e.Type == store.EventQuestionAnswered {
			answered = e.Questions.AnsweredBy != nil && *e.Questions.AnsweredBy == w.namedID
		}
	}
	if !answered {
		t.Fatalf("the answer does not name the named user: %+v", evs)
	}
}

// TestApprovalTimeoutOnce: two processes on one database expire a call whose agent's approval
// timeout ran out; exactly one decides it, as the system, visibly in the event log.
func TestApprovalTimeoutOnce(t *testing.T) {
	t.Parallel()
	a := apitest.New(t)
	b := apitest.NewWith(t, apitest.Options{Store: storetest.Twin(t, a.App.Store)})
	w := newApprovalWorld(t, a)
	ctx := context.Background()
	w.lead.Patch(fmt.Sprintf("/agents/%d", w.agent.Id), map[string]any{"approval_timeout_seconds": 600}).Expect(t, http.StatusOK)
	tk := w.pending(t, readURLCall("c1", "https://a.example"))
	for _, e := range []*apitest.Env{a, b} {
		if moved, err := e.App.Approvals.Expire(ctx); err != nil || len(moved) != 0 {
			t.Fatalf("before the timeout: %v, %v", moved, err)
		}
		e.Clock.Advance(601 * time.Second)
	}
	var wg sync.WaitGroup
	moved := make([][]int64, 4)
	for i := range moved {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if moved[i], err = []*apitest.Env{a, b}[i%2].App.Approvals.Expire(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, m := range moved {
		n += len(m)
	}
	if n != 1 {
		t.Fatalf("expired %d times: %v", n, moved)
	}
	calls, _ := w.st().ToolCalls(ctx, tk.Id)
	if c := calls[0]; c.Status != store.ToolCallRejected || !c.DecidedBySystem || c.DecidedBy != nil || *c.Reason != store.ApprovalTimeoutReason {
		t.Fatalf("call = %+v", c)
	}
	if st := w.taskStatus(t, tk.Id); st != taskstate.Queued {
		t.Fatalf("task = %s", st)
	}
	evs, err := w.st().TaskEvents(ctx, tk.Id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	decided := 0
	for _, e := range evs {
		if e.Type == store.EventToolCallDecided {
			decided++
			if by := chat.DecidedBy(e.ToolCall); by == nil || *by != "system" { // the event stream's decided_by
				t.Fatalf("decided event = %+v", e.ToolCall)
			}
		}
	}
	if decided != 1 {
		t.Fatalf("%d decided events", decided)
	}

	// abort: the housekeeping pass (client mode's endpoint runs the same chores) aborts the task.
	w.lead.Patch(fmt.Sprintf("/agents/%d", w.agent.Id), map[string]any{"approval_timeout_action": "abort"}).Expect(t, http.StatusOK)
	w.claim(t, tk.Id) // take the queued task out of the way: a fresh one waits
	t2 := w.pending(t, readURLCall("d1", "https://a.example"))
	a.Clock.Advance(601 * time.Second)
	if moved, err := a.App.Approvals.Expire(ctx); err != nil || len(moved) != 1 || moved[0] != t2.Id {
		t.Fatalf("abort: %v, %v", moved, err)
	}
	if st := w.taskStatus(t, t2.Id); st != taskstate.Aborted {
		t.Fatalf("task = %s", st)
	}
}

// TestOperationApprovalTimeoutField: an operation override's approval timeout is stored, shown,
// replaced with the rest of the override, and bounded like the agent's.
func TestOperationApprovalTimeoutField(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c, _ := env.UserClient("owner@example.com")
	a := mkAgent(t, c, map[string]any{"name": "Timeouts"})
	op := fmt.Sprintf("/agents/%d/tools/core.ReadURLTool/operations/fetch", a.Id)
	var r gen.AgentToolOperationResponse
	c.Patch(op, map[string]any{"enabled": nil, "auto_approve": false, "approval_timeout_seconds": 45}).Expect(t, http.StatusOK).Decode(t, &r)
	if got := r.Data.Operation.ApprovalTimeoutSeconds; got == nil || *got != 45 {
		t.Fatalf("approval_timeout_seconds after PATCH = %v, want 45", got)
	}
	for name, v := range map[string]any{"negative": -1, "over the INT range": int64(1) << 31, "a string": "45"} {
		c.Patch(op, map[string]any{"enabled": nil, "auto_approve": false, "approval_timeout_seconds": v}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		c.Get(op).Expect(t, http.StatusOK).Decode(t, &r)
		if got := r.Data.Operation.ApprovalTimeoutSeconds; got == nil || *got != 45 {
			t.Fatalf("%s: stored %v after a refused PATCH, want 45 kept", name, got)
		}
	}
	// The body replaces the override: leaving the timeout out removes it.
	c.Patch(op, map[string]any{"enabled": nil, "auto_approve": false}).Expect(t, http.StatusOK).Decode(t, &r)
	if got := r.Data.Operation.ApprovalTimeoutSeconds; got != nil {
		t.Fatalf("approval_timeout_seconds = %d after a PATCH without it, want null", *got)
	}
}
