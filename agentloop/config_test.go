package agentloop_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestCachedConfigFollowsOtherProcess: a loop that caches its agents' configuration (as svc
// serve's does) sees a change another process made (a second store on the same database) at
// the next step, and keeps using what it cached while nothing changed.
func TestCachedConfigFollowsOtherProcess(t *testing.T) {
	t.Parallel()
	base := storetest.New(t)
	// The loop's process re-reads the version every time, so the test need not wait out the
	// default TTL of a second; what it checks is that a change elsewhere moves the version.
	st := storetest.Twin(t, base, func(o *store.Options) { o.VersionTTL = -1 })
	other := storetest.Twin(t, base)
	seed := seedAgent(t, base)
	var systems []string
	loop := newWorkerLoop(t, st, []llm.ScriptTurn{{Text: "a"}, {Text: "b"}, {Text: "c"}}, func(req llm.Request) {
		systems = append(systems, req.System)
	})
	ctx := context.Background()
	run := func() {
		t.Helper()
		seed.createTasks(t, base, "x", 1)
		claimed, err := st.ClaimQueued(ctx, "w", time.Hour, 1)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim = %v, %v", claimed, err)
		}
		loop.Run(ctx, nil, &claimed[0], "w")
	}
	run()
	run()
	prompt := "You are the renamed agent."
	if _, err := other.UpdateAgent(ctx, seed.agent.ID, seed.user.ID, store.AgentFields{SystemPrompt: &prompt}, nil); err != nil {
		t.Fatal(err)
	}
	run()
	if len(systems) != 3 || systems[0] != systems[1] || !strings.Contains(systems[2], prompt) || strings.Contains(systems[1], prompt) {
		t.Fatalf("system prompts of the three runs = %q", systems)
	}
}
