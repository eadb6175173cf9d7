package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// eventLog renders a task's events as "1:status:QUEUED 2:message …" for comparison.
func eventLog(t *testing.T, s *store.Store, id int64) string {
	t.Helper()
	evs, err := s.TaskEvents(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, e := range evs {
		p := e.Type
		switch {
		case e.Status != nil:
			p += ":" + e.Status.Status
		case e.Delta != nil:
			p += ":" + e.Delta.Text
		case e.Message != nil:
			p += ":" + e.Message.Role
		}
		parts = append(parts, strconv.FormatInt(e.Sequence, 10)+":"+p)
	}
	return strings.Join(parts, " ")
}

// TestTaskEventLog: events are numbered per task in the order of their transactions; a turn's
// deltas disappear when its message is stored and their numbers are never given again; a
// failed turn keeps no delta; a transient failure the agent retries is marked retrying.
func TestTaskEventLog(t *testing.T) {
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.claimOne(t, "w1")
	for _, d := range []string{"Hel", "lo"} {
		if err := f.s.AppendDelta(ctx, tk.ID, "w1", store.Delta{Text: d}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.s.AppendDelta(ctx, tk.ID, "w2", store.Delta{Text: "x"}); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("delta without the lease: %v", err)
	}
	if got, want := eventLog(t, f.s, tk.ID), "1:status:QUEUED 2:message:user 3:status:RUNNING 4:delta:Hel 5:delta:lo"; got != want {
		t.Fatalf("log = %s, want %s", got, want)
	}
	if _, _, err := f.s.AppendAssistantTurn(ctx, tk.ID, "w1", store.NewTaskMessage{Role: store.RoleAssistant, Text: "Hello", Streamed: true}, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := eventLog(t, f.s, tk.ID), "1:status:QUEUED 2:message:user 3:status:RUNNING 6:message:assistant"; got != want {
		t.Fatalf("log after the streamed turn = %s, want %s", got, want)
	}
	if _, err := f.s.FinishStep(ctx, tk.ID, "w1", store.StepOutcome{Status: taskstate.Running, Steps: 1}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.AppendDelta(ctx, tk.ID, "w1", store.Delta{Text: "par"}); err != nil {
		t.Fatal(err)
	}
	out, err := f.s.FinishStep(ctx, tk.ID, "w1", store.StepOutcome{Status: taskstate.Failed,
		Error: &store.TaskError{Code: taskstate.CodeServerError, Message: "boom"}})
	if err != nil || out.Status != taskstate.Failed {
		t.Fatalf("FinishStep = %+v, %v", out, err)
	}
	if got, want := eventLog(t, f.s, tk.ID), "1:status:QUEUED 2:message:user 3:status:RUNNING 6:message:assistant 8:status:FAILED"; got != want {
		t.Fatalf("log = %s, want %s", got, want)
	}
	evs, err := f.s.TaskEvents(ctx, tk.ID, 6, 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events after 6 = %v, %v", evs, err)
	}
	st := evs[0].Status
	if st.Error == nil || st.Error.Code != taskstate.CodeServerError || st.Retrying != (f.agent.MaxRetries > 0) || st.StepsUsed != 1 {
		t.Fatalf("failed status = %+v (agent max_retries %d)", st, f.agent.MaxRetries)
	}
	if f.agent.MaxRetries > 0 && evs[0].Ends() {
		t.Fatal("a failure that will be retried ends the run")
	}
	cs, err := f.s.EventCursors(ctx, []int64{tk.ID, 999999})
	if err != nil || len(cs) != 1 || cs[0].EventSeq != 8 || !cs[0].Ended {
		t.Fatalf("cursors = %+v, %v", cs, err)
	}
	// Paging: a limit returns the first events after the cursor.
	if evs, err := f.s.TaskEvents(ctx, tk.ID, 0, 2); err != nil || len(evs) != 2 || evs[1].Sequence != 2 {
		t.Fatalf("first page = %v, %v", evs, err)
	}
}

// TestMessageEventsStoreTheTextOnce: a message event keeps only its message's sequence (the
// turn's text is in task_messages), and TaskEvents gives the whole message back, as it does for
// an event written with the message in it (as events were before).
func TestMessageEventsStoreTheTextOnce(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.claimOne(t, "w1")
	text := "The answer, told once: " + strings.Repeat("forty-two ", 20)
	if _, _, err := f.s.FinishTurn(ctx, tk.ID, "w1", store.NewTaskMessage{Role: store.RoleAssistant, Text: text},
		store.StepOutcome{Status: taskstate.Completed, Answer: &text, Steps: 1}); err != nil {
		t.Fatal(err)
	}
	db := f.s.GormDBForTest()
	var data []string
	if err := db.Raw("SELECT data FROM task_events WHERE task_id = ? AND type = ? ORDER BY sequence", tk.ID, store.EventMessage).Scan(&data).Error; err != nil || len(data) != 2 {
		t.Fatalf("message events = %v, %v", data, err)
	}
	for _, d := range data {
		if strings.Contains(d, "forty-two") || strings.Contains(d, "do it") || !strings.Contains(d, `"message_seq"`) {
			t.Fatalf("a message event holds %s; want its message's sequence only", d)
		}
	}
	// An event of the former shape (the message copied in) reads as before.
	if err := db.Exec("UPDATE task_events SET data = ? WHERE task_id = ? AND type = ? AND sequence = 2", `{"message":{"Sequence":1,"Role":"user","Text":"old copy"}}`,
		tk.ID, store.EventMessage).Error; err != nil {
		t.Fatal(err)
	}
	evs, err := f.s.TaskEvents(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Message != nil {
			got = append(got, strconv.Itoa(e.Message.Sequence)+":"+e.Message.Role+":"+e.Message.Text)
		}
	}
	if want := []string{"1:user:old copy", "2:assistant:" + text}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("messages of the events = %q, want %q", got, want)
	}
}

// TestTaskEventsOfReapAndDecisions: a reaped task's deltas are dropped with its status
// recorded; decisions and executions are recorded as snapshots of the call at that moment.
func TestTaskEventsOfReapAndDecisions(t *testing.T) {
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.claimOne(t, "w1")
	if err := f.s.AppendDelta(ctx, tk.ID, "w1", store.Delta{Text: "lost"}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute)
	if r, err := f.s.ReapStale(ctx, f.clock.Now()); err != nil || len(r.Requeued) != 1 {
		t.Fatalf("reap = %+v, %v", r, err)
	}
	if got, want := eventLog(t, f.s, tk.ID), "1:status:QUEUED 2:message:user 3:status:RUNNING 5:status:QUEUED"; got != want {
		t.Fatalf("log after reap = %s, want %s", got, want)
	}
	if _, err := f.s.ClaimQueued(ctx, "w2", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	_, calls, err := f.s.AppendAssistantTurn(ctx, tk.ID, "w2", store.NewTaskMessage{Role: store.RoleAssistant,
		ToolCalls: []store.MessageToolCall{{ProviderCallID: "c1", Name: "calc", Arguments: []byte(`{"x":1}`)}}},
		[]store.NewToolCall{{ProviderCallID: "c1", ToolClass: "core.CalculatorTool", Name: "calc", Operation: "calculate",
			Status: store.ToolCallPendingApproval, Arguments: map[string]any{"x": 1}}})
	if err != nil || len(calls) != 1 {
		t.Fatalf("turn = %v, %v", calls, err)
	}
	if _, err := f.s.FinishStep(ctx, tk.ID, "w2", store.StepOutcome{Status: taskstate.PendingApproval, Steps: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.DecideToolCalls(ctx, tk.ID, f.user.ID, []store.ToolDecision{{ProviderCallID: "c1", Approve: true}}); err != nil {
		t.Fatal(err)
	}
	evs, err := f.s.TaskEvents(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Type)
	}
	want := "status message status status status message tool_call.proposed status tool_call.decided status"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("kinds = %s, want %s", strings.Join(kinds, " "), want)
	}
	if p := evs[6].ToolCall; p.Status != store.ToolCallPendingApproval || p.DecidedBy != nil {
		t.Fatalf("proposed snapshot = %+v", p)
	}
	if d := evs[8].ToolCall; d.Status != store.ToolCallApproved || d.DecidedBy == nil || *d.DecidedBy != f.user.ID {
		t.Fatalf("decided snapshot = %+v", d)
	}
	if evs[9].Status.Status != taskstate.Queued {
		t.Fatalf("after the decision: %+v", evs[9].Status)
	}
}

// turnOfTwoCalls records, under w1's lease, an assistant turn with two calculator calls, c1
// started with its row and c2 not.
func turnOfTwoCalls(f *taskFixture, taskID int64) ([]store.ToolCall, error) {
	_, calls, err := f.s.AppendAssistantTurn(context.Background(), taskID, "w1", store.NewTaskMessage{Role: store.RoleAssistant,
		ToolCalls: []store.MessageToolCall{{ProviderCallID: "c1", Name: "calc", Arguments: []byte(`{}`)}, {ProviderCallID: "c2", Name: "calc", Arguments: []byte(`{}`)}}},
		[]store.NewToolCall{
			{ProviderCallID: "c1", ToolClass: "core.CalculatorTool", Name: "calc", Operation: "calculate", Status: store.ToolCallPending, Started: true},
			{ProviderCallID: "c2", ToolClass: "core.CalculatorTool", Name: "calc", Operation: "calculate", Status: store.ToolCallPending},
		})
	return calls, err
}

// TestToolCallStartedWithItsTurn: a call recorded as started with its turn (NewToolCall.Started)
// is never begun again (a worker that died before its result left it interrupted), and a step's
// outcome can carry the last call's result, recorded with its event in the step's transaction.
func TestToolCallStartedWithItsTurn(t *testing.T) {
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.claimOne(t, "w1")
	calls, err := turnOfTwoCalls(f, tk.ID)
	if err != nil || len(calls) != 2 || calls[0].ExecutedAt == nil || calls[1].ExecutedAt != nil {
		t.Fatalf("turn = %+v, %v", calls, err)
	}
	if err := f.s.BeginToolCall(ctx, tk.ID, "w1", calls[0].ID); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("begin of a call started with its turn: %v", err)
	}
	if err := f.s.BeginToolCall(ctx, tk.ID, "w1", calls[1].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.FinishStep(ctx, tk.ID, "w1", store.StepOutcome{Status: taskstate.Running, Steps: 1,
		ToolResult: &store.ToolResult{CallID: calls[1].ID, ToolCallUpdate: store.ToolCallUpdate{Status: store.ToolCallExecuted, Result: []byte(`{"content":"2"}`)}}}); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.ToolCalls(ctx, tk.ID)
	if err != nil || got[1].Status != store.ToolCallExecuted || string(got[1].Result) != `{"content":"2"}` || got[0].Status != store.ToolCallPending {
		t.Fatalf("calls after the step = %+v, %v", got, err)
	}
	evs, err := f.s.TaskEvents(ctx, tk.ID, 0, 0)
	if last := evs[len(evs)-1]; err != nil || last.Type != store.EventToolCallExecuted || last.ToolCall == nil ||
		last.ToolCall.ProviderCallID != "c2" || last.ToolCall.Status != store.ToolCallExecuted {
		t.Fatalf("events = %s, %v", eventLog(t, f.s, tk.ID), err)
	}
	if _, err := f.s.FinishStep(ctx, tk.ID, "w1", store.StepOutcome{Status: taskstate.Running,
		ToolResult: &store.ToolResult{CallID: calls[1].ID, ToolCallUpdate: store.ToolCallUpdate{Status: store.ToolCallPending}}}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("a result that is no outcome: %v", err)
	}
}

// TestRestartToolCall: only a call a crash interrupted (started, never finished) is started
// again, each restart counted and shown in its executed event; a call never started, or one
// finished, is not; a worker that lost the lease restarts nothing.
func TestRestartToolCall(t *testing.T) {
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.claimOne(t, "w1")
	calls, err := turnOfTwoCalls(f, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.RestartToolCall(ctx, tk.ID, "w1", calls[1].ID); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("restart of a call never started: %v", err)
	}
	if err := f.s.RestartToolCall(ctx, tk.ID, "w2", calls[0].ID); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("restart under another worker's lease: %v", err)
	}
	for range 2 { // two crashes in a row
		if err := f.s.RestartToolCall(ctx, tk.ID, "w1", calls[0].ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.s.UpdateToolCall(ctx, tk.ID, "w1", calls[0].ID, store.ToolCallUpdate{Status: store.ToolCallExecuted, Result: []byte(`{"content":"2"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.RestartToolCall(ctx, tk.ID, "w1", calls[0].ID); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("restart of a finished call: %v", err)
	}
	got, err := f.s.ToolCalls(ctx, tk.ID)
	if err != nil || got[0].Restarts != 2 || got[0].Status != store.ToolCallExecuted || got[1].Restarts != 0 {
		t.Fatalf("calls = %+v, %v", got, err)
	}
	evs, err := f.s.TaskEvents(ctx, tk.ID, 0, 0)
	if last := evs[len(evs)-1]; err != nil || last.Type != store.EventToolCallExecuted || last.ToolCall.Restarts != 2 {
		t.Fatalf("events = %s, %v", eventLog(t, f.s, tk.ID), err)
	}
}

// TestStatusEventNamesItsAnswer: a COMPLETED status event whose answer is the text of the step's
// own message stores the message's sequence, not the text a third time (tasks.answer, the
// message), and reads back with the answer — through TaskEvents and in a notice's facts; an
// answer that is not the message's text stays in the event.
func TestStatusEventNamesItsAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	follow(t, s, u.ID, store.SubscribeAgent, a.ID) // so that the completions leave notices
	ids := claimTasks(t, s, a, u.ID, 2)
	answer := "The ledger balances: 42 entries, none disputed."
	for i, text := range []string{answer, "Here is my answer."} {
		if _, _, err := s.FinishTurn(ctx, ids[i], "w", store.NewTaskMessage{Role: store.RoleAssistant, Text: text},
			store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for i, named := range []bool{true, false} {
		var data string
		if err := s.GormDBForTest().Raw("SELECT data FROM task_events WHERE task_id = ? AND type = ? ORDER BY sequence DESC LIMIT 1",
			ids[i], store.EventStatus).Scan(&data).Error; err != nil {
			t.Fatal(err)
		}
		if strings.Contains(data, "answer_seq") != named || strings.Contains(data, answer) == named {
			t.Errorf("task %d's status event stored %s (want the answer named by its message: %v)", i, data, named)
		}
		evs, err := s.TaskEvents(ctx, ids[i], 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if st := evs[len(evs)-1].Status; st == nil || st.Answer == nil || *st.Answer != answer {
			t.Errorf("task %d's status event reads back as %+v", i, st)
		}
	}
	ns, err := s.ClaimTaskNotices(ctx, "fanout", 10, time.Minute)
	if err != nil || len(ns) != 2 {
		t.Fatalf("notices = %+v, %v", ns, err)
	}
	for _, n := range ns {
		if n.Status.Answer == nil || *n.Status.Answer != answer {
			t.Errorf("notice of task %d: answer %v", n.TaskID, n.Status.Answer)
		}
	}

	// A notice whose answer's message is gone (damage: nothing deletes one alone) is still
	// claimed, without the answer, and does not hold up the rest of its batch.
	more := claimTasks(t, s, a, u.ID, 2)
	for _, id := range more {
		if _, _, err := s.FinishTurn(ctx, id, "w", store.NewTaskMessage{Role: store.RoleAssistant, Text: answer},
			store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.GormDBForTest().Exec("DELETE FROM task_messages WHERE task_id = ? AND role = ?", more[0], store.RoleAssistant).Error; err != nil {
		t.Fatal(err)
	}
	ns, err = s.ClaimTaskNotices(ctx, "fanout", 10, time.Minute)
	if err != nil || len(ns) != 2 {
		t.Fatalf("notices after the damage = %+v, %v", ns, err)
	}
	for _, n := range ns {
		if damaged := n.TaskID == more[0]; (n.Status.Answer == nil) != damaged {
			t.Errorf("notice of task %d: answer %v (its message gone: %v)", n.TaskID, n.Status.Answer, damaged)
		}
	}
}
