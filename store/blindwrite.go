package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// Blind writes: statements whose result nobody reads (an INSERT without RETURNING, an upsert).
// A step writes four of them — its usage ledger row, the daily rollup, its message, its
// events — and on a server each was a round trip of its own (issue 28: the worker's CPU went
// to a socket write and read per statement). Inside holdBlind's scope they are held and sent
// by flush in one round trip: on PostgreSQL as one statement, the first ones as data-modifying
// WITH clauses of the last (it runs them all, in one snapshot, none seeing another's rows); on
// MySQL/MariaDB, which has no data-modifying WITH, as one multi-statement text (run in order;
// never prepared, the driver writes the arguments into it: mysqlDSN). A read in the scope of a
// table a held write fills must therefore flush first (flushHeld: enqueueCallbacks reads the
// step's message). SQLite, in the process, runs each at once.
//
// On MySQL/MariaDB the writes of a commit group share one scope (groupBlind): each step's held
// writes wait for the group's end and the group sends them all in one text, one round trip a
// group instead of one a step (its statements run in order, as the steps would have run them).
// A step's scope inside the group's is the group's (holdBlind), so a step's own flush sends
// nothing; the group flushes once its held text grows past maxGroupHeld. PostgreSQL keeps a
// scope a step: one WITH cannot upsert a rollup row twice, and two steps of a group may share
// one.

type blindKey struct{}

// blindWrites are the held statements of a scope, with their arguments in order.
type blindWrites struct {
	qs    []string
	args  []any
	bytes int // the held texts' and arguments' length, roughly (the text MySQL is sent)
}

// maxGroupHeld bounds the held text of a commit group on MySQL/MariaDB before the group sends
// it (at the end of a step): well under the servers' smallest default max_allowed_packet
// (4 MiB on MySQL 5.7), even with every byte escaped.
const maxGroupHeld = 1 << 20

// holdBlind returns tx with a scope that holds its blind writes (blindExec) until flush, on
// PostgreSQL and MySQL/MariaDB; on SQLite tx itself and a nil scope (whose flush does nothing).
// Inside a scope already (a commit group's: groupBlind) it returns tx and a nil scope: the
// writes join the enclosing scope, whose owner sends them.
func holdBlind(tx *gorm.DB) (*gorm.DB, *blindWrites) {
	if tx.Dialector.Name() == DialectSQLite || heldIn(tx) != nil {
		return tx, nil
	}
	w := &blindWrites{}
	return tx.WithContext(w.within(tx.Statement.Context)), w
}

// groupBlind returns the scope the writes of a commit group share, on MySQL/MariaDB (nil
// elsewhere: see above).
func groupBlind(tx *gorm.DB) *blindWrites {
	if tx.Dialector.Name() != DialectMySQL {
		return nil
	}
	return &blindWrites{}
}

// within returns ctx with w as its scope of held writes; ctx itself for a nil w.
func (w *blindWrites) within(ctx context.Context) context.Context {
	if w == nil {
		return ctx
	}
	return context.WithValue(ctx, blindKey{}, w)
}

// heldIn returns the scope of held writes tx is in, or nil.
func heldIn(tx *gorm.DB) *blindWrites {
	w, _ := tx.Statement.Context.Value(blindKey{}).(*blindWrites)
	return w
}

// blindExec runs q, a blind write, in tx, or holds it when tx is inside holdBlind's scope.
// Errors: the database's (a held write's, from flush).
func blindExec(tx *gorm.DB, q string, args ...any) error {
	if w := heldIn(tx); w != nil {
		w.qs, w.args = append(w.qs, q), append(w.args, args...)
		w.bytes += len(q)
		for _, a := range args {
			switch v := a.(type) {
			case string:
				w.bytes += len(v)
			case *string:
				if v != nil {
					w.bytes += len(*v)
				}
			case []byte:
				w.bytes += len(v)
			default:
				w.bytes += 8
			}
		}
		return nil
	}
	_, err := rawExec(tx, q, args...)
	return err
}

// flushHeld sends the writes held in tx's scope, if any, before a read that must see them.
// Errors: the database's.
func flushHeld(tx *gorm.DB) error {
	return heldIn(tx).flush(tx)
}

// flush sends the held writes in one round trip — on PostgreSQL one statement (WITH w0 AS (…),
// w1 AS (…) <the last>), on MySQL one text of statements separated by semicolons — and empties
// the scope. Errors: the database's.
func (w *blindWrites) flush(tx *gorm.DB) error {
	if w == nil || len(w.qs) == 0 {
		return nil
	}
	if tx.Dialector.Name() != DialectPostgres {
		return w.send(tx, strings.Join(w.qs, "; "))
	}
	var b strings.Builder
	last := len(w.qs) - 1
	for i, q := range w.qs[:last] {
		if i == 0 {
			b.WriteString("WITH ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString("w" + strconv.Itoa(i) + " AS (" + q + ")")
	}
	if last > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(w.qs[last])
	return w.send(tx, b.String())
}

// send runs q, the held writes' text, with their arguments and empties the scope.
func (w *blindWrites) send(tx *gorm.DB, q string) error {
	_, err := rawExec(tx, q, w.args...)
	w.qs, w.args, w.bytes = w.qs[:0], w.args[:0], 0
	if err != nil {
		return fmt.Errorf("the held writes: %w", err)
	}
	return nil
}
