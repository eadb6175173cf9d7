package store_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("create agent: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"sqlite busy", wrap(sqlite3.Error{Code: sqlite3.ErrBusy}), true},
		{"sqlite full", wrap(sqlite3.Error{Code: sqlite3.ErrFull}), true},
		{"sqlite ioerr", wrap(sqlite3.Error{Code: sqlite3.ErrIoErr}), true},
		{"sqlite constraint", wrap(sqlite3.Error{Code: sqlite3.ErrConstraint}), false},
		{"mysql too many connections", wrap(&gomysql.MySQLError{Number: 1040}), true},
		{"mysql disk full", wrap(&gomysql.MySQLError{Number: 1021}), true},
		{"mysql gone away", wrap(&gomysql.MySQLError{Number: 2006}), true},
		{"mysql lost", wrap(&gomysql.MySQLError{Number: 2013}), true},
		{"mysql socket", wrap(&gomysql.MySQLError{Number: 2002}), true},
		{"mysql host", wrap(&gomysql.MySQLError{Number: 2003}), true},
		{"mysql duplicate", wrap(&gomysql.MySQLError{Number: 1062}), false},
		{"postgres disk full", wrap(&pgconn.PgError{Code: "53100"}), true},
		{"postgres too many connections", wrap(&pgconn.PgError{Code: "53300"}), true},
		{"postgres shutting down", wrap(&pgconn.PgError{Code: "57P01"}), true},
		{"postgres deadlock", wrap(&pgconn.PgError{Code: "40P01"}), true},
		{"postgres lock not available", wrap(&pgconn.PgError{Code: "55P03"}), true},
		{"postgres read-only", wrap(&pgconn.PgError{Code: "25006"}), true},
		{"postgres unique violation", wrap(&pgconn.PgError{Code: "23505"}), false},
		{"postgres syntax", wrap(&pgconn.PgError{Code: "42601"}), false},
		{"connection refused", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), true},
		{"connection reset", wrap(syscall.ECONNRESET), true},
		{"enospc", wrap(&os.PathError{Op: "write", Path: "/data/svc.sqlite-wal", Err: syscall.ENOSPC}), true},
		{"bad connection", wrap(driver.ErrBadConn), true},
		{"invalid connection", wrap(gomysql.ErrInvalidConn), true},
		{"closed pool", wrap(sql.ErrConnDone), true},
		{"flattened full", errors.New("create agent: database or disk is full"), true},
		{"flattened closed", errors.New("sql: database is closed"), true},
		{"missing file", wrap(&os.PathError{Op: "open", Path: "/data/media/x", Err: syscall.ENOENT}), false},
		{"permission", wrap(&os.PathError{Op: "open", Path: "/data/media/x", Err: syscall.EACCES}), false},
		{"not found", wrap(svcerr.ErrNotFound), false},
		{"cancelled", wrap(context.Canceled), false},
		{"plain", errors.New("boom"), false},
		{"nil", nil, false},
	} {
		if got := store.IsUnavailable(tc.err); got != tc.want {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestProbeWrite(t *testing.T) {
	t.Parallel()
	st, faults := storetest.NewFaulty(t)
	ctx := context.Background()
	if err := st.ProbeWrite(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.ProbeWrite(ctx); err != nil { // the second rewrites the row
		t.Fatal(err)
	}
	faults.FailWritesAs(storetest.FaultFull)
	err := st.ProbeWrite(ctx)
	if err == nil || !store.IsUnavailable(err) {
		t.Fatalf("probe on a full disk: %v", err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("reads keep working: %v", err)
	}
	faults.FailWritesAs(storetest.NoFault)
	if err := st.ProbeWrite(ctx); err != nil {
		t.Fatal(err)
	}
}
