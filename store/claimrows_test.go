package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store/storetest"
)

// TestClaimReturnsTheRowsAsStored: what a claim returns is what a read of the task returns
// after it, on every dialect — a queued task, a due retry (its count up, its error and retry
// time cleared) — and no dialect reads the claimed rows back after the UPDATE: SQLite and
// PostgreSQL return them from it, MySQL/MariaDB apply the change to the rows its locking read
// returned (a round trip less on the serial claimer).
func TestClaimReturnsTheRowsAsStored(t *testing.T) {
	t.Parallel()
	s, f := storetest.NewCounted(t)
	ctx := context.Background()
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	retried := storetest.FailedTask(t, s, a, u.ID, taskstate.CodeOrphaned)
	if ok, err := s.ScheduleTaskRetry(ctx, retried, time.Millisecond, 3); err != nil || !ok {
		t.Fatalf("ScheduleTaskRetry = %v, %v", ok, err)
	}
	queued := storetest.Task(t, s, a, u.ID)
	time.Sleep(20 * time.Millisecond) // the retry is due
	readBacks := 0
	f.Trace(func(q string) {
		if strings.Contains(q, "FROM tasks WHERE id IN") && !strings.Contains(q, "FOR UPDATE") {
			readBacks++
		}
	})
	got, err := s.ClaimQueued(ctx, "w2", time.Minute, 5)
	f.Trace(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != queued.ID || got[1].ID != retried {
		t.Fatalf("claimed %d tasks, want the queued one and the due retry", len(got))
	}
	if readBacks != 0 {
		t.Errorf("the claim read its rows back %d times", readBacks)
	}
	for _, tk := range got {
		stored, err := s.Task(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(*stored, tk); d != "" {
			t.Errorf("task %d as claimed differs from the stored one (-stored +claimed):\n%s", tk.ID, d)
		}
	}
	if r := got[1]; r.Status != taskstate.Running || r.RetryCount != 1 || r.Error != nil || r.NextRetryAt != nil || r.LeaseOwner == nil || *r.LeaseOwner != "w2" {
		t.Errorf("the due retry as claimed: %+v", r)
	}
}
