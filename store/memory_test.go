package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func texts(ms []store.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

func remember(t *testing.T, s *store.Store, agentID int64, userID *int64, text string) *store.Memory {
	t.Helper()
	m, err := s.Remember(context.Background(), store.NewMemory{AgentID: agentID, UserID: userID, Text: text}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRecallRanking checks the documented ranking on both dialects: matched query terms first,
// then the most recent; words match by their start, case and punctuation aside; stop words are
// ignored; scopes never mix.
func TestRecallRanking(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	uid := &f.user.ID
	remember(t, f.s, f.agent.ID, uid, "The user's favourite colour is green.")
	remember(t, f.s, f.agent.ID, uid, "Coffee: black, no sugar.")
	remember(t, f.s, f.agent.ID, uid, "Favourite coffee place is Café Central in Vienna.")
	remember(t, f.s, f.agent.ID, nil, "The team's favourite colour is blue (agent-wide).")
	remember(t, f.s, f.agent.ID, &f.other.ID, "Other user: favourite colour red.")

	got, total, err := f.s.RecallMemories(ctx, store.MemoryQuery{AgentID: f.agent.ID, UserID: uid, Text: "What is the favourite COFFEE?", Limit: 10, Total: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Favourite coffee place is Café Central in Vienna.", "Coffee: black, no sugar.", "The user's favourite colour is green."}
	if total != 3 || len(got) != 3 || got[0].Text != want[0] || got[1].Text != want[1] || got[2].Text != want[2] {
		t.Fatalf("recall = %q (total %d), want %q", texts(got), total, want)
	}
	got, _, err = f.s.RecallMemories(ctx, store.MemoryQuery{AgentID: f.agent.ID, UserID: uid, Text: "caf", Limit: 10})
	if err != nil || len(got) != 1 || got[0].Text != want[0] {
		t.Fatalf("prefix recall = %q, %v", texts(got), err)
	}
	got, _, err = f.s.RecallMemories(ctx, store.MemoryQuery{AgentID: f.agent.ID, Text: "colour", Limit: 10})
	if err != nil || len(got) != 1 || got[0].Text != "The team's favourite colour is blue (agent-wide)." {
		t.Fatalf("agent-wide recall = %q, %v", texts(got), err)
	}
	got, total, err = f.s.RecallMemories(ctx, store.MemoryQuery{AgentID: f.agent.ID, AllUsers: true, Text: "colour", Limit: 2, Total: true})
	if err != nil || total != 3 || len(got) != 2 {
		t.Fatalf("operator recall = %q (total %d), %v", texts(got), total, err)
	}
	got, total, err = f.s.RecallMemories(ctx, store.MemoryQuery{AgentID: f.agent.ID, UserID: uid, Text: "the is", Limit: 10, Total: true})
	if err != nil || total != 3 || got[0].Text != want[0] {
		t.Fatalf("stop words only list the most recent: %q (total %d), %v", texts(got), total, err)
	}
	got, _, err = f.s.RecallMemories(ctx, store.MemoryQuery{AgentID: f.agent.ID, UserID: uid, Text: "100% _x", Limit: 10})
	if err != nil || len(got) != 0 {
		t.Fatalf("wildcards are words, not patterns: %q, %v", texts(got), err)
	}
}

func TestMemoryEditForgetAndCascade(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	tk := f.create(t, "remember this")
	seq := 3
	m, err := f.s.Remember(ctx, store.NewMemory{AgentID: f.agent.ID, UserID: &f.user.ID, Text: "likes tea", TaskID: &tk.ID, MessageSequence: &seq}, nil)
	if err != nil || m.TaskID == nil || *m.TaskID != tk.ID || m.MessageSequence == nil || *m.MessageSequence != 3 {
		t.Fatalf("remember = %+v, %v", m, err)
	}
	up, err := f.s.UpdateMemory(ctx, f.agent.ID, m.ID, "likes green tea", nil)
	if err != nil || up.Text != "likes green tea" {
		t.Fatalf("update = %+v, %v", up, err)
	}
	got, _, err := f.s.RecallMemories(ctx, store.MemoryQuery{AgentID: f.agent.ID, UserID: &f.user.ID, Text: "green", Limit: 5})
	if err != nil || len(got) != 1 {
		t.Fatalf("recall after edit = %q, %v", texts(got), err)
	}
	other := storetest.Agent(t, f.s, f.user.PrincipalID)
	if _, err := f.s.UpdateMemory(ctx, other.ID, m.ID, "x", nil); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("update through another agent: %v", err)
	}
	if err := f.s.ForgetMemory(ctx, f.agent.ID, m.ID, true, &f.other.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("forget out of scope: %v", err)
	}
	if err := f.s.ForgetMemory(ctx, f.agent.ID, m.ID, true, &f.user.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Memory(ctx, f.agent.ID, m.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("forgotten memory: %v", err)
	}

	kept := remember(t, f.s, other.ID, nil, "agent-wide fact")
	if err := f.s.DeleteAgent(ctx, other.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Memory(ctx, other.ID, kept.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("memory of a deleted agent: %v", err)
	}
	if _, err := f.s.Remember(ctx, store.NewMemory{AgentID: other.ID, Text: "x"}, nil); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("remember for a deleted agent: %v", err)
	}
}

// TestRecallFullText checks recall through the full-text indexes on both dialects: a word
// InnoDB does not index (two letters) and words of its default stop list are found like any
// other; an edited memory is found by its new words only, a forgotten one not at all, and on
// SQLite the FTS4 table agrees with its content after edits and the agent's deletion.
func TestRecallFullText(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	agent := storetest.Agent(t, f.s, f.user.PrincipalID)
	remember(t, f.s, agent.ID, nil, "Prefers Go over Rust for services")
	about := remember(t, f.s, agent.ID, nil, "Wrote about Vienna coffee houses")
	gone := remember(t, f.s, agent.ID, nil, "Temporary note about kiwis")
	recall := func(q string) []string {
		t.Helper()
		got, _, err := f.s.RecallMemories(ctx, store.MemoryQuery{AgentID: agent.ID, Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return texts(got)
	}
	if got := recall("go"); len(got) != 1 || got[0] != "Prefers Go over Rust for services" {
		t.Fatalf("two-letter word: %q", got)
	}
	if got := recall("about"); len(got) != 2 {
		t.Fatalf("a word of InnoDB's stop list: %q", got)
	}
	if got := recall("serv vien"); len(got) != 2 {
		t.Fatalf("prefixes ORed: %q", got)
	}
	if _, err := f.s.UpdateMemory(ctx, agent.ID, about.ID, "Wrote on Graz tea rooms", nil); err != nil {
		t.Fatal(err)
	}
	if got := recall("vienna"); len(got) != 0 {
		t.Fatalf("an edited memory found by its old words: %q", got)
	}
	if got := recall("graz"); len(got) != 1 {
		t.Fatalf("an edited memory not found by its new words: %q", got)
	}
	if err := f.s.ForgetMemory(ctx, agent.ID, gone.ID, true, nil); err != nil {
		t.Fatal(err)
	}
	if got := recall("kiwis"); len(got) != 0 {
		t.Fatalf("a forgotten memory recalled: %q", got)
	}
	if err := f.s.DeleteAgent(ctx, agent.ID, nil); err != nil {
		t.Fatal(err)
	}
	if storetest.Dialect() == store.DialectSQLite {
		db := f.s.GormDBForTest()
		if err := db.Exec("INSERT INTO agent_memories_fts (agent_memories_fts) VALUES ('integrity-check')").Error; err != nil {
			t.Fatalf("FTS4 index out of step with agent_memories: %v", err)
		}
		var n int64
		if err := db.Raw("SELECT COUNT(*) FROM agent_memories_fts WHERE agent_memories_fts MATCH 'graz* OR prefers*'").Scan(&n).Error; err != nil || n != 0 {
			t.Fatalf("index rows of a deleted agent's memories: %d, %v", n, err)
		}
	}
}
