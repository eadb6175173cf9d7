package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// The outboxes (webhook_deliveries, mail_outbox) share one shape and one machinery
// (docs/design.md "Durability and clients": anything delivered outside the process goes
// through a durable outbox with a lease): columns
// state ('pending' while deliverable), attempts, next_attempt_at, lease_until, last_error,
// updated_at and finished_at; a claim leases due rows until a deadline that is also the
// claim's fencing token; finishing an attempt either marks the row delivered or counts the
// failure and schedules the next attempt from the outbox's Backoff, giving up after the last.

// outboxPending is the deliverable state of every outbox.
const outboxPending = "pending"

// maxOutboxErrorLen bounds last_error (characters).
const maxOutboxErrorLen = 1000

// Backoff is the retry schedule of an outbox: Delays[i] is the wait after the (i+1)-th failed
// attempt; the failure after the last delay gives up, so len(Delays)+1 attempts are made at most.
type Backoff struct{ Delays []time.Duration }

// MaxAttempts is the number of attempts after which a failing item is given up.
func (b Backoff) MaxAttempts() int { return len(b.Delays) + 1 }

// next returns when an item that has failed attempts times is due again, and false when it is
// given up instead.
func (b Backoff) next(now time.Time, attempts int) (time.Time, bool) {
	if attempts >= b.MaxAttempts() || attempts < 1 {
		return time.Time{}, false
	}
	return normTime(now.Add(b.Delays[attempts-1])), true
}

// outbox names one outbox table and how it ends.
type outbox struct {
	table    string // the table
	noun     string // "webhook delivery", "mail": error messages
	gaveUp   string // the state of an item given up ("abandoned", "failed")
	done     string // the state of a delivered item
	schedule Backoff
}

// outboxClaimWhere selects due pending rows whose lease is free or expired; the order follows
// the (state, next_attempt_at) index every outbox has.
const (
	outboxClaimWhere = "state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)"
	outboxClaimOrder = "next_attempt_at, id"
)

// claim leases up to limit due pending rows of o until now+lease in tx and loads them into
// rows (a slice of the table's row type), oldest due first. Concurrent claimers never receive
// the same row while its lease runs: SQLite claims with one UPDATE … RETURNING inside its
// immediate transaction, PostgreSQL with one UPDATE … RETURNING whose subquery locks the rows
// with FOR UPDATE SKIP LOCKED, MySQL/MariaDB selects with FOR UPDATE SKIP LOCKED and updates in
// the same transaction. The caller sorts (RETURNING has no order).
func (o outbox) claim(tx *gorm.DB, dialect string, now time.Time, lease time.Duration, limit int, rows any) error {
	until := normTime(now.Add(lease))
	if dialect != DialectMySQL {
		lock := ""
		if dialect == DialectPostgres {
			lock = " FOR UPDATE SKIP LOCKED"
		}
		q := "UPDATE " + o.table + " SET lease_until = ?, updated_at = ? WHERE id IN (SELECT id FROM " + o.table + " WHERE " +
			outboxClaimWhere + " ORDER BY " + outboxClaimOrder + " LIMIT ?" + lock + ") RETURNING *"
		return tx.Raw(q, until, now, now, now, limit).Scan(rows).Error
	}
	var ids []int64
	q := "SELECT id FROM " + o.table + " WHERE " + outboxClaimWhere + " ORDER BY " + outboxClaimOrder + " LIMIT ? FOR UPDATE SKIP LOCKED"
	if err := tx.Raw(q, now, now, limit).Scan(&ids).Error; err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	if err := tx.Table(o.table).Where("id IN ?", ids).Updates(map[string]any{"lease_until": until, "updated_at": now}).Error; err != nil {
		return err
	}
	return tx.Table(o.table).Where("id IN ?", ids).Find(rows).Error
}

// claimOutbox is the claim of every outbox: it checks the worker id and the lease, leases up to
// limit due rows of o (claim), orders them oldest due first (due gives a row's due time and id)
// and converts them in the same transaction. Errors: ErrInvalid (empty or oversize worker id,
// lease not positive), the database's.
func claimOutbox[R, T any](ctx context.Context, s *Store, o outbox, workerID string, limit int, lease time.Duration,
	due func(*R) (time.Time, int64), convert func(tx *gorm.DB, rows []R) ([]T, error)) ([]T, error) {
	// Stays: the arguments of the dispatchers (internal/platform/outbox), not user input; a guard of the
	// lease that fences every later write of these rows.
	if err := checkKey("worker id", workerID, true); err != nil {
		return nil, err
	}
	if lease <= 0 {
		return nil, invalidf("lease must be positive")
	}
	if limit < 1 {
		return []T{}, nil
	}
	return inTx(ctx, s, func(tx *gorm.DB) ([]T, error) {
		var rows []R
		if err := o.claim(tx, s.dialect, s.now(), lease, limit, &rows); err != nil {
			return nil, fmt.Errorf("claim %s rows (%s): %w", o.noun, workerID, err)
		}
		sortDue(rows, due)
		return convert(tx, rows)
	})
}

// sortDue orders claimed rows oldest due first, then by id.
func sortDue[R any](rows []R, key func(*R) (time.Time, int64)) {
	sort.Slice(rows, func(i, j int) bool {
		ti, ii := key(&rows[i])
		tj, ij := key(&rows[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return ii < ij
	})
}

// cleanErrorText bounds and sanitises an attempt's error for last_error.
func cleanErrorText(errText string) string {
	if r := []rune(errText); len(r) > maxOutboxErrorLen {
		errText = string(r[:maxOutboxErrorLen])
	}
	return strings.ToValidUTF8(strings.ReplaceAll(errText, "\x00", ""), "\uFFFD")
}

// finish records the outcome of an attempt at row id claimed with lease (the claim's fencing
// token: a dispatcher whose lease expired and was taken over writes nothing), in tx. ok: the
// row is delivered. Otherwise attempts grows by one, errText becomes last_error and the row is
// due again after the schedule's delay, or given up after the last attempt. The lease is
// released either way. It reports whether the row was given up. Errors: ErrNotFound
// "<noun> not found", ErrInvalidState when the row is no longer pending under that lease.
func (o outbox) finish(tx *gorm.DB, now time.Time, id int64, lease time.Time, ok bool, errText string) (gaveUp bool, err error) {
	var attempts []int
	match := tx.Table(o.table).Where("id = ? AND state = ? AND lease_until = ?", id, outboxPending, normTime(lease))
	if err := match.Pluck("attempts", &attempts).Error; err != nil {
		return false, fmt.Errorf("finish %s %d: %w", o.noun, id, err)
	}
	if len(attempts) == 0 {
		var n int64
		if err := tx.Table(o.table).Where("id = ?", id).Count(&n).Error; err != nil {
			return false, fmt.Errorf("finish %s %d: %w", o.noun, id, err)
		}
		if n == 0 {
			return false, svcerr.New(svcerr.ErrNotFound, "%s not found", o.noun)
		}
		return false, o.lostLease(id)
	}
	ch := map[string]any{"lease_until": nil, "updated_at": now}
	if ok {
		ch["state"], ch["finished_at"] = o.done, now
	} else {
		n := attempts[0] + 1
		ch["attempts"], ch["last_error"] = n, cleanErrorText(errText)
		if due, retry := o.schedule.next(now, n); retry {
			ch["next_attempt_at"] = due
		} else {
			ch["state"], ch["finished_at"], gaveUp = o.gaveUp, now, true
		}
	}
	res := tx.Table(o.table).Where("id = ? AND state = ? AND lease_until = ?", id, outboxPending, normTime(lease)).Updates(ch)
	if res.Error != nil {
		return false, fmt.Errorf("finish %s %d: %w", o.noun, id, res.Error)
	}
	if res.RowsAffected == 0 {
		return false, o.lostLease(id)
	}
	return gaveUp, nil
}

func (o outbox) lostLease(id int64) error {
	return svcerr.New(svcerr.ErrInvalidState, "%s %d is no longer pending under this lease", o.noun, id)
}
