package tick_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/agentsvc/svc/config"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/svcerr"
	"github.com/agentsvc/svc/task"
	"github.com/agentsvc/svc/tick"
)

// Two tabs of one user share the worker id, so the lease lets both in; the service refuses the
// second while the first tick of the task is still running in this process.
func TestConcurrentTickOfOneTaskRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u, err := s.CreateUser(ctx, store.NewUser{Email: "ada@example.com", PasswordHash: "$argon2id$x", DisplayName: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	name := "Helper"
	a, err := s.CreateAgent(ctx, u.PrincipalID, store.AgentFields{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := s.CreateTask(ctx, store.NewTask{AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: u.ID, Prompt: "x", MaxSteps: 3})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.WorkerRuntimeMode = "client"
	started, release := make(chan struct{}), make(chan struct{})
	svc := tick.New(tick.Options{Store: s, Tasks: task.New(s, nil), Config: func() *config.Config { return cfg },
		Tick: func(ctx context.Context, id int64, worker string) (*store.Task, error) {
			if worker != tick.WorkerID(u.ID) {
				t.Errorf("worker = %q", worker)
			}
			close(started)
			<-release
			return s.Task(ctx, id)
		}})
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
