package server

import (
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentsvc/svc/internal/platform/sqlcount"
	"github.com/agentsvc/svc/store"
)

// dbCounts counts what this process sends to the database it opened with OpenStore: the
// statements and transactions on /metrics (svc_db_statements_total, svc_db_transactions_total).
var dbCounts sqlcount.Counts

// Names of the counting drivers the store is opened with (the real drivers, wrapped).
const (
	countedSQLite   = "svc-sqlite3-counted"
	countedMySQL    = "svc-mysql-counted"
	countedPostgres = "svc-pgx-counted"
)

func observeDB(string) sqlcount.Observer { return sqlcount.Observer{Counts: &dbCounts} }

// countingDriver registers (once) and names the counting driver of a db_driver value.
func countingDriver(dbDriver string) string {
	if dbDriver == "sqlite" || dbDriver == "sqlite3" || dbDriver == "" {
		sqlcount.Register(countedSQLite, &sqlcount.Driver{Base: store.SQLiteDriver(), Observe: observeDB})
		return countedSQLite
	}
	if dbDriver == "postgres" {
		sqlcount.Register(countedPostgres, &sqlcount.Driver{Base: stdlib.GetDefaultDriver(), Observe: observeDB})
		return countedPostgres
	}
	sqlcount.Register(countedMySQL, &sqlcount.Driver{Base: store.MySQLDriver(), Observe: observeDB})
	return countedMySQL
}
