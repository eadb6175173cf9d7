package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

const hookDigest = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" // sha256("hello")

type hookFixture struct {
	*taskFixture
	keyID int64
}

func newHookFixture(t *testing.T) *hookFixture {
	t.Helper()
	f := &hookFixture{taskFixture: newTaskFixture(t)}
	f.keyID = f.mustKey(t, "pubkey1")
	return f
}

func (f *hookFixture) mustKey(t *testing.T, public string) int64 {
	t.Helper()
	return storetest.APIKey(t, f.s, f.agent, f.user.ID, "hello", func(k *store.AgentAPIKey) { k.KeyID = public }).ID
}

// chat creates a per-agent API task; callback "" leaves it without a callback_url.
func (f *hookFixture) chat(t *testing.T, callback string, parent *int64) *store.Task {
	t.Helper()
	return storetest.Task(t, f.s, f.agent, f.user.ID, func(nt *store.NewTask) {
		nt.Prompt, nt.MaxSteps, nt.Source, nt.APIKeyID, nt.ParentTaskID = "hi", 5, store.TaskSourceAgentAPI, &f.keyID, parent
		if callback != "" {
			nt.CallbackURL = &callback
		}
	})
}

// claim leases task id to worker w (it must be the only claimable task).
func (f *hookFixture) claim(t *testing.T, id int64, w string) {
	t.Helper()
	got, err := f.s.ClaimQueued(context.Background(), w, time.Minute, 1)
	if err != nil || len(got) != 1 || got[0].ID != id {
		t.Fatalf("ClaimQueued = %v, %v; want task %d", got, err, id)
	}
}

func (f *hookFixture) deliveries(t *testing.T, id int64) []store.WebhookDelivery {
	t.Helper()
	ds, err := f.s.WebhookDeliveries(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func (f *hookFixture) setStatus(t *testing.T, id int64, status string) {
	t.Helper()
	if err := f.s.GormDBForTest().Exec("UPDATE tasks SET status = ? WHERE id = ?", status, id).Error; err != nil {
		t.Fatal(err)
	}
}

func TestCallbackEnqueuedOnSettle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	answer := "Done."
	steps := []struct {
		name   string
		out    store.StepOutcome
		prep   func(t *testing.T, f *hookFixture, id int64)
		status string // "" = no delivery
		check  func(t *testing.T, d store.WebhookDelivery)
	}{
		{name: "completed", out: store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1}, status: taskstate.Completed,
			check: func(t *testing.T, d store.WebhookDelivery) {
				if d.Snapshot.Task.Answer == nil || *d.Snapshot.Task.Answer != answer || d.Snapshot.Task.StepsUsed != 1 {
					t.Errorf("snapshot task = %+v", d.Snapshot.Task)
				}
			}},
		{name: "running keeps quiet", out: store.StepOutcome{Status: taskstate.Running, Steps: 1}},
		{name: "awaiting sub-agents keeps quiet", out: store.StepOutcome{Status: taskstate.AwaitingSubAgents}},
		{name: "pending approval", out: store.StepOutcome{Status: taskstate.PendingApproval}, status: taskstate.PendingApproval,
			prep: func(t *testing.T, f *hookFixture, id int64) {
				_, _, err := f.s.AppendAssistantTurn(ctx, id, "w", store.NewTaskMessage{Role: store.RoleAssistant}, []store.NewToolCall{
					{ProviderCallID: "c1", ToolClass: "core.CalculatorTool", Name: "calculator", Operation: "calculate",
						Status: store.ToolCallPendingApproval, Arguments: map[string]any{"expression": "6*7", "digits": json.Number("12345678901234567890")}},
					{ProviderCallID: "c2", ToolClass: "core.CalculatorTool", Name: "calculator", Status: store.ToolCallPending},
				})
				if err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, d store.WebhookDelivery) {
				if len(d.Snapshot.Calls) != 1 || d.Snapshot.Calls[0].ProviderCallID != "c1" ||
					d.Snapshot.Calls[0].ProposedArguments["digits"] != json.Number("12345678901234567890") {
					t.Errorf("snapshot calls = %+v", d.Snapshot.Calls)
				}
			}},
		{name: "awaiting input", out: store.StepOutcome{Status: taskstate.AwaitingInput}, status: taskstate.AwaitingInput,
			prep: func(t *testing.T, f *hookFixture, id int64) {
				if _, err := f.s.RecordQuestions(ctx, id, "w", "q1", []store.Question{{Question: "Format?", Header: "Format", Options: []string{"PDF"}}}); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, d store.WebhookDelivery) {
				if len(d.Snapshot.Questions) != 1 || d.Snapshot.Questions[0].ToolCallID != "q1" || len(d.Snapshot.Calls) != 0 {
					t.Errorf("snapshot = %+v", d.Snapshot)
				}
			}},
		{name: "failed", out: store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeToolError, Message: "boom"}},
			status: taskstate.Failed,
			prep: func(t *testing.T, f *hookFixture, id int64) {
				_, err := f.s.AppendMessages(ctx, id, "w", []store.NewTaskMessage{{Role: store.RoleAssistant, Text: "Working on it."},
					{Role: store.RoleAssistant, ToolCalls: []store.MessageToolCall{{ProviderCallID: "x", Name: "calculator", Arguments: json.RawMessage(`{}`)}}}})
				if err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, d store.WebhookDelivery) {
				if d.Snapshot.LastSaid == nil || *d.Snapshot.LastSaid != "Working on it." || d.Snapshot.Task.Error == nil || d.Snapshot.Task.Error.Code != taskstate.CodeToolError {
					t.Errorf("snapshot = %+v", d.Snapshot)
				}
			}},
		{name: "aborted (budget)", out: store.StepOutcome{Status: taskstate.Aborted, Data: map[string]any{"max_steps_reached": true}}, status: taskstate.Aborted},
	}
	for _, tc := range steps {
		t.Run("FinishStep "+tc.name, func(t *testing.T) {
			t.Parallel()
			f := newHookFixture(t)
			tk := f.chat(t, "https://hooks.example.com/in", nil)
			f.claim(t, tk.ID, "w")
			if tc.prep != nil {
				tc.prep(t, f, tk.ID)
			}
			if _, err := f.s.FinishStep(ctx, tk.ID, "w", tc.out); err != nil {
				t.Fatal(err)
			}
			ds := f.deliveries(t, tk.ID)
			if tc.status == "" {
				if len(ds) != 0 {
					t.Fatalf("deliveries = %+v, want none", ds)
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("deliveries = %+v, want one", ds)
			}
			d := ds[0]
			now := f.clock.Now().Truncate(time.Microsecond)
			if d.Status != tc.status || d.State != store.DeliveryPending || d.Attempts != 0 || d.URL != "https://hooks.example.com/in" ||
				d.KeyID != "pubkey1" || d.SecretDigest != hookDigest || d.APIKeyID != f.keyID || !d.NextAttemptAt.Equal(now) ||
				d.Snapshot.Task.ID != tk.ID || d.Snapshot.Task.Status != tc.status {
				t.Fatalf("delivery = %+v", d)
			}
			if tc.check != nil {
				tc.check(t, d)
			}
		})
	}

	// The step's own message is in the snapshot of a failure (the snapshot is read in the step's
	// transaction, after the message: the step's held blind writes are flushed before it,
	// store/blindwrite.go).
	t.Run("FinishTurn's last words", func(t *testing.T) {
		t.Parallel()
		f := newHookFixture(t)
		tk := f.chat(t, "https://hooks.example.com/in", nil)
		f.claim(t, tk.ID, "w")
		said := "I could not reach the ledger."
		_, m, err := f.s.FinishTurn(ctx, tk.ID, "w", store.NewTaskMessage{Role: store.RoleAssistant, Text: said},
			store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeToolError, Message: "boom"}, Steps: 1,
				Call: &store.ModelCall{Model: "m", InputTokens: 1, OutputTokens: 1}})
		if err != nil || m.Sequence != 2 || m.Text != said {
			t.Fatalf("FinishTurn = %+v, %v", m, err)
		}
		ds := f.deliveries(t, tk.ID)
		if len(ds) != 1 || ds[0].Snapshot.LastSaid == nil || *ds[0].Snapshot.LastSaid != said {
			t.Fatalf("deliveries = %+v", ds)
		}
		if ms, err := f.s.Messages(ctx, tk.ID, 0); err != nil || len(ms) != 2 || ms[1].Sequence != m.Sequence || ms[1].Text != said {
			t.Fatalf("messages = %+v, %v (the turn's sequence %d)", ms, err, m.Sequence)
		}
	})

	t.Run("TransitionTask abort and continue", func(t *testing.T) {
		t.Parallel()
		f := newHookFixture(t)
		tk := f.chat(t, "https://hooks.example.com/in", nil)
		if _, err := f.s.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}); err != nil {
			t.Fatal(err)
		}
		if ds := f.deliveries(t, tk.ID); len(ds) != 1 || ds[0].Status != taskstate.Aborted {
			t.Fatalf("deliveries = %+v", ds)
		}
		if _, err := f.s.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Continue, To: taskstate.Queued}); err != nil {
			t.Fatal(err)
		}
		if ds := f.deliveries(t, tk.ID); len(ds) != 1 {
			t.Fatalf("QUEUED enqueued a callback: %+v", ds)
		}
		// A refused transition writes nothing.
		_, err := f.s.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Retry, To: taskstate.Queued})
		wantErr(t, err, svcerr.ErrInvalidState)
		if ds := f.deliveries(t, tk.ID); len(ds) != 1 {
			t.Fatalf("refused transition enqueued: %+v", ds)
		}
	})

	t.Run("AbortTaskChain", func(t *testing.T) {
		t.Parallel()
		f := newHookFixture(t)
		parent := f.chat(t, "https://hooks.example.com/parent", nil)
		f.setStatus(t, parent.ID, taskstate.AwaitingSubAgents)
		child := f.chat(t, "", &parent.ID)
		if _, err := f.s.AbortTaskChain(ctx, child.ID); err != nil {
			t.Fatal(err)
		}
		if ds := f.deliveries(t, child.ID); len(ds) != 0 {
			t.Fatalf("child without callback_url: %+v", ds)
		}
		if ds := f.deliveries(t, parent.ID); len(ds) != 1 || ds[0].Status != taskstate.Aborted || ds[0].URL != "https://hooks.example.com/parent" {
			t.Fatalf("parent deliveries = %+v", ds)
		}
		direct := f.chat(t, "https://hooks.example.com/direct", nil)
		if _, err := f.s.AbortTaskChain(ctx, direct.ID); err != nil {
			t.Fatal(err)
		}
		if ds := f.deliveries(t, direct.ID); len(ds) != 1 || ds[0].Status != taskstate.Aborted {
			t.Fatalf("direct deliveries = %+v", ds)
		}
	})

	t.Run("reaper, and a scheduled retry adds nothing", func(t *testing.T) {
		t.Parallel()
		f := newHookFixture(t)
		tk := f.chat(t, "https://hooks.example.com/in", nil)
		for range store.MaxRecoveries { // queued again to resume: no callback
			f.claim(t, tk.ID, "w")
			if r, err := f.s.ReapStale(ctx, f.clock.Now().Add(2*time.Minute)); err != nil || len(r.Requeued) != 1 {
				t.Fatalf("ReapStale = %+v, %v", r, err)
			}
			if ds := f.deliveries(t, tk.ID); len(ds) != 0 {
				t.Fatalf("deliveries of a requeued chat = %+v", ds)
			}
		}
		f.claim(t, tk.ID, "w")
		r, err := f.s.ReapStale(ctx, f.clock.Now().Add(2*time.Minute))
		if err != nil || len(r.Failed) != 1 {
			t.Fatalf("ReapStale = %+v, %v", r, err)
		}
		ds := f.deliveries(t, tk.ID)
		if len(ds) != 1 || ds[0].Status != taskstate.Failed || ds[0].Snapshot.Task.Error == nil || ds[0].Snapshot.Task.Error.Code != taskstate.CodeOrphaned {
			t.Fatalf("deliveries = %+v", ds)
		}
		if ok, err := f.s.ScheduleTaskRetry(ctx, tk.ID, time.Minute, 3); err != nil || !ok {
			t.Fatalf("ScheduleTaskRetry = %v, %v", ok, err)
		}
		if ds := f.deliveries(t, tk.ID); len(ds) != 1 {
			t.Fatalf("retry scheduling enqueued: %+v", ds)
		}
	})

	t.Run("no callback_url, session task, revoked key", func(t *testing.T) {
		t.Parallel()
		f := newHookFixture(t)
		plain := f.chat(t, "", nil)
		session := f.create(t, "x")
		revokedKey := f.mustKey(t, "revoked1")
		if err := f.s.GormDBForTest().Exec("UPDATE agent_api_keys SET revoked_at = ? WHERE id = ?", f.clock.Now(), revokedKey).Error; err != nil {
			t.Fatal(err)
		}
		cb := "https://hooks.example.com/in"
		revoked := storetest.Task(t, f.s, f.agent, f.user.ID, func(nt *store.NewTask) {
			nt.Source, nt.APIKeyID, nt.CallbackURL = store.TaskSourceAgentAPI, &revokedKey, &cb
		})
		for _, id := range []int64{plain.ID, session.ID, revoked.ID} {
			if _, err := f.s.TransitionTask(ctx, id, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}); err != nil {
				t.Fatal(err)
			}
			if ds := f.deliveries(t, id); len(ds) != 0 {
				t.Errorf("task %d: deliveries = %+v", id, ds)
			}
		}
	})
}

// settled creates n chats with a callback and cancels them, one clock second apart: n pending
// deliveries, oldest first.
func (f *hookFixture) settled(t *testing.T, n int) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		tk := f.chat(t, "https://hooks.example.com/in", nil)
		if _, err := f.s.TransitionTask(context.Background(), tk.ID, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}); err != nil {
			t.Fatal(err)
		}
		ds := f.deliveries(t, tk.ID)
		if len(ds) != 1 {
			t.Fatalf("deliveries = %+v", ds)
		}
		ids = append(ids, ds[0].ID)
		f.clock.Advance(time.Second)
	}
	return ids
}

func deliveryIDs(ds []store.WebhookDelivery) []int64 {
	out := []int64{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func TestClaimDeliveriesLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newHookFixture(t)
	ids := f.settled(t, 3)

	got, err := f.s.ClaimDeliveries(ctx, "d1", 2, time.Minute)
	if err != nil || fmt.Sprint(deliveryIDs(got)) != fmt.Sprint(ids[:2]) {
		t.Fatalf("first claim = %v, %v; want %v", deliveryIDs(got), err, ids[:2])
	}
	if got[0].KeyID != "pubkey1" || got[0].SecretDigest != hookDigest || got[0].LeaseUntil == nil ||
		!got[0].LeaseUntil.Equal(f.clock.Now().Add(time.Minute).Truncate(time.Microsecond)) || got[0].Snapshot.Task.Status != taskstate.Aborted {
		t.Fatalf("claimed delivery = %+v", got[0])
	}
	got2, err := f.s.ClaimDeliveries(ctx, "d2", 25, time.Minute)
	if err != nil || fmt.Sprint(deliveryIDs(got2)) != fmt.Sprint(ids[2:]) {
		t.Fatalf("second claim = %v, %v; want %v", deliveryIDs(got2), err, ids[2:])
	}
	if got3, err := f.s.ClaimDeliveries(ctx, "d3", 25, time.Minute); err != nil || len(got3) != 0 {
		t.Fatalf("everything leased, claim = %v, %v", deliveryIDs(got3), err)
	}

	// Delivered: never claimed again.
	if err := f.s.FinishDelivery(ctx, got[0].ID, *got[0].LeaseUntil, true, ""); err != nil {
		t.Fatal(err)
	}
	err = f.s.FinishDelivery(ctx, got[0].ID, *got[0].LeaseUntil, true, "")
	wantErr(t, err, svcerr.ErrInvalidState)
	err = f.s.FinishDelivery(ctx, 99999, *got[0].LeaseUntil, true, "")
	wantErr(t, err, svcerr.ErrNotFound)

	// An expired lease is taken over; the old holder's finish is refused (fencing).
	f.clock.Advance(time.Minute + time.Second)
	again, err := f.s.ClaimDeliveries(ctx, "d4", 25, time.Minute)
	if err != nil || fmt.Sprint(deliveryIDs(again)) != fmt.Sprint(ids[1:]) {
		t.Fatalf("claim after expiry = %v, %v; want %v", deliveryIDs(again), err, ids[1:])
	}
	err = f.s.FinishDelivery(ctx, got[1].ID, *got[1].LeaseUntil, true, "")
	wantErr(t, err, svcerr.ErrInvalidState)
	if err := f.s.FinishDelivery(ctx, again[0].ID, *again[0].LeaseUntil, true, ""); err != nil {
		t.Fatal(err)
	}
	ds := f.deliveries(t, again[0].TaskID)
	if ds[0].State != store.DeliveryDelivered || ds[0].FinishedAt == nil || ds[0].LeaseUntil != nil || ds[0].Attempts != 0 {
		t.Fatalf("delivered row = %+v", ds[0])
	}

	for _, bad := range []struct {
		worker string
		lease  time.Duration
	}{{"", time.Minute}, {"w", 0}} {
		_, err := f.s.ClaimDeliveries(ctx, bad.worker, 1, bad.lease)
		wantErr(t, err, svcerr.ErrInvalid)
	}
}

func TestDeliveryRetrySchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newHookFixture(t)
	id := f.settled(t, 1)[0]
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute}
	for attempt := 1; attempt <= 6; attempt++ {
		got, err := f.s.ClaimDeliveries(ctx, "d", 25, time.Minute)
		if err != nil || len(got) != 1 || got[0].ID != id || got[0].Attempts != attempt-1 {
			t.Fatalf("attempt %d: claim = %+v, %v", attempt, got, err)
		}
		if err := f.s.FinishDelivery(ctx, id, *got[0].LeaseUntil, false, fmt.Sprintf("status 500 (attempt %d)", attempt)); err != nil {
			t.Fatal(err)
		}
		d := f.deliveries(t, got[0].TaskID)[0]
		if d.Attempts != attempt || d.LastError == nil || *d.LastError != fmt.Sprintf("status 500 (attempt %d)", attempt) || d.LeaseUntil != nil {
			t.Fatalf("attempt %d: row = %+v", attempt, d)
		}
		if attempt == 6 {
			if d.State != store.DeliveryAbandoned || d.FinishedAt == nil {
				t.Fatalf("after the 6th failure: %+v", d)
			}
			break
		}
		if d.State != store.DeliveryPending || !d.NextAttemptAt.Equal(f.clock.Now().Add(want[attempt-1]).Truncate(time.Microsecond)) {
			t.Fatalf("attempt %d: next attempt %v, want now+%v", attempt, d.NextAttemptAt, want[attempt-1])
		}
		f.clock.Advance(want[attempt-1] - time.Second)
		if early, err := f.s.ClaimDeliveries(ctx, "d", 25, time.Minute); err != nil || len(early) != 0 {
			t.Fatalf("attempt %d: claimed before due: %+v, %v", attempt, early, err)
		}
		f.clock.Advance(time.Second)
	}
	f.clock.Advance(time.Hour)
	if got, err := f.s.ClaimDeliveries(ctx, "d", 25, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("abandoned delivery claimed: %+v, %v", got, err)
	}
}

// TestClaimDeliveriesConcurrent: two dispatchers on separate connection pools never receive the
// same delivery, and together they claim all of them.
func TestClaimDeliveriesConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores := storetest.NewShared(t, 2)
	s := stores[0]
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	keyID := storetest.APIKey(t, s, a, u.ID, "hello").ID
	const n = 40
	cb := "https://hooks.example.com/in"
	for range n {
		tk := storetest.Task(t, s, a, u.ID, func(nt *store.NewTask) {
			nt.Source, nt.APIKeyID, nt.CallbackURL = store.TaskSourceAgentAPI, &keyID, &cb
		})
		if _, err := s.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := fmt.Sprintf("d%d", i)
			for {
				got, err := st.ClaimDeliveries(ctx, w, 3, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, d := range got {
					if prev, dup := seen[d.ID]; dup {
						t.Errorf("delivery %d claimed by %s and %s", d.ID, prev, w)
					}
					seen[d.ID] = w
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d deliveries, want %d", len(seen), n)
	}
}
