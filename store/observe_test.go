package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// CreateTask stores the new task's traceparent (an oversize one is dropped); Task reads it
// back, and a task created outside a trace has none.
func TestTaskTraceParent(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	plain := storetest.Task(t, s, a, u.ID)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := context.Background()
	traced, err := s.CreateTask(ctx, store.NewTask{AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: u.ID, Prompt: "x", MaxSteps: 3, TraceParent: tp})
	if err != nil {
		t.Fatal(err)
	}
	untraced, err := s.CreateTask(ctx, store.NewTask{AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: u.ID, Prompt: "x", MaxSteps: 3,
		TraceParent: strings.Repeat("0", 129)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   int64
		want string
	}{{plain.ID, ""}, {traced.ID, tp}, {untraced.ID, ""}} {
		got, err := s.Task(context.Background(), c.id)
		if err != nil {
			t.Fatal(err)
		}
		if got.TraceParent != c.want {
			t.Errorf("task %d trace parent %q, want %q", c.id, got.TraceParent, c.want)
		}
	}
	if traced.TraceParent != tp {
		t.Errorf("CreateTask returned trace parent %q", traced.TraceParent)
	}
	claimed, err := s.ClaimQueued(context.Background(), "w1", 60e9, 10)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range claimed {
		found = found || (c.ID == traced.ID && c.TraceParent == tp)
	}
	if !found {
		t.Error("the claimed task lost its trace parent")
	}
}

// QueueStats counts tasks by status and the outboxes' items by state.
func TestQueueStats(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := context.Background()
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	for range 3 {
		storetest.Task(t, s, a, u.ID)
	}
	if _, err := s.ClaimQueued(ctx, "w1", 60e9, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueMail(ctx, store.NewMail{To: "ada@example.com", Subject: "Hi", Text: "Hello.\n", Kind: store.MailKindAccount}); err != nil {
		t.Fatal(err)
	}
	st, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Tasks["QUEUED"] != 2 || st.Tasks["RUNNING"] != 1 || len(st.Tasks) != 2 {
		t.Errorf("tasks = %v", st.Tasks)
	}
	want := map[string]store.OutboxStats{"webhook": {Name: "webhook"}, "mail": {Name: "mail", Pending: 1}, "notification": {Name: "notification"}}
	if len(st.Outboxes) != len(want) {
		t.Fatalf("outboxes = %+v", st.Outboxes)
	}
	for _, o := range st.Outboxes {
		if o != want[o.Name] {
			t.Errorf("outbox %s = %+v, want %+v", o.Name, o, want[o.Name])
		}
	}
}
