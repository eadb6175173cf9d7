package store_test

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestClaimPlanPostgres reads the plan of PostgreSQL's locking claim right after a burst filled
// the queue, before any ANALYZE: the statistics still say the table is nearly empty. The ranked
// candidates must be fetched by primary key; a join that reads the queued rows for each
// candidate made the claim grow with the queue (docs/benchmarks.md, "Fair claim cost"), and
// the ranking runs once. Its schema is fresh: a pooled one's tables may have been analyzed full.
func TestClaimPlanPostgres(t *testing.T) {
	if storetest.Dialect() != store.DialectPostgres {
		t.Skip("PostgreSQL only: set SVC_TEST_POSTGRES_DSN")
	}
	s := storetest.NewFresh(t)
	fillQueue(t, s, 10, 5000)
	var plan []string
	if err := s.GormDBForTest().Raw("EXPLAIN " + store.QueuedFairPostgresForTest(16)).Scan(&plan).Error; err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "Index Cond: (id = ANY (c.ids))") || strings.Contains(text, "Join Filter") ||
		strings.Count(text, "CTE claim_ranks") != 1 {
		t.Fatalf("the claim does not fetch its candidates by primary key:\n%s", text)
	}
}

// TestClaimRankMySQLReadsFewRows ranks a claim's candidates on MySQL/MariaDB right after a burst
// filled the queue of a fresh schema, whose statistics still say the tasks table is empty: the
// optimizer then preferred reading every queued entry of (status, user_id, id) to the loose
// index scan, and each claim of a drain read the whole queue (docs/benchmarks.md, "Fair claim
// cost"). The rows the ranking reads, counted by the connection's handler counters, must not
// grow with the queue.
func TestClaimRankMySQLReadsFewRows(t *testing.T) {
	if storetest.Dialect() != store.DialectMySQL {
		t.Skip("MySQL/MariaDB only: set SVC_TEST_MYSQL_DSN")
	}
	s := storetest.NewFresh(t)
	const depth = 5000
	fillQueue(t, s, 10, depth)
	err := s.GormDBForTest().Transaction(func(tx *gorm.DB) error {
		reads := func() int64 {
			var rows []struct {
				VariableName string `gorm:"column:Variable_name"`
				Value        int64  `gorm:"column:Value"`
			}
			if err := tx.Raw("SHOW SESSION STATUS LIKE 'Handler_read%'").Scan(&rows).Error; err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, r := range rows {
				n += r.Value
			}
			return n
		}
		before := reads()
		ids, err := store.RankQueuedMySQLForTest(tx, 16)
		if err != nil {
			return err
		}
		read := reads() - before
		if len(ids) != 16 {
			t.Fatalf("ranked %d candidates, want 16", len(ids))
		}
		if read > depth/10 {
			t.Fatalf("ranking 16 of %d queued tasks read %d rows: it grows with the queue", depth, read)
		}
		t.Logf("ranking 16 of %d queued tasks read %d rows", depth, read)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
