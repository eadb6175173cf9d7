package storetest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/mattn/go-sqlite3"

	"github.com/agentsvc/svc/internal/platform/sqlcount"
	"github.com/agentsvc/svc/store"
)

// Faults makes the writes of a store opened by NewFaulty fail on demand the way a busy
// database fails them: SQLite's "database is locked" (SQLITE_BUSY), MySQL's lock wait timeout
// (1205), PostgreSQL's lock_not_available (55P03). Reads keep working. Safe for concurrent use.
//
// The same driver counts what the store sends (Counts): statements, transactions, and write
// transactions (a transaction that ran a write statement, or a write outside a transaction:
// each is one commit), for tests and benchmarks of what a code path costs.
type Faults struct {
	on          atomic.Int32 // a Fault
	commits     atomic.Int64 // commits still to refuse (FailCommits)
	commitFault atomic.Int32 // how they fail
	failed      atomic.Int64
	mysql       bool
	pg          bool

	counts sqlcount.Counts
	trace  atomic.Pointer[func(query string)]
}

// Trace makes every statement sent (and BEGIN/COMMIT) be told to f; nil stops.
func (f *Faults) Trace(fn func(query string)) {
	if fn == nil {
		f.trace.Store(nil)
		return
	}
	f.trace.Store(&fn)
}

func (f *Faults) traced(q string) {
	if fn := f.trace.Load(); fn != nil {
		(*fn)(q)
	}
}

// Counts is what a store opened by NewFaulty (or NewCounted) sent to its database.
type Counts struct {
	Statements int64 // every statement, reads and writes (BEGIN and COMMIT not included)
	Writes     int64 // INSERT, UPDATE, DELETE, REPLACE statements
	Txs        int64 // transactions begun
	WriteTxs   int64 // commits that wrote: transactions with a write, plus writes outside one
	Prepares   int64 // statements prepared (the store keeps them: once per connection)
}

// Sub is c minus an earlier reading.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Statements: c.Statements - o.Statements, Writes: c.Writes - o.Writes, Txs: c.Txs - o.Txs, WriteTxs: c.WriteTxs - o.WriteTxs, Prepares: c.Prepares - o.Prepares}
}

// Counts reads the counters.
func (f *Faults) Counts() Counts {
	c := f.counts.Snapshot()
	return Counts{Statements: c.Statements, Writes: c.Writes, Txs: c.Txs, WriteTxs: c.WriteTxs, Prepares: c.Prepares}
}

// NewCounted is NewFaulty for a test that only counts statements (it never turns faults on).
func NewCounted(t testing.TB) (*store.Store, *Faults) {
	t.Helper()
	return NewFaulty(t)
}

// Fault is how injected write failures fail.
type Fault int32

const (
	NoFault   Fault = iota // writes work
	FaultBusy              // SQLite SQLITE_BUSY ("database is locked"), MySQL 1205 (lock wait timeout)
	FaultFull              // SQLite SQLITE_FULL ("database or disk is full"), MySQL 1021 (ER_DISK_FULL)
)

// FailWrites turns the failure of every write statement (INSERT, UPDATE, DELETE, REPLACE) on or
// off, as a busy database fails them (FaultBusy).
func (f *Faults) FailWrites(on bool) {
	if on {
		f.FailWritesAs(FaultBusy)
	} else {
		f.FailWritesAs(NoFault)
	}
}

// FailWritesAs makes every write statement fail the way kind says (NoFault: none).
func (f *Faults) FailWritesAs(kind Fault) { f.on.Store(int32(kind)) }

// FailCommits makes the next n commits fail the way kind says (FaultBusy: a transient error,
// which the store retries; FaultFull: one it does not), the transaction rolled back;
// statements keep working.
func (f *Faults) FailCommits(n int, kind Fault) {
	f.commitFault.Store(int32(kind))
	f.commits.Store(int64(n))
}

// Failed is how many write statements and commits failed so far.
func (f *Faults) Failed() int64 { return f.failed.Load() }

func (f *Faults) check(query string) error {
	if f == nil {
		return nil
	}
	kind := Fault(f.on.Load())
	if query == "COMMIT" {
		for {
			n := f.commits.Load()
			if n <= 0 {
				return nil
			}
			if f.commits.CompareAndSwap(n, n-1) {
				f.failed.Add(1)
				return f.fault(Fault(f.commitFault.Load()))
			}
		}
	}
	if kind == NoFault {
		return nil
	}
	q := strings.ToUpper(strings.TrimSpace(query))
	for _, w := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if strings.HasPrefix(q, w) {
			f.failed.Add(1)
			return f.fault(kind)
		}
	}
	return nil
}

// fault is the error a busy or full database answers on this dialect.
func (f *Faults) fault(kind Fault) error {
	switch {
	case f.pg && kind == FaultFull:
		return &pgconn.PgError{Severity: "ERROR", Code: "53100", Message: "could not extend file: No space left on device (injected)"}
	case f.pg:
		return &pgconn.PgError{Severity: "ERROR", Code: "55P03", Message: "canceling statement due to lock timeout (injected)"}
	case f.mysql && kind == FaultFull:
		return &gomysql.MySQLError{Number: 1021, Message: "Disk full (/var/lib/mysql); waiting for someone to free some space... (injected)"}
	case f.mysql:
		return &gomysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded; try restarting transaction (injected)"}
	case kind == FaultFull:
		return sqlite3.Error{Code: sqlite3.ErrFull}
	}
	return sqlite3.Error{Code: sqlite3.ErrBusy}
}

// NewFaulty is New on a store whose writes fail while its Faults say so.
func NewFaulty(t testing.TB) (*store.Store, *Faults) {
	t.Helper()
	sqlcount.Register(faultySQLite, &sqlcount.Driver{Base: store.SQLiteDriver(), Observe: observe})
	sqlcount.Register(faultyMySQL, &sqlcount.Driver{Base: store.MySQLDriver(), Observe: observe})
	sqlcount.Register(faultyPostgres, &sqlcount.Driver{Base: stdlib.GetDefaultDriver(), Observe: observe})
	f := &Faults{}
	opts := migratedOptions(t)
	switch opts.Driver {
	case "mysql":
		f.mysql = true
		opts.SQLDriverName = faultyMySQL
	case "postgres":
		f.pg = true
		opts.SQLDriverName = faultyPostgres
	default:
		opts.SQLDriverName = faultySQLite
	}
	// The store adds its parameters to the DSN: faults are found by the database's name (on
	// PostgreSQL, by the schema's, in the search_path parameter).
	key := opts.SQLitePath
	if f.pg {
		// The parameter up to the next one: names end in a fixed-width random part, so
		// none is the start of another.
		i := strings.LastIndex(opts.PostgresDSN, "search_path=")
		key = opts.PostgresDSN[i:]
		if j := strings.IndexAny(key, "& "); j >= 0 {
			key = key[:j]
		}
	}
	if f.mysql {
		cfg, err := gomysql.ParseDSN(opts.MySQLDSN)
		if err != nil {
			t.Fatal(err)
		}
		key = "/" + cfg.DBName + "?"
	}
	faultsByDSN.Store(key, f)
	t.Cleanup(func() { faultsByDSN.Delete(key) })
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("storetest: open faulty %s store: %v", opts.Driver, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("storetest: close store: %v", err)
		}
	})
	return s, f
}

const (
	faultySQLite   = "storetest-faulty-sqlite3"
	faultyMySQL    = "storetest-faulty-mysql"
	faultyPostgres = "storetest-faulty-postgres"
)

var faultsByDSN sync.Map // key (a substring of the DSN) → *Faults

func faultsOf(dsn string) *Faults {
	var out *Faults
	faultsByDSN.Range(func(k, v any) bool {
		if strings.Contains(dsn, k.(string)) {
			out = v.(*Faults)
			return false
		}
		return true
	})
	return out
}

// observe is what a connection of the faulty drivers reports to: the Faults of its DSN, if any.
func observe(dsn string) sqlcount.Observer {
	f := faultsOf(dsn)
	if f == nil {
		return sqlcount.Observer{}
	}
	return sqlcount.Observer{Counts: &f.counts, Check: f.check, Trace: f.traced}
}
