package metrics

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentsvc/svc/internal/platform/sqlcount"
)

func TestDatabaseCounters(t *testing.T) {
	m := New()
	snap := sqlcount.Snapshot{Statements: 22, Writes: 5, Txs: 3, WriteTxs: 3, ReadTxs: 1}
	m.WatchDatabase(func() sqlcount.Snapshot { return snap })
	want := func(stmts, writes, reads int) string {
		return `
# HELP svc_db_statements_total Statements this process sent to its database (reads and writes; BEGIN and COMMIT not included).
# TYPE svc_db_statements_total counter
svc_db_statements_total ` + strconv.Itoa(stmts) + `
# HELP svc_db_transactions_total Database transactions of this process by kind: write (commits that wrote, including single writes outside a transaction), read (transactions that ended without a write).
# TYPE svc_db_transactions_total counter
svc_db_transactions_total{kind="read"} ` + strconv.Itoa(reads) + `
svc_db_transactions_total{kind="write"} ` + strconv.Itoa(writes) + `
`
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want(22, 3, 1)), "svc_db_statements_total", "svc_db_transactions_total"); err != nil {
		t.Fatal(err)
	}
	snap.Statements, snap.WriteTxs = 40, 7 // read again at each scrape
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want(40, 7, 1)), "svc_db_statements_total", "svc_db_transactions_total"); err != nil {
		t.Fatal(err)
	}
}
