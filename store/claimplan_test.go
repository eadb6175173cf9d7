package store_test

import (
	"strings"
	"testing"

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
