package worker_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/jobs/worker"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// Two tabs of one user share the worker id, so the lease lets both in; the service refuses the
// second while the first tick of the task is still running in this process.
func TestConcurrentTickOfOneTaskRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	tk := storetest.Task(t, s, a, u.ID)
	cfg := config.Defaults()
	cfg.WorkerRuntimeMode = "client"
	started, release := make(chan struct{}), make(chan struct{})
	svc := worker.NewClient(worker.ClientOptions{Store: s, Tasks: task.New(s, nil), Config: func() *config.Config { return cfg },
		Loop: loopFunc(func(ctx context.Context, id int64, workerID string) (*store.Task, error) {
			if workerID != worker.WorkerID(u.ID) {
				t.Errorf("worker = %q", workerID)
			}
			close(started)
			<-release
			return s.Task(ctx, id)
		})})
	id := strconv.FormatInt(tk.ID, 10)
	done := make(chan error, 1)
	go func() { _, err := svc.Tick(ctx, u, id); done <- err }()
	<-started
	if _, err := svc.Tick(ctx, u, id); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("second tick while one runs: %v, want ErrInvalidState", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first tick: %v", err)
	}
}

// loopFunc is a worker.Loop whose Tick is the function.
type loopFunc func(ctx context.Context, id int64, workerID string) (*store.Task, error)

func (f loopFunc) Tick(ctx context.Context, id int64, workerID string) (*store.Task, error) {
	return f(ctx, id, workerID)
}
