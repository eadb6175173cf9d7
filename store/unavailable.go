package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/mattn/go-sqlite3"
)

// IsUnavailable reports whether err says the database cannot serve at the moment, as opposed
// to a fault of the statement or of the request: everything IsTransient accepts (busy or locked
// beyond the busy wait, lock wait timeout, deadlock, too many connections, a broken or refused
// connection), and also a full or failing disk (SQLite SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN,
// SQLITE_READONLY; MySQL/MariaDB ER_DISK_FULL 1021, ER_RECORD_FILE_FULL 1114, ER_OUT_OF_RESOURCES
// 1041, ER_SERVER_SHUTDOWN 1053, read-only 1290/1836; PostgreSQL classes 53 (insufficient
// resources: disk full, out of memory), 57P (shutdown), 58 (I/O error), 08 (connection
// exception) and 25006 (read-only transaction); errno 28 ENOSPC, EIO), the client's
// connection errors (2002 socket, 2003 host, 2006 gone away, 2013 lost; ECONNREFUSED,
// ECONNRESET, EPIPE, ETIMEDOUT) and a pool that was closed. The HTTP layer answers these 503
// SERVICE_UNAVAILABLE with Retry-After. Typed errors first; a few well-known driver messages
// are recognised too, for the errors that reach here flattened to text.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if IsTransient(err) {
		return true
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrFull, sqlite3.ErrIoErr, sqlite3.ErrCantOpen, sqlite3.ErrReadonly:
			return true
		}
		return false
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1021, // ER_DISK_FULL
			1114, // ER_RECORD_FILE_FULL (the table is full)
			1041, // ER_OUT_OF_RESOURCES
			1053, // ER_SERVER_SHUTDOWN
			1290, // ER_OPTION_PREVENTS_STATEMENT (--read-only)
			1836, // ER_READ_ONLY_MODE
			2002, // CR_CONNECTION_ERROR (socket)
			2003, // CR_CONN_HOST_ERROR
			2006, // CR_SERVER_GONE_ERROR
			2013: // CR_SERVER_LOST
			return true
		}
		return false
	}
	if code, ok := pgCode(err); ok {
		return strings.HasPrefix(code, "53") || strings.HasPrefix(code, "57P") || strings.HasPrefix(code, "58") ||
			strings.HasPrefix(code, "08") || code == "25006"
	}
	for _, e := range []error{syscall.ENOSPC, syscall.EIO, syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range unavailableMessages {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// unavailableMessages are driver messages of an unavailable database, for errors whose type did
// not survive (formatted with %v by a library on the way).
var unavailableMessages = []string{
	"database or disk is full", "disk i/o error", "database is locked", "no space left on device",
	"disk full", "connection refused", "connection reset", "bad connection", "invalid connection",
	"server has gone away", "lost connection", "sql: database is closed", "too many connections",
}

// writeProbeKey is the rate_limit_windows row ProbeWrite rewrites (no limiter uses the key: a
// limiter's keys are "<operation>|<address>"). Its expiry lets housekeeping remove it when the
// probes stop.
const writeProbeKey = "svc.readyz.write-probe"

// ProbeWrite commits one small write (an upsert of a row of its own), so a readiness check sees
// a database that answers reads but refuses writes: a full disk, a read-only file system or
// server, a write lock held beyond the busy wait. Errors: the database's.
func (s *Store) ProbeWrite(ctx context.Context) error {
	expires := s.now().Add(writeProbeTTL).UnixMilli()
	q := "INSERT INTO rate_limit_windows (limit_key, window_start, hits, expires_at) VALUES (?, 0, 1, ?) " +
		"ON CONFLICT (limit_key, window_start) DO UPDATE SET expires_at = excluded.expires_at"
	if s.dialect == DialectMySQL {
		q = "INSERT INTO rate_limit_windows (limit_key, window_start, hits, expires_at) VALUES (?, 0, 1, ?) " +
			"ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at)"
	}
	if err := s.conn(ctx).Exec(q, writeProbeKey, expires).Error; err != nil {
		return fmt.Errorf("store: write probe: %w", err)
	}
	return nil
}

// writeProbeTTL is how long the write probe's row outlives the last probe.
const writeProbeTTL = 24 * time.Hour
