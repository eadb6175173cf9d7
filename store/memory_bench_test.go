package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// fillMemories gives one user of one agent n memories of 12 words each, drawn from a vocabulary
// of 5,000 words (in SQL, 500 rows a statement: Remember one by one would take longer than the
// benchmark). It returns the agent and the user.
func fillMemories(tb testing.TB, s *store.Store, n int) (agentID, userID int64) {
	tb.Helper()
	u := storetest.User(tb, s)
	a := storetest.Agent(tb, s, u.PrincipalID)
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx%s", i, strings.Repeat("e", i%7))
	}
	db := s.GormDBForTest()
	now := time.Now().UTC()
	for done := 0; done < n; {
		batch := min(500, n-done)
		vals := make([]string, 0, batch)
		args := make([]any, 0, batch*6)
		for range batch {
			words := make([]string, 12)
			for j := range words {
				words[j] = vocab[rng.IntN(len(vocab))]
			}
			text := strings.Join(words, " ") + "."
			vals = append(vals, "(?, ?, ?, ?, ?, ?)")
			args = append(args, a.ID, u.ID, text, store.MemoryTermsForTest(text), now, now)
		}
		q := "INSERT INTO agent_memories (agent_id, user_id, text, terms, created_at, updated_at) VALUES " + strings.Join(vals, ", ")
		if err := db.Exec(q, args...).Error; err != nil {
			tb.Fatal(err)
		}
		done += batch
	}
	return a.ID, u.ID
}

// BenchmarkRecall measures one recall (three query words, 10 hits) in a scope of 10,000 and of
// 100,000 memories: the numbers docs/benchmarks.md records.
//
//	go test -run '^$' -bench BenchmarkRecall -benchtime 50x ./store/
func BenchmarkRecall(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			s := storetest.New(b)
			agentID, userID := fillMemories(b, s, n)
			ctx := context.Background()
			q := store.MemoryQuery{AgentID: agentID, UserID: &userID, Text: "w17x w4242x w999x", Limit: 10}
			for b.Loop() {
				got, _, err := s.RecallMemories(ctx, q)
				if err != nil || len(got) == 0 {
					b.Fatalf("recall: %d, %v", len(got), err)
				}
			}
		})
	}
}
