package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

const day = 24 * time.Hour

// TestPruneFinishedTasks: the chats finished before the cut go, oldest first and limit at a
// time, with what they hold; a chat still going, one finished after the cut and one whose
// sub-agent task is unfinished stay.
func TestPruneFinishedTasks(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	oldDone := storetest.MoveTo(t, f.s, f.create(t, "old, completed").ID, taskstate.Completed)
	oldAborted := storetest.MoveTo(t, f.s, f.create(t, "old, aborted").ID, taskstate.Aborted)
	parent := f.create(t, "old parent")
	child := storetest.Task(t, f.s, f.agent, f.user.ID, func(nt *store.NewTask) { nt.ParentTaskID = &parent.ID })
	storetest.MoveTo(t, f.s, parent.ID, taskstate.Aborted)
	going := f.create(t, "still queued")
	f.clock.Advance(10 * day)
	recent := storetest.MoveTo(t, f.s, f.create(t, "recent").ID, taskstate.Completed)
	cut := t0.Add(5 * day)

	if n := countRows(t, f.s, "task_events", "task_id = ?", oldDone.ID); n == 0 {
		t.Fatal("the old task has no events to lose")
	}
	for i, want := range []int64{oldDone.ID, oldAborted.ID} {
		n, err := f.s.PruneFinishedTasks(ctx, cut, 1)
		if err != nil || n != 1 {
			t.Fatalf("batch %d: %d, %v", i, n, err)
		}
		if c := countRows(t, f.s, "tasks", "id = ?", want); c != 0 {
			t.Fatalf("batch %d did not delete task %d (oldest first)", i, want)
		}
	}
	if n, err := f.s.PruneFinishedTasks(ctx, cut, 10); err != nil || n != 0 {
		t.Fatalf("third batch: %d, %v", n, err)
	}
	if n := countRows(t, f.s, "task_events", "task_id IN ?", []int64{oldDone.ID, oldAborted.ID}); n != 0 {
		t.Fatalf("%d events of deleted tasks left", n)
	}
	for _, id := range []int64{parent.ID, child.ID, going.ID, recent.ID} {
		if c := countRows(t, f.s, "tasks", "id = ?", id); c != 1 {
			t.Fatalf("task %d was deleted", id)
		}
	}
	// Once the sub-agent task finished, the parent goes with it.
	storetest.MoveTo(t, f.s, child.ID, taskstate.Aborted)
	if n, err := f.s.PruneFinishedTasks(ctx, t0.Add(20*day), 10); err != nil || n != 2 {
		t.Fatalf("parent and recent: %d, %v", n, err)
	}
	if c := countRows(t, f.s, "tasks", "id IN ?", []int64{parent.ID, child.ID}); c != 0 {
		t.Fatalf("%d of the parent and its sub-agent task left", c)
	}
}

// TestPruneTaskEvents: the event log of a task finished before the cut goes, its messages stay;
// a later pass, on this process or another, starts after the mark instead of going over the
// same tasks again, and a task that moves on and finishes again loses its new events in turn.
func TestPruneTaskEvents(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	old := storetest.MoveTo(t, f.s, f.create(t, "old").ID, taskstate.Completed)
	f.clock.Advance(10 * day)
	recent := storetest.MoveTo(t, f.s, f.create(t, "recent").ID, taskstate.Completed)
	messages := countRows(t, f.s, "task_messages", "task_id = ?", old.ID)
	recentEvents := countRows(t, f.s, "task_events", "task_id = ?", recent.ID)
	if messages == 0 || recentEvents == 0 {
		t.Fatalf("nothing to compare: %d messages, %d events", messages, recentEvents)
	}
	cut := t0.Add(5 * day)
	if n, err := f.s.PruneTaskEvents(ctx, cut, 10); err != nil || n != 1 {
		t.Fatalf("first pass: %d tasks, %v", n, err)
	}
	if n := countRows(t, f.s, "task_events", "task_id = ?", old.ID); n != 0 {
		t.Fatalf("%d events of the old task left", n)
	}
	if n := countRows(t, f.s, "task_messages", "task_id = ?", old.ID); n != messages {
		t.Fatalf("messages %d, want %d kept", n, messages)
	}
	if n := countRows(t, f.s, "task_events", "task_id = ?", recent.ID); n != recentEvents {
		t.Fatalf("the recent task's events: %d, want %d", n, recentEvents)
	}
	twin := storetest.Twin(t, f.s)
	for name, s := range map[string]*store.Store{"this process": f.s, "another process": twin} {
		if n, err := s.PruneTaskEvents(ctx, cut, 10); err != nil || n != 0 {
			t.Fatalf("%s, second pass: %d tasks, %v (want none: the mark is past the old task)", name, n, err)
		}
	}
	if n, err := twin.PruneTaskEvents(ctx, t0.Add(20*day), 10); err != nil || n != 1 {
		t.Fatalf("later cut: %d tasks, %v", n, err)
	}
	if n := countRows(t, f.s, "task_events", "task_id = ?", recent.ID); n != 0 {
		t.Fatalf("%d events of the recent task left after its cut", n)
	}
}

// TestPruneOutboxes: delivered mail before the cut goes; pending mail stays however old, and
// so does mail delivered after the cut.
func TestPruneOutboxes(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	deliver := func(to string) {
		t.Helper()
		if err := f.s.EnqueueMail(ctx, store.NewMail{To: to, Subject: "s", Text: "t", Kind: "test"}); err != nil {
			t.Fatal(err)
		}
		ms, err := f.s.ClaimMails(ctx, "w", 10, time.Minute)
		if err != nil || len(ms) != 1 {
			t.Fatalf("claim: %v, %v", ms, err)
		}
		if _, err := f.s.FinishMail(ctx, ms[0].ID, *ms[0].LeaseUntil, true, ""); err != nil {
			t.Fatal(err)
		}
	}
	deliver("old@example.com")
	f.clock.Advance(10 * day)
	deliver("recent@example.com")
	if err := f.s.EnqueueMail(ctx, store.NewMail{To: "pending@example.com", Subject: "s", Text: "t", Kind: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.GormDBForTest().Exec("UPDATE mail_outbox SET next_attempt_at = ?, created_at = ? WHERE recipient = ?",
		t0.Add(time.Hour), t0, "pending@example.com").Error; err != nil {
		t.Fatal(err)
	}
	if n, err := f.s.PruneOutboxes(ctx, t0.Add(5*day), 10); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	for to, want := range map[string]int64{"old@example.com": 0, "recent@example.com": 1, "pending@example.com": 1} {
		if n := countRows(t, f.s, "mail_outbox", "recipient = ?", to); n != want {
			t.Fatalf("%s: %d rows, want %d", to, n, want)
		}
	}
}

// TestPruneUsageLedger: ledger rows of days before the cut go, limit at a time; the daily
// rollup stays.
func TestPruneUsageLedger(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	db := f.s.GormDBForTest()
	for i, d := range []string{"2031-01-01", "2031-01-02", "2031-02-01"} {
		err := db.Exec("INSERT INTO usage_ledger (created_at, day, task_id, agent_id, principal_id, user_id, model, input_tokens, "+
			"cached_input_tokens, output_tokens, cost) VALUES (?, ?, ?, ?, ?, ?, 'm', 1, 0, 1, 1)",
			t0, d, i+1, f.agent.ID, f.agent.PrincipalID, f.user.ID).Error
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, err := f.s.PruneUsageLedger(ctx, "2031-01-15", 1); err != nil || n != 1 {
		t.Fatalf("first batch: %d, %v", n, err)
	}
	if n, err := f.s.PruneUsageLedger(ctx, "2031-01-15", 10); err != nil || n != 1 {
		t.Fatalf("second batch: %d, %v", n, err)
	}
	if n := countRows(t, f.s, "usage_ledger", "1 = 1"); n != 1 {
		t.Fatalf("%d ledger rows left, want the February one", n)
	}
}
