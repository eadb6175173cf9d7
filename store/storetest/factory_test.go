package storetest_test

import (
	"context"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store/storetest"
)

// TestFactories: every factory writes a row the store reads back, and two calls never collide.
func TestFactories(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	u, v := storetest.User(t, s), storetest.User(t, s)
	g := storetest.Group(t, s, u)
	c := storetest.LLMConfig(t, s, g.ID)
	a := storetest.Agent(t, s, g.PrincipalID)
	tk := storetest.Task(t, s, a, u.ID)
	k := storetest.APIKey(t, s, a, u.ID, "secret")
	if u.Email == v.Email || !c.IsDefault || a.PrincipalID != g.PrincipalID || tk.Status != taskstate.Queued || k.AgentID != a.ID {
		t.Fatalf("fixtures: %+v %+v %+v %+v %+v %+v", u, v, c, a, tk, k)
	}
	if got, err := s.Task(context.Background(), tk.ID); err != nil || got.AgentID != a.ID {
		t.Fatalf("task = %+v, %v", got, err)
	}
}
