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

// BenchmarkRecall measures one recall (three query words, 10 hits, and with the total the
// operator's list asks for) in a scope of 10,000 and of 100,000 memories, through the full-text
// index (index=…), and beside it, in the same run, the scan of every memory in the scope with a
// LIKE per word that recall was before the index (scan=…): the numbers docs/benchmarks.md
// records.
//
//	go test -run '^$' -bench BenchmarkRecall -benchtime 20x ./store/
func BenchmarkRecall(b *testing.B) {
	const words = "w17x w4242x w999x"
	scan := "SELECT id, (" + strings.Repeat("CASE WHEN terms LIKE ? THEN 1 ELSE 0 END + ", 2) + "CASE WHEN terms LIKE ? THEN 1 ELSE 0 END) AS score " +
		"FROM agent_memories WHERE agent_id = ? AND user_id = ? AND (terms LIKE ? OR terms LIKE ? OR terms LIKE ?) ORDER BY score DESC, id DESC LIMIT 10"
	for _, n := range []int{10_000, 100_000} {
		s := storetest.New(b)
		agentID, userID := fillMemories(b, s, n)
		ctx := context.Background()
		for _, total := range []bool{false, true} {
			b.Run(fmt.Sprintf("index/memories=%d/total=%v", n, total), func(b *testing.B) {
				q := store.MemoryQuery{AgentID: agentID, UserID: &userID, Text: words, Limit: 10, Total: total}
				for b.Loop() {
					got, _, err := s.RecallMemories(ctx, q)
					if err != nil || len(got) == 0 {
						b.Fatalf("recall: %d, %v", len(got), err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("scan/memories=%d", n), func(b *testing.B) {
			likes := []any{}
			for _, w := range strings.Fields(words) {
				likes = append(likes, "% "+w+"%")
			}
			args := append(append(append([]any{}, likes...), agentID, userID), likes...)
			for b.Loop() {
				var ids []struct{ ID, Score int64 }
				if err := s.GormDBForTest().Raw(scan, args...).Scan(&ids).Error; err != nil || len(ids) == 0 {
					b.Fatalf("scan: %d, %v", len(ids), err)
				}
			}
		})
	}
}
