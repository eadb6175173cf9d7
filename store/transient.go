package store

import (
	"database/sql/driver"
	"errors"
	"net"
	"syscall"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// IsTransient reports whether err is a failure of the database's moment rather than of the
// statement: SQLite's busy or locked (the busy timeout passed while another connection wrote),
// MySQL/MariaDB's lock wait timeout, deadlock, too many connections, PostgreSQL's deadlock,
// serialization failure, lock not available, too many connections, or a broken connection.
// The same work may succeed when tried again; a caller holding a task hands it back without
// counting it against the task. It inspects the drivers' typed errors, never message text.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1205, // ER_LOCK_WAIT_TIMEOUT
			1213, // ER_LOCK_DEADLOCK
			1040, // ER_CON_COUNT_ERROR (too many connections)
			1203, // ER_TOO_MANY_USER_CONNECTIONS
			1927: // ER_CONNECTION_KILLED (MariaDB)
			return true
		}
		return false
	}
	if code, ok := pgCode(err); ok {
		switch code {
		case "40P01", // deadlock_detected
			"40001", // serialization_failure
			"55P03", // lock_not_available
			"53300", // too_many_connections
			"57P01", // admin_shutdown (the server terminated the connection)
			"57P03": // cannot_connect_now (starting up or shutting down)
			return true
		}
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) {
		return true
	}
	// A network error (refused, reset, timed out, DNS). Not a bare errno: syscall.Errno has the
	// methods of net.Error too, so a missing file (ENOENT) would pass for a network failure.
	var ne net.Error
	if errors.As(err, &ne) {
		_, errno := ne.(syscall.Errno)
		return !errno
	}
	return false
}

// pgCode is the SQLSTATE of a PostgreSQL error.
func pgCode(err error) (string, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, true
	}
	return "", false
}

// maxDeadlockAttempts bounds how often a transaction that lost a deadlock runs.
const maxDeadlockAttempts = 4

// isDeadlock reports whether err is MySQL/MariaDB's ER_LOCK_DEADLOCK: the transaction was rolled
// back whole and may simply run again.
func isDeadlock(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}
