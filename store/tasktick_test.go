package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestAcquireTick(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.create(t, "x")

	got, err := f.s.AcquireTick(ctx, tk.ID, "tick:user:1", time.Minute)
	if err != nil || got.Status != taskstate.Running || got.LeaseOwner == nil || *got.LeaseOwner != "tick:user:1" ||
		!got.LeaseExpiresAt.Equal(f.clock.Now().Add(time.Minute).Truncate(time.Microsecond)) {
		t.Fatalf("AcquireTick(QUEUED) = %+v, %v", got, err)
	}
	// Same worker: renewed.
	f.clock.Advance(30 * time.Second)
	got, err = f.s.AcquireTick(ctx, tk.ID, "tick:user:1", time.Minute)
	if err != nil || !got.LeaseExpiresAt.Equal(f.clock.Now().Add(time.Minute).Truncate(time.Microsecond)) {
		t.Fatalf("AcquireTick(renew) = %+v, %v", got, err)
	}
	// Someone else while the lease holds: refused, nothing written.
	_, err = f.s.AcquireTick(ctx, tk.ID, "w2", time.Minute)
	wantErr(t, err, svcerr.ErrInvalidState)
	if after, _ := f.s.Task(ctx, tk.ID); *after.LeaseOwner != "tick:user:1" {
		t.Fatalf("lease moved to %s", *after.LeaseOwner)
	}
	// Lease expired: taken over.
	f.clock.Advance(2 * time.Minute)
	got, err = f.s.AcquireTick(ctx, tk.ID, "w2", time.Minute)
	if err != nil || *got.LeaseOwner != "w2" || got.Status != taskstate.Running {
		t.Fatalf("AcquireTick(expired) = %+v, %v", got, err)
	}

	// Quiescent and terminal tasks are refused.
	for _, st := range []string{taskstate.Aborted, taskstate.Completed} {
		q := f.create(t, "q")
		storetest.MoveTo(t, f.s, q.ID, st)
		_, err := f.s.AcquireTick(ctx, q.ID, "tick:user:1", time.Minute)
		wantErr(t, err, svcerr.ErrInvalidState)
	}
	_, err = f.s.AcquireTick(ctx, tk.ID+1000, "w", time.Minute)
	wantErr(t, err, svcerr.ErrNotFound)
	_, err = f.s.AcquireTick(ctx, tk.ID, "", time.Minute)
	wantErr(t, err, svcerr.ErrInvalid)
	_, err = f.s.AcquireTick(ctx, tk.ID, "w2", 0)
	wantErr(t, err, svcerr.ErrInvalid)
}

func TestAcquireTickDueRetry(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	a := f.claimOne(t, "w1")
	if _, err := f.s.FinishStep(ctx, a.ID, "w1", store.StepOutcome{Status: taskstate.Failed,
		Error: &store.TaskError{Code: taskstate.CodeRateLimit, Message: "slow down"}}); err != nil {
		t.Fatal(err)
	}
	_, err := f.s.AcquireTick(ctx, a.ID, "tick", time.Minute) // FAILED without a retry: terminal
	wantErr(t, err, svcerr.ErrInvalidState)
	if ok, err := f.s.ScheduleTaskRetry(ctx, a.ID, time.Minute, 3); !ok || err != nil {
		t.Fatalf("ScheduleTaskRetry = %v, %v", ok, err)
	}
	_, err = f.s.AcquireTick(ctx, a.ID, "tick", time.Minute) // not due yet
	wantErr(t, err, svcerr.ErrInvalidState)
	f.clock.Advance(time.Minute)
	got, err := f.s.AcquireTick(ctx, a.ID, "tick", time.Minute)
	if err != nil || got.Status != taskstate.Running || got.RetryCount != 1 || got.Error != nil || got.NextRetryAt != nil {
		t.Fatalf("AcquireTick(due retry) = %+v, %v", got, err)
	}
}

func TestAcquireTickConcurrent(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.create(t, "x")
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = f.s.AcquireTick(ctx, tk.ID, fmt.Sprintf("w%d", i), time.Minute) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, svcerr.ErrInvalidState):
			t.Fatalf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d workers acquired the tick, want 1", ok)
	}
}

func TestReapDisconnected(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	a := f.claimOne(t, "w1")
	if r, err := f.s.ReapDisconnected(ctx, f.clock.Now()); err != nil || len(r.Failed)+len(r.Requeued) != 0 {
		t.Fatalf("ReapDisconnected before expiry = %+v, %v", r, err)
	}
	f.clock.Advance(2 * time.Minute)
	r, err := f.s.ReapDisconnected(ctx, f.clock.Now())
	if err != nil || fmt.Sprint(r.Failed) != fmt.Sprint([]int64{a.ID}) || len(r.Requeued) != 0 { // no requeue in client mode
		t.Fatalf("ReapDisconnected = %+v, %v", r, err)
	}
	got, _ := f.s.Task(ctx, a.ID)
	if got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != taskstate.CodeWorkerDisconnected || got.LeaseOwner != nil {
		t.Fatalf("reaped task = %+v", got)
	}
}
