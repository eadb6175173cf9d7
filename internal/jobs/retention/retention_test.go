package retention_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/jobs/retention"
	"github.com/agentsvc/svc/internal/platform/config"
)

// fakeStore has due[kind] rows left of each kind and deletes up to limit a call; fail makes a
// kind's calls fail. It records the cut each kind was asked with.
type fakeStore struct {
	due  map[string]int64
	fail map[string]bool
	cuts map[string]string
	runs map[string]int
}

func (f *fakeStore) take(kind, cut string, limit int) (int64, error) {
	f.cuts[kind] = cut
	f.runs[kind]++
	if f.fail[kind] {
		return 0, errors.New(kind + " failed")
	}
	n := min(f.due[kind], int64(limit))
	f.due[kind] -= n
	return n, nil
}

func (f *fakeStore) PruneFinishedTasks(_ context.Context, b time.Time, l int) (int64, error) {
	return f.take("tasks", b.Format(time.RFC3339), l)
}
func (f *fakeStore) PruneTaskEvents(_ context.Context, b time.Time, l int) (int64, error) {
	return f.take("events", b.Format(time.RFC3339), l)
}
func (f *fakeStore) PruneOutboxes(_ context.Context, b time.Time, l int) (int64, error) {
	return f.take("outbox", b.Format(time.RFC3339), l)
}
func (f *fakeStore) DeleteReadNotificationsBefore(_ context.Context, b time.Time, l int) (int64, error) {
	return f.take("notifications", b.Format(time.RFC3339), l)
}
func (f *fakeStore) PruneUsageLedger(_ context.Context, d string, l int) (int64, error) {
	return f.take("ledger", d, l)
}

func newFake() *fakeStore {
	return &fakeStore{due: map[string]int64{}, fail: map[string]bool{}, cuts: map[string]string{}, runs: map[string]int{}}
}

var now = time.Date(2031, 3, 10, 12, 0, 0, 0, time.UTC)

// TestSweepAges: each kind is cut at its own age, in days before now; a kind at 0 is never
// touched; the defaults keep chats and cut the others.
func TestSweepAges(t *testing.T) {
	t.Parallel()
	f := newFake()
	s := &retention.Sweeper{Store: f, Clock: func() time.Time { return now },
		Policy: func() retention.Policy { return retention.PolicyOf(config.Defaults()) }}
	if _, err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"events": "2031-03-03T12:00:00Z", "outbox": "2031-03-03T12:00:00Z",
		"notifications": "2031-02-08T12:00:00Z", "ledger": "2030-02-03"}
	if len(f.cuts) != len(want) {
		t.Fatalf("kinds run %v, want %v (chats are kept by default)", f.cuts, want)
	}
	for k, w := range want {
		if f.cuts[k] != w {
			t.Errorf("%s cut at %s, want %s", k, f.cuts[k], w)
		}
	}
}

// TestSweepBatches: a kind runs batches until one deletes nothing, at most MaxBatches; a
// failing kind leaves the others running and its error is returned.
func TestSweepBatches(t *testing.T) {
	t.Parallel()
	f := newFake()
	f.due["tasks"], f.due["events"], f.due["outbox"] = 25, 1000, 3
	f.fail["notifications"] = true
	s := &retention.Sweeper{Store: f, Clock: func() time.Time { return now }, Batch: 10, MaxBatches: 5,
		Policy: func() retention.Policy {
			return retention.Policy{TaskDays: 1, TaskEventsDays: 1, OutboxDays: 1, NotificationsDays: 1, UsageLedgerDays: 1}
		}}
	r, err := s.Run(context.Background())
	if err == nil || err.Error() != "notifications failed" {
		t.Fatalf("error %v, want the notifications' failure", err)
	}
	if r.Tasks != 25 || f.runs["tasks"] != 4 {
		t.Errorf("tasks: %d deleted in %d batches, want 25 in 4 (3 full or partial, then an empty one)", r.Tasks, f.runs["tasks"])
	}
	if r.TaskEventLogs != 50 || f.runs["events"] != 5 {
		t.Errorf("events: %d in %d batches, want 50 in 5 (MaxBatches)", r.TaskEventLogs, f.runs["events"])
	}
	if r.Outbox != 3 || r.UsageLedger != 0 || f.runs["ledger"] != 1 || f.runs["notifications"] != 1 {
		t.Errorf("report %+v, runs %v", r, f.runs)
	}
}
