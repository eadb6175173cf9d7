package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// fillQueue makes depth QUEUED tasks spread evenly over users users (doubling copies of one
// task per user, in SQL: creating them one by one would take longer than the benchmark).
func fillQueue(tb testing.TB, s *store.Store, users, depth int) {
	tb.Helper()
	db := s.GormDBForTest()
	for range users {
		u := storetest.User(tb, s)
		storetest.Task(tb, s, storetest.Agent(tb, s, u.PrincipalID), u.ID)
	}
	rows, err := db.Raw("SELECT * FROM tasks LIMIT 0").Rows()
	if err != nil {
		tb.Fatal(err)
	}
	cols, _ := rows.Columns()
	_ = rows.Close()
	var keep []string
	for _, c := range cols {
		if c != "id" {
			keep = append(keep, c)
		}
	}
	list := strings.Join(keep, ", ")
	for n := users; n < depth; n *= 2 {
		lim := min(n, depth-n)
		// MySQL cannot select from the table it inserts into without a derived table.
		q := fmt.Sprintf("INSERT INTO tasks (%s) SELECT %s FROM (SELECT %s FROM tasks ORDER BY id LIMIT %d) AS src", list, list, list, lim)
		if err := db.Exec(q).Error; err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkClaim measures one ClaimQueued of 16 tasks against a queue of the given depth spread
// over 10 users (the claimed tasks are queued again with the timer stopped), and reports the
// claims' p50 and p99 besides the mean: a claim's cost must not grow with the queue's depth.
func BenchmarkClaim(b *testing.B) {
	for _, depth := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprintf("queued=%d", depth), func(b *testing.B) {
			s := storetest.New(b)
			fillQueue(b, s, 10, depth)
			ctx := context.Background()
			db := s.GormDBForTest()
			var took []time.Duration
			defer func() {
				slices.Sort(took)
				at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))]) / 1e6 }
				b.ReportMetric(at(0.50), "p50-ms")
				b.ReportMetric(at(0.99), "p99-ms")
			}()
			for b.Loop() {
				start := time.Now()
				got, err := s.ClaimQueued(ctx, "bench", time.Hour, 16)
				took = append(took, time.Since(start))
				if err != nil || len(got) != 16 {
					b.Fatalf("claim: %d, %v", len(got), err)
				}
				b.StopTimer()
				if err := db.Exec("UPDATE tasks SET status = 'QUEUED', lease_owner = NULL, lease_expires_at = NULL WHERE status = 'RUNNING'").Error; err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkClaimRankMySQL compares, on MySQL/MariaDB only, the fair ranking of 64 candidates
// (a claim of 16) by the two-step seek of store/taskclaim.go with the window function over
// every queued row that it replaced (window=…), in the same run, at each queue depth.
func BenchmarkClaimRankMySQL(b *testing.B) {
	if storetest.Dialect() != store.DialectMySQL {
		b.Skip("MySQL/MariaDB only: set SVC_TEST_MYSQL_DSN")
	}
	const window = "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY id) AS user_rank " +
		"FROM tasks WHERE status = 'QUEUED') AS ranked ORDER BY user_rank, id LIMIT ?"
	for _, depth := range []int{1000, 10000, 50000} {
		s := storetest.New(b)
		fillQueue(b, s, 10, depth)
		db := s.GormDBForTest()
		b.Run(fmt.Sprintf("seek/queued=%d", depth), func(b *testing.B) {
			for b.Loop() {
				if ids, err := store.RankQueuedMySQLForTest(db, 64); err != nil || len(ids) != 64 {
					b.Fatalf("rank: %d, %v", len(ids), err)
				}
			}
		})
		b.Run(fmt.Sprintf("window/queued=%d", depth), func(b *testing.B) {
			for b.Loop() {
				var ids []int64
				if err := db.Raw(window, 64).Scan(&ids).Error; err != nil || len(ids) != 64 {
					b.Fatalf("rank: %d, %v", len(ids), err)
				}
			}
		})
	}
}
