package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsvc/svc/internal/platform/sqlcount"
)

// WatchDatabase exposes what this process sent to its database, read from read at scrape
// time: svc_db_statements_total (every statement, reads and writes) and
// svc_db_transactions_total by kind (write: commits that wrote, i.e. transactions with a write
// plus writes outside a transaction; read: transactions that ended without a write). Divided by
// the tasks drained in the same interval they give the database cost of a task.
func (m *Metrics) WatchDatabase(read func() sqlcount.Snapshot) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&dbCollector{read: read})
}

var (
	dbStatementsDesc = prometheus.NewDesc(Namespace+"_db_statements_total",
		"Statements this process sent to its database (reads and writes; BEGIN and COMMIT not included).", nil, nil)
	dbTxDesc = prometheus.NewDesc(Namespace+"_db_transactions_total",
		"Database transactions of this process by kind: write (commits that wrote, including single writes outside a transaction), read (transactions that ended without a write).",
		[]string{"kind"}, nil)
)

// dbCollector reads the counters once per scrape.
type dbCollector struct{ read func() sqlcount.Snapshot }

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- dbStatementsDesc
	ch <- dbTxDesc
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.read()
	ch <- prometheus.MustNewConstMetric(dbStatementsDesc, prometheus.CounterValue, float64(s.Statements))
	ch <- prometheus.MustNewConstMetric(dbTxDesc, prometheus.CounterValue, float64(s.WriteTxs), "write")
	ch <- prometheus.MustNewConstMetric(dbTxDesc, prometheus.CounterValue, float64(s.ReadTxs), "read")
}
