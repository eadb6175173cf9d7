package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// Fixture factories (river's testfactory is the model): each creates one row with defaults that
// pass every rule, lets opts change what the test cares about, and fails the test on error.
// Names and addresses are unique per process, so tests sharing a store do not collide, and
// numbered in creation order with a fixed width, so they also sort in creation order.

var seq atomic.Int64

func next() string { return fmt.Sprintf("%06d", seq.Add(1)) }

// User creates a user (password hash a placeholder; no role unless opts set one).
func User(t testing.TB, s *store.Store, opts ...func(*store.NewUser)) *store.User {
	t.Helper()
	n := next()
	nu := store.NewUser{Email: "user" + n + "@example.com", PasswordHash: "$argon2id$x", DisplayName: "User " + n}
	for _, o := range opts {
		o(&nu)
	}
	u, err := s.CreateUser(context.Background(), nu)
	if err != nil {
		t.Fatalf("storetest.User: %v", err)
	}
	return u
}

// Email sets a user's address, and its display name to the same text (as a test that cares
// about the address usually cares how listings sort the user), for a test that looks the user
// up by address or expects a particular order. Mind that addresses must stay unique per store.
func Email(addr string) func(*store.NewUser) {
	return func(u *store.NewUser) { u.Email, u.DisplayName = addr, addr }
}

// Admin grants the user the service-wide administrator role.
func Admin(u *store.NewUser) { u.Admin = true }

// GroupFields are what CreateGroup takes besides the owner; opts of Group change them.
type GroupFields struct {
	Name        string
	Description string
}

// GroupNamed sets a group's name, for a test that looks the group up or orders by it.
func GroupNamed(name string) func(*GroupFields) {
	return func(g *GroupFields) { g.Name = name }
}

// Group creates a group owned by owner ("Group <n>", no description).
func Group(t testing.TB, s *store.Store, owner *store.User, opts ...func(*GroupFields)) *store.Group {
	t.Helper()
	f := GroupFields{Name: "Group " + next()}
	for _, o := range opts {
		o(&f)
	}
	g, err := s.CreateGroup(context.Background(), owner.ID, f.Name, f.Description)
	if err != nil {
		t.Fatalf("storetest.Group: %v", err)
	}
	return g
}

// Agent creates an agent of principalID (a user's or a group's principal), named "Agent <n>"
// with the store's defaults for everything else.
func Agent(t testing.TB, s *store.Store, principalID int64, opts ...func(*store.AgentFields)) *store.Agent {
	t.Helper()
	name := "Agent " + next()
	f := store.AgentFields{Name: &name}
	for _, o := range opts {
		o(&f)
	}
	a, err := s.CreateAgent(context.Background(), principalID, f)
	if err != nil {
		t.Fatalf("storetest.Agent: %v", err)
	}
	return a
}

// AgentNamed sets an agent's name, for a test that looks the agent up or orders by it.
func AgentNamed(name string) func(*store.AgentFields) {
	return func(f *store.AgentFields) { f.Name = &name }
}

// LLMConfig creates a model configuration of groupID: the scripted driver reading script.json,
// the group's default.
func LLMConfig(t testing.TB, s *store.Store, groupID int64, opts ...func(*store.LLMConfig)) *store.LLMConfig {
	t.Helper()
	script := "script.json"
	c := store.LLMConfig{Name: "config " + next(), Driver: "scripted", Model: "script", BaseURL: &script, IsDefault: true}
	for _, o := range opts {
		o(&c)
	}
	out, err := s.CreateLLMConfig(context.Background(), groupID, c)
	if err != nil {
		t.Fatalf("storetest.LLMConfig: %v", err)
	}
	return out
}

// Task queues a task of agent a for userID (prompt "x", 10 steps).
func Task(t testing.TB, s *store.Store, a *store.Agent, userID int64, opts ...func(*store.NewTask)) *store.Task {
	t.Helper()
	nt := store.NewTask{AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: userID, Prompt: "x", MaxSteps: 10}
	for _, o := range opts {
		o(&nt)
	}
	tk, err := s.CreateTask(context.Background(), nt)
	if err != nil {
		t.Fatalf("storetest.Task: %v", err)
	}
	return tk
}

// FailedTask queues a one-step task of agent a for userID, claims it (worker "w") and fails it
// with code as a step's finish does (status event included), leaving any automatic retry
// unscheduled; it returns the task's id. The claim takes the oldest queued task: call it with
// no other task queued.
func FailedTask(t testing.TB, s *store.Store, a *store.Agent, userID int64, code string) int64 {
	t.Helper()
	ctx := context.Background()
	tk := Task(t, s, a, userID, func(nt *store.NewTask) { nt.MaxSteps = 1 })
	if got, err := s.ClaimQueued(ctx, "w", time.Minute, 1); err != nil || len(got) != 1 || got[0].ID != tk.ID {
		t.Fatalf("storetest.FailedTask: claim = %v, %v", got, err)
	}
	if _, err := s.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: code, Message: "m"}}); err != nil {
		t.Fatalf("storetest.FailedTask: %v", err)
	}
	return tk.ID
}

// APIKey stores a per-agent API key of a minted by createdBy, with the digest of secret (key id
// unique per process, name "key"); opts change it before it is stored, e.g. to fix the key id a
// test expects in a header.
func APIKey(t testing.TB, s *store.Store, a *store.Agent, createdBy int64, secret string, opts ...func(*store.AgentAPIKey)) *store.AgentAPIKey {
	t.Helper()
	sum := sha256.Sum256([]byte(secret))
	k := store.AgentAPIKey{KeyID: "0000000000" + next(), AgentID: a.ID, Name: "key", SecretDigest: hex.EncodeToString(sum[:]), CreatedBy: createdBy}
	for _, o := range opts {
		o(&k)
	}
	out, err := s.CreateAPIKey(context.Background(), k, nil)
	if err != nil {
		t.Fatalf("storetest.APIKey: %v", err)
	}
	return out
}

// MoveTo drives task id, QUEUED, to status through the state machine's own transitions (a
// test leases it with AcquireTick as worker "storetest"; a FAILED task fails with SERVER_ERROR;
// a CANCELLED one fails, gets a retry scheduled and has the retry chain cancelled), so tests
// reach any status the way the service does. It returns the task as left.
func MoveTo(t testing.TB, s *store.Store, id int64, status string) *store.Task {
	t.Helper()
	ctx := context.Background()
	fail := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("storetest.MoveTo %s: %v", status, err)
		}
	}
	var out *store.Task
	var err error
	switch status {
	case taskstate.Queued:
		out, err = s.Task(ctx, id)
	case taskstate.Aborted:
		out, err = s.TransitionTask(ctx, id, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted})
	default:
		out, err = s.AcquireTick(ctx, id, "storetest", time.Hour)
		fail(err)
		switch status {
		case taskstate.Running:
		case taskstate.Failed, taskstate.Cancelled:
			out, err = s.FinishStep(ctx, id, "storetest", store.StepOutcome{Status: taskstate.Failed,
				Error: &store.TaskError{Code: taskstate.CodeServerError, Message: "storetest"}})
			if status == taskstate.Cancelled {
				fail(err)
				_, err = s.ScheduleTaskRetry(ctx, id, time.Hour, 1)
				fail(err)
				out, err = s.TransitionTask(ctx, id, store.TaskTransition{Action: taskstate.CancelRetry, To: taskstate.Cancelled, RequireRetryPending: true})
			}
		default:
			out, err = s.FinishStep(ctx, id, "storetest", store.StepOutcome{Status: status})
		}
	}
	fail(err)
	if out.Status != status {
		t.Fatalf("storetest.MoveTo: task %d is %s, want %s", id, out.Status, status)
	}
	return out
}
