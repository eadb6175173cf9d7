package store_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// fillUsage writes n ledger rows over the 365 days before end (in SQL, 500 rows a statement:
// recording them step by step would take hours) and builds the daily rollup from them, as the
// steps' transactions would have: 100 users, each on one of 50 agents (two groups' principals),
// a fifth of the calls through a per-agent key, two models.
func fillUsage(tb testing.TB, s *store.Store, n int, end time.Time) {
	tb.Helper()
	db := s.GormDBForTest()
	rng := rand.New(rand.NewPCG(3, 4))
	cols := "created_at, day, task_id, agent_id, principal_id, user_id, api_key_id, llm_config_id, model, input_tokens, " +
		"cached_input_tokens, output_tokens, price_input, price_output, price_cached_input, cost"
	for done := 0; done < n; {
		batch := min(500, n-done)
		vals := make([]string, 0, batch)
		args := make([]any, 0, batch*16)
		for i := range batch {
			at := end.Add(-time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
			user := int64(1 + rng.IntN(100))
			agent := 1 + (user-1)%50
			var key any
			if rng.IntN(5) == 0 {
				key = agent
			}
			model := []string{"gpt-4.1-mini", "claude-sonnet"}[rng.IntN(2)]
			in, out := int64(500+rng.IntN(5000)), int64(50+rng.IntN(500))
			vals = append(vals, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, at, s.Day(at), done+i+1, agent, 1000+agent%2, user, key, 1, model, in, 0, out, 3_000_000, 15_000_000, nil,
				(in*3_000_000+out*15_000_000)/1_000_000)
		}
		if err := db.Exec("INSERT INTO usage_ledger ("+cols+") VALUES "+strings.Join(vals, ", "), args...).Error; err != nil {
			tb.Fatal(err)
		}
		done += batch
	}
	err := db.Exec(`INSERT INTO usage_daily (day, agent_id, principal_id, user_id, api_key_id, llm_config_id, model, shard, calls,
		input_tokens, cached_input_tokens, output_tokens, cost)
		SELECT day, agent_id, principal_id, user_id, COALESCE(api_key_id, 0), COALESCE(llm_config_id, 0), model, task_id % 32, COUNT(*),
		SUM(input_tokens), SUM(cached_input_tokens), SUM(output_tokens), SUM(cost) FROM usage_ledger
		GROUP BY day, agent_id, principal_id, user_id, COALESCE(api_key_id, 0), COALESCE(llm_config_id, 0), model, task_id % 32`).Error
	if err != nil {
		tb.Fatal(err)
	}
	if s.Dialect() == store.DialectSQLite {
		if err := db.Exec("ANALYZE").Error; err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkUsage measures GET /usage's query (store.Usage) on a year of 1,000,000 ledger rows:
// an administrator's year by agent, a group manager's year by day for one group, a user's
// month, and a per-agent key's month; beside it, in the same run, the administrator's year
// summed from the ledger itself (ledger=…), what the query would cost without the rollup: the
// numbers docs/benchmarks.md records.
//
//	go test -run '^$' -bench BenchmarkUsage -benchtime 20x -timeout 30m ./store/
func BenchmarkUsage(b *testing.B) {
	s := storetest.New(b)
	end := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	fillUsage(b, s, 1_000_000, end)
	var rollup int64
	s.GormDBForTest().Raw("SELECT COUNT(*) FROM usage_daily").Scan(&rollup)
	b.Logf("%s: 1,000,000 ledger rows, %d rollup rows", s.Dialect(), rollup)
	ctx := context.Background()
	year, month := s.Day(end.AddDate(-1, 0, 1)), s.Day(end.AddDate(0, -1, 0))
	today := s.Day(end)
	principal, user, key := int64(1001), int64(7), int64(7)
	for _, c := range []struct {
		name string
		q    store.UsageQuery
	}{
		{"admin-year-by-agent", store.UsageQuery{From: year, To: today, GroupBy: []string{store.UsageByAgent}, All: true}},
		{"group-year-by-day", store.UsageQuery{From: year, To: today, GroupBy: []string{store.UsageByDay}, PrincipalID: &principal, All: true}},
		{"user-month-by-model", store.UsageQuery{From: month, To: today, GroupBy: []string{store.UsageByModel}, Viewer: user}},
		{"key-month", store.UsageQuery{From: month, To: today, APIKeyID: &key, All: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := s.Usage(ctx, c.q)
				if err != nil || len(rows) == 0 {
					b.Fatalf("Usage = %d rows, %v", len(rows), err)
				}
			}
		})
	}
	b.Run("ledger=admin-year-by-agent", func(b *testing.B) {
		for b.Loop() {
			var rows []struct{ AgentID, Cost int64 }
			err := s.GormDBForTest().Raw("SELECT agent_id, SUM(cost) AS cost FROM usage_ledger WHERE day >= ? AND day <= ? GROUP BY agent_id ORDER BY agent_id",
				year, today).Scan(&rows).Error
			if err != nil || len(rows) == 0 {
				b.Fatalf("ledger sum = %d rows, %v", len(rows), err)
			}
		}
	})
}
