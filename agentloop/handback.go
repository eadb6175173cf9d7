package agentloop

import (
	"context"
	"errors"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Backoff of retryHandBack: the first retry after handBackFirstWait, doubling up to
// handBackMaxWait, until the context (handBackTimeout) ends.
const (
	handBackFirstWait = 20 * time.Millisecond
	handBackMaxWait   = time.Second
)

// retryHandBack is store.HandBack tried again while it fails for a reason of the database's
// (a lock timeout, a busy SQLite, a lost connection) until ctx ends: the task must not stay
// RUNNING under a lease nobody renews because the database was busy when the step failed.
// ErrInvalidState and ErrNotFound (the task is no longer ours) end it at once.
func (l *Loop) retryHandBack(ctx context.Context, id int64, workerID string, recovered bool) (*store.Task, error) {
	wait := handBackFirstWait
	for attempt := 1; ; attempt++ {
		t, err := l.Store.HandBack(ctx, id, workerID, recovered)
		if err == nil || errors.Is(err, svcerr.ErrInvalidState) || errors.Is(err, svcerr.ErrNotFound) {
			return t, err
		}
		l.log().Warn("hand back task failed; trying again", "task_id", id, "worker", workerID, "attempt", attempt, "err", err)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, errors.Join(err, ctx.Err())
		case <-timer.C:
		}
		wait = min(2*wait, handBackMaxWait)
	}
}
