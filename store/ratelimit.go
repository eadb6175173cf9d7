package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// RateLimitHit records one event of key in its fixed window starting at start (Unix
// milliseconds; the window is window milliseconds long) when allow, given the count of the
// window before (prev) and of this one before the event (curr), says so; it returns the counts
// after the decision and the verdict. The key's current window is counted with an atomic
// upsert-increment whose row lock (SQLite: the immediate transaction's write lock) holds every
// other caller of the key, in any process, until the decision is committed; a refused event is
// taken back in the same transaction. The window before is closed, so it is read as it is.
// Errors: ErrInvalid (empty key, window not positive); the database's.
func (s *Store) RateLimitHit(ctx context.Context, key string, start, window int64, allow func(prev, curr uint64) bool) (prev, curr uint64, ok bool, err error) {
	if key == "" || window <= 0 { // stays: the limiter's own arguments (internal/platform/ratelimit), not user input
		return 0, 0, false, invalidf("rate limit: key and window are required")
	}
	got, err := inTx(ctx, s, func(tx *gorm.DB) (limitCounts, error) {
		c, err := rateLimitHit(tx, key, start, window, allow)
		if err != nil || c.ok {
			return c, err
		}
		if _, err := rawExec(tx, "UPDATE rate_limit_windows SET hits = hits - 1 WHERE limit_key = ? AND window_start = ?",
			key, start); err != nil {
			return limitCounts{}, fmt.Errorf("count rate limit: %w", err)
		}
		return c, nil
	})
	return got.prev, got.curr, got.ok, err
}

// LimitHit is a rate-limit event decided inside the transaction of the write it guards
// (NewTask.Limit): the window's upsert and the verdict ride in the write's own transaction
// instead of one of their own, under the same row lock as RateLimitHit's, so the limit holds
// across processes all the same. A refusal rolls the whole write back.
type LimitHit struct {
	Key           string
	Start, Window int64 // as RateLimitHit's
	// Allow is RateLimitHit's allow: the verdict on the counts read under the lock (it may
	// be asked again when the transaction is retried).
	Allow func(prev, curr uint64) bool
	// Refused is the error the write returns, with nothing stored, when Allow refuses.
	Refused func() error
	// Done, when set, is told how the write's transaction ended (nil: committed, the event
	// counted).
	Done func(err error)
}

// CountLimitHit counts h in a transaction of its own, for a write that must know the verdict
// before it starts (one that stores files first). Errors: h.Refused(), ErrInvalid (empty key,
// window not positive), the database's.
func (s *Store) CountLimitHit(ctx context.Context, h *LimitHit) error {
	err := s.tx(ctx, h.apply)
	h.done(err)
	return err
}

// done tells h.Done how its transaction ended.
func (h *LimitHit) done(err error) {
	if h != nil && h.Done != nil {
		h.Done(err)
	}
}

// apply counts h in tx and returns h.Refused() when it is refused.
func (h *LimitHit) apply(tx *gorm.DB) error {
	if h.Key == "" || h.Window <= 0 {
		return invalidf("rate limit: key and window are required")
	}
	c, err := rateLimitHit(tx, h.Key, h.Start, h.Window, h.Allow)
	if err != nil {
		return err
	}
	if !c.ok {
		return h.Refused()
	}
	return nil
}

// limitCounts are a window's counts after a decision, and the verdict.
type limitCounts struct {
	prev, curr uint64
	ok         bool
}

// rateLimitHit counts one event of key in the window starting at start, in tx, and asks allow
// with the counts before it; a refused event stays counted (the caller takes it back or rolls
// the transaction back). One round trip: on SQLite and PostgreSQL the upsert returns the
// window's count and the one before; MySQL/MariaDB, whose upsert returns nothing, get the
// upsert and a locking read of both as one multi-statement text (mysqlDSN), the driver
// skipping the upsert's result.
func rateLimitHit(tx *gorm.DB, key string, start, window int64, allow func(prev, curr uint64) bool) (limitCounts, error) {
	expires := start + 2*window // after two windows its count weighs nothing
	q := "INSERT INTO rate_limit_windows (limit_key, window_start, hits, expires_at) VALUES (?, ?, 1, ?) " +
		"ON CONFLICT (limit_key, window_start) DO UPDATE SET hits = rate_limit_windows.hits + 1 " +
		"RETURNING hits, (SELECT p.hits FROM rate_limit_windows p WHERE p.limit_key = ? AND p.window_start = ?)"
	args := []any{key, start, expires, key, start - window}
	if tx.Dialector.Name() == DialectMySQL {
		q = "INSERT INTO rate_limit_windows (limit_key, window_start, hits, expires_at) VALUES (?, ?, 1, ?) " +
			"ON DUPLICATE KEY UPDATE hits = hits + 1; " +
			"SELECT c.hits, (SELECT p.hits FROM rate_limit_windows p WHERE p.limit_key = ? AND p.window_start = ?) " +
			"FROM rate_limit_windows c WHERE c.limit_key = ? AND c.window_start = ? FOR UPDATE"
		args = append(args, key, start)
	}
	var hits int64
	var before sql.NullInt64
	rows, err := rawQuery(tx, q, args...)
	if err != nil {
		return limitCounts{}, fmt.Errorf("count rate limit: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return limitCounts{}, fmt.Errorf("count rate limit: %w", err)
		}
		return limitCounts{}, fmt.Errorf("count rate limit: the upsert returned no row")
	}
	if err := rows.Scan(&hits, &before); err != nil {
		return limitCounts{}, fmt.Errorf("count rate limit: %w", err)
	}
	if err := rows.Close(); err != nil {
		return limitCounts{}, fmt.Errorf("count rate limit: %w", err)
	}
	if hits < 1 {
		return limitCounts{}, fmt.Errorf("count rate limit: the window's row reads %d", hits)
	}
	c := limitCounts{curr: uint64(hits - 1)}
	if before.Valid {
		c.prev = uint64(max(before.Int64, 0))
	}
	if allow(c.prev, c.curr) {
		c.curr++
		c.ok = true
	}
	return c, nil
}

// DeleteRateLimitWindowsBefore removes the rate-limit windows that expired before t
// (housekeeping: they weigh nothing in any decision) and returns how many.
func (s *Store) DeleteRateLimitWindowsBefore(ctx context.Context, t time.Time) (int64, error) {
	res := s.conn(ctx).Exec("DELETE FROM rate_limit_windows WHERE expires_at < ?", t.UnixMilli())
	return res.RowsAffected, res.Error
}
