package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentsvc/svc/store"
)

// Fixture factories (river's testfactory is the model): each creates one row with defaults that
// pass every rule, lets opts change what the test cares about, and fails the test on error.
// Names and addresses are unique per process, so tests sharing a store do not collide.

var seq atomic.Int64

func next() int64 { return seq.Add(1) }

// User creates a user (password hash a placeholder; no role unless opts set one).
func User(t testing.TB, s *store.Store, opts ...func(*store.NewUser)) *store.User {
	t.Helper()
	n := next()
	nu := store.NewUser{Email: fmt.Sprintf("user%d@example.com", n), PasswordHash: "$argon2id$x", DisplayName: fmt.Sprintf("User %d", n)}
	for _, o := range opts {
		o(&nu)
	}
	u, err := s.CreateUser(context.Background(), nu)
	if err != nil {
		t.Fatalf("storetest.User: %v", err)
	}
	return u
}

// Group creates a group owned by owner.
func Group(t testing.TB, s *store.Store, owner *store.User) *store.Group {
	t.Helper()
	g, err := s.CreateGroup(context.Background(), owner.ID, fmt.Sprintf("Group %d", next()), "")
	if err != nil {
		t.Fatalf("storetest.Group: %v", err)
	}
	return g
}

// Agent creates an agent of principalID (a user's or a group's principal).
func Agent(t testing.TB, s *store.Store, principalID int64, opts ...func(*store.AgentFields)) *store.Agent {
	t.Helper()
	name := fmt.Sprintf("Agent %d", next())
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

// LLMConfig creates a model configuration of groupID: the scripted driver reading script.json,
// the group's default.
func LLMConfig(t testing.TB, s *store.Store, groupID int64, opts ...func(*store.LLMConfig)) *store.LLMConfig {
	t.Helper()
	script := "script.json"
	c := store.LLMConfig{Name: fmt.Sprintf("config %d", next()), Driver: "scripted", Model: "script", BaseURL: &script, IsDefault: true}
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

// APIKey stores a per-agent API key of a minted by createdBy, with the digest of secret.
func APIKey(t testing.TB, s *store.Store, a *store.Agent, createdBy int64, secret string) *store.AgentAPIKey {
	t.Helper()
	sum := sha256.Sum256([]byte(secret))
	k, err := s.CreateAPIKey(context.Background(), store.AgentAPIKey{KeyID: fmt.Sprintf("%016d", next()), AgentID: a.ID,
		Name: "key", SecretDigest: hex.EncodeToString(sum[:]), CreatedBy: createdBy}, nil)
	if err != nil {
		t.Fatalf("storetest.APIKey: %v", err)
	}
	return k
}
