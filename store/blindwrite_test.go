package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestStepBlindWrites: a step's usage ledger row, rollup and events all land — sent with its
// message in one round trip: on PostgreSQL one statement, the first ones as WITH clauses of
// the last, on MySQL/MariaDB one multi-statement text; on SQLite one by one —, and a held write
// that fails fails the step with none of its writes kept.
func TestStepBlindWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, counter := storetest.NewCounted(t)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	ids := claimTasks(t, s, a, u.ID, 2)
	answer := "42"
	var turn store.TaskMessage
	finish := func(id int64) error {
		var err error
		_, turn, err = s.FinishTurn(ctx, id, "w", store.NewTaskMessage{Role: store.RoleAssistant, Text: answer, InputTokens: 3, OutputTokens: 2},
			store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1, Call: &store.ModelCall{Model: "m", InputTokens: 3, OutputTokens: 2}})
		return err
	}

	var ledger, messages []string
	counter.Trace(func(q string) {
		if strings.Contains(q, "usage_ledger") {
			ledger = append(ledger, q)
		}
		if strings.Contains(q, "INSERT INTO task_messages") {
			messages = append(messages, q)
		}
	})
	if err := finish(ids[0]); err != nil {
		t.Fatal(err)
	}
	counter.Trace(nil)
	together := len(ledger) == 1 && strings.Contains(ledger[0], "usage_daily") &&
		strings.Contains(ledger[0], "INSERT INTO task_events") && len(messages) == 1 && messages[0] == ledger[0]
	if want := s.Dialect() != store.DialectSQLite; together != want {
		t.Fatalf("the ledger's statements %q: sent with the rollup, the events and the message %v, want %v", ledger, together, want)
	}
	if together && strings.HasPrefix(ledger[0], "WITH ") != (s.Dialect() == store.DialectPostgres) {
		t.Fatalf("the held writes %q: a data-modifying WITH is PostgreSQL's, and only its", ledger[0])
	}
	if ms, err := s.Messages(ctx, ids[0], 0); err != nil || len(ms) != 2 || turn.Sequence != 2 || ms[1].Sequence != 2 || ms[1].Text != answer {
		t.Fatalf("messages = %+v, %v; the turn = %+v", ms, err, turn)
	}
	if got := usageCalls(t, s); got != 1 {
		t.Fatalf("usage holds %d calls, want 1", got)
	}
	evs, err := s.TaskEvents(ctx, ids[0], 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Type != store.EventStatus || last.Status.Status != taskstate.Completed ||
		evs[len(evs)-2].Type != store.EventMessage {
		t.Fatalf("events = %+v", evs)
	}

	// The second step's status event collides with a row written under it: its held writes
	// fail with it, and none of the step is kept.
	evs, err = s.TaskEvents(ctx, ids[1], 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	next := evs[len(evs)-1].Sequence + 2 // the message's event, then the status event
	if err := s.GormDBForTest().Exec("INSERT INTO task_events (task_id, sequence, type, data, created_at) VALUES (?, ?, ?, ?, ?)",
		ids[1], next, store.EventStatus, `{"status":"RUNNING"}`, time.Now()).Error; err != nil {
		t.Fatal(err)
	}
	if err := finish(ids[1]); err == nil {
		t.Fatal("a step whose events collide was recorded")
	}
	tk, err := s.Task(ctx, ids[1])
	if err != nil || tk.Status != taskstate.Running || tk.StepsUsed != 0 {
		t.Fatalf("task after the failed step = %+v, %v", tk, err)
	}
	if got := usageCalls(t, s); got != 1 {
		t.Fatalf("usage holds %d calls after the failed step, want 1", got)
	}
	if ms, err := s.Messages(ctx, ids[1], 0); err != nil || len(ms) != 1 {
		t.Fatalf("messages after the failed step = %+v, %v (want the prompt alone)", ms, err)
	}
}

// TestHeldWritesKeepHostileText: a step's message goes with the held writes, on MySQL/MariaDB
// as a text the driver writes its arguments into; a model's or a user's text full of quotes,
// backslashes, statement separators, comment markers, control and four-byte characters is
// stored exactly as given, and nothing else it spells runs.
func TestHeldWritesKeepHostileText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	ids := claimTasks(t, s, a, u.ID, 1)
	text := "it's \\' \\\\'; DELETE FROM task_events; -- \" ` \n\r\t\x1a ?; /* */ # 🦀 \u2028 ' OR '1'='1"
	if _, _, err := s.FinishTurn(ctx, ids[0], "w", store.NewTaskMessage{Role: store.RoleAssistant, Text: text},
		store.StepOutcome{Status: taskstate.Completed, Answer: &text, Steps: 1, Call: &store.ModelCall{Model: "m?'", InputTokens: 1, OutputTokens: 1}}); err != nil {
		t.Fatal(err)
	}
	ms, err := s.Messages(ctx, ids[0], 0)
	if err != nil || len(ms) != 2 || ms[1].Text != text {
		t.Fatalf("messages = %+v, %v; want the turn's text verbatim %q", ms, err, text)
	}
	evs, err := s.TaskEvents(ctx, ids[0], 0, 100)
	if err != nil || len(evs) < 3 || evs[len(evs)-1].Status == nil || evs[len(evs)-1].Status.Status != taskstate.Completed {
		t.Fatalf("events = %+v, %v; want the claim's and the step's, the step's last COMPLETED", evs, err)
	}
	tk, err := s.Task(ctx, ids[0])
	if err != nil || tk.Answer == nil || *tk.Answer != text {
		t.Fatalf("task = %+v, %v", tk, err)
	}
}
