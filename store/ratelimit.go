package store

import (
	"context"
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
	type counts struct {
		prev, curr uint64
		ok         bool
	}
	expires := start + 2*window // after two windows its count weighs nothing
	got, err := inTx(ctx, s, func(tx *gorm.DB) (counts, error) {
		var hits []int64
		if s.dialect != DialectMySQL {
			if err := tx.Raw("INSERT INTO rate_limit_windows (limit_key, window_start, hits, expires_at) VALUES (?, ?, 1, ?) "+
				"ON CONFLICT (limit_key, window_start) DO UPDATE SET hits = rate_limit_windows.hits + 1 RETURNING hits",
				key, start, expires).Scan(&hits).Error; err != nil {
				return counts{}, fmt.Errorf("count rate limit: %w", err)
			}
		} else {
			if err := tx.Exec("INSERT INTO rate_limit_windows (limit_key, window_start, hits, expires_at) VALUES (?, ?, 1, ?) "+
				"ON DUPLICATE KEY UPDATE hits = hits + 1", key, start, expires).Error; err != nil {
				return counts{}, fmt.Errorf("count rate limit: %w", err)
			}
			if err := tx.Raw("SELECT hits FROM rate_limit_windows WHERE limit_key = ? AND window_start = ? FOR UPDATE",
				key, start).Scan(&hits).Error; err != nil {
				return counts{}, fmt.Errorf("count rate limit: %w", err)
			}
		}
		if len(hits) != 1 || hits[0] < 1 {
			return counts{}, fmt.Errorf("count rate limit: the window's row reads %v", hits)
		}
		var before []int64
		if err := tx.Raw("SELECT hits FROM rate_limit_windows WHERE limit_key = ? AND window_start = ?",
			key, start-window).Scan(&before).Error; err != nil {
			return counts{}, fmt.Errorf("count rate limit: %w", err)
		}
		c := counts{curr: uint64(hits[0] - 1)}
		if len(before) == 1 {
			c.prev = uint64(max(before[0], 0))
		}
		if allow(c.prev, c.curr) {
			c.curr++
			c.ok = true
			return c, nil
		}
		if err := tx.Exec("UPDATE rate_limit_windows SET hits = hits - 1 WHERE limit_key = ? AND window_start = ?",
			key, start).Error; err != nil {
			return counts{}, fmt.Errorf("count rate limit: %w", err)
		}
		return c, nil
	})
	return got.prev, got.curr, got.ok, err
}

// DeleteRateLimitWindowsBefore removes the rate-limit windows that expired before t
// (housekeeping: they weigh nothing in any decision) and returns how many.
func (s *Store) DeleteRateLimitWindowsBefore(ctx context.Context, t time.Time) (int64, error) {
	res := s.conn(ctx).Exec("DELETE FROM rate_limit_windows WHERE expires_at < ?", t.UnixMilli())
	return res.RowsAffected, res.Error
}
