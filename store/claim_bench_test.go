package store_test

import (
	"context"
	"fmt"
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
// over 10 users (the claimed tasks are queued again with the timer stopped).
func BenchmarkClaim(b *testing.B) {
	for _, depth := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("queued=%d", depth), func(b *testing.B) {
			s := storetest.New(b)
			fillQueue(b, s, 10, depth)
			ctx := context.Background()
			db := s.GormDBForTest()
			for b.Loop() {
				got, err := s.ClaimQueued(ctx, "bench", time.Hour, 16)
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
