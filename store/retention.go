package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Retention: what housekeeping deletes once it is old enough (issue 28; the ages are the
// retention_* settings, the passes internal/jobs/retention). Every method deletes at most limit
// rows (or tasks) in one short transaction and returns how many, so a pass is a series of small
// batches that never holds locks for long, and several processes may run the same pass at once:
// each batch reads its candidates and deletes them by primary key, so a row another process
// deleted first only makes the batch smaller. Errors: the database's, translated.

// PruneFinishedTasks deletes up to limit top-level tasks (chats) that finished (finished_at,
// set on entering COMPLETED, FAILED, CANCELLED or ABORTED and cleared when a task moves on)
// before before, oldest first, with everything that hangs on them (messages, events, tool
// calls, questions, sub-agent tasks: the foreign keys cascade). A task with a sub-agent task
// still unfinished is left for a later pass, and one that moved on meanwhile (a follow-up
// cleared finished_at) is not deleted.
func (s *Tasks) PruneFinishedTasks(ctx context.Context, before time.Time, limit int) (int64, error) {
	cut := normTime(before)
	var ids []int64
	err := s.conn(ctx).Model(&taskRow{}).
		Where("parent_task_id IS NULL AND finished_at < ?", cut).
		Where("NOT EXISTS (SELECT 1 FROM tasks c WHERE c.parent_task_id = tasks.id AND c.finished_at IS NULL)").
		Order("finished_at, id").Limit(limit).Pluck("id", &ids).Error
	if err != nil || len(ids) == 0 {
		return 0, TranslateError(wrapIf(err, "finished tasks to delete"))
	}
	var n int64
	err = s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Where("id IN ? AND finished_at < ?", ids, cut).Delete(&taskRow{})
		n = res.RowsAffected
		return wrapIf(res.Error, "delete finished tasks")
	})
	return n, err
}

// taskEventsMark is where PruneTaskEvents got to: every task finished before (At, ID) in
// (finished_at, id) order had its events deleted. Kept as an internal setting, so each process
// starts where the last pass of any process ended instead of at the oldest finished task.
type taskEventsMark struct {
	At time.Time `json:"at"`
	ID int64     `json:"id"`
}

const taskEventsMarkKey = InternalSettingPrefix + "retention_task_events"

// PruneTaskEvents deletes the event log of up to limit tasks that finished before before (the
// oldest first after the mark of the last pass), and returns how many tasks it went over. A task
// that moves on later (a follow-up) numbers its new events after the deleted ones
// (tasks.event_seq) and has them deleted in turn once it finishes again.
func (s *Tasks) PruneTaskEvents(ctx context.Context, before time.Time, limit int) (int64, error) {
	cut := normTime(before)
	var done int64
	err := s.tx(ctx, func(tx *gorm.DB) error {
		var mark taskEventsMark
		var rows []settingRow
		if err := tx.Where(clause.Eq{Column: clause.Column{Name: "key"}, Value: taskEventsMarkKey}).Limit(1).Find(&rows).Error; err != nil {
			return fmt.Errorf("task events mark: %w", err)
		}
		if len(rows) > 0 {
			_ = json.Unmarshal([]byte(rows[0].Value), &mark) // an unreadable mark starts over
		}
		var tasks []struct {
			ID         int64
			FinishedAt time.Time
		}
		err := tx.Model(&taskRow{}).Select("id, finished_at").
			Where("finished_at < ? AND (finished_at > ? OR (finished_at = ? AND id > ?))", cut, normTime(mark.At), normTime(mark.At), mark.ID).
			Order("finished_at, id").Limit(limit).Find(&tasks).Error
		if err != nil {
			return fmt.Errorf("finished tasks: %w", err)
		}
		if len(tasks) == 0 {
			return nil
		}
		ids := make([]int64, len(tasks))
		for i, t := range tasks {
			ids[i] = t.ID
		}
		res := tx.Where("task_id IN ?", ids).Delete(&taskEventRow{})
		if res.Error != nil {
			return fmt.Errorf("delete task events: %w", res.Error)
		}
		done = int64(len(tasks))
		last := tasks[len(tasks)-1]
		b, _ := json.Marshal(taskEventsMark{At: last.FinishedAt.UTC(), ID: last.ID})
		return tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "key"}},
			DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"}),
		}).Create(&settingRow{Key: taskEventsMarkKey, Value: string(b), UpdatedAt: s.now()}).Error
	})
	return done, err
}

// PruneOutboxes deletes up to limit rows of each outbox (webhook deliveries, mail, and the
// notification notices given up: a delivered notice is deleted at once) that were delivered or
// given up before before, and returns how many in all. Pending rows are never deleted, however
// old.
func (s *Outboxes) PruneOutboxes(ctx context.Context, before time.Time, limit int) (int64, error) {
	var n int64
	for _, o := range []outbox{webhookOutbox(), mailOutbox(), noticeOutbox()} {
		d, err := deleteOldest[int64](ctx, s.Store, o.table, "state IN ? AND finished_at < ?", []any{[]string{o.done, o.gaveUp}, normTime(before)}, "id", limit)
		n += d
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// PruneUsageLedger deletes up to limit usage ledger rows of days before day (YYYY-MM-DD); the
// daily rollup (usage_daily) that reports and budgets read keeps their sums.
func (s *Store) PruneUsageLedger(ctx context.Context, day string, limit int) (int64, error) {
	return deleteOldest[int64](ctx, s, "usage_ledger", "day < ?", []any{day}, "id", limit)
}

// deleteOldest deletes up to limit rows of table matching where, first in order: it reads their
// ids (of type ID), then deletes them by id (MySQL cannot delete with a LIMIT subquery on the
// same table). The where condition is checked again by the delete.
func deleteOldest[ID int64 | string](ctx context.Context, s *Store, table, where string, args []any, order string, limit int) (int64, error) {
	var ids []ID
	if err := s.conn(ctx).Table(table).Where(where, args...).Order(order).Limit(limit).Pluck("id", &ids).Error; err != nil {
		return 0, TranslateError(fmt.Errorf("%s to delete: %w", table, err))
	}
	if len(ids) == 0 {
		return 0, nil
	}
	res := s.conn(ctx).Exec("DELETE FROM "+table+" WHERE id IN ? AND ("+where+")", append([]any{ids}, args...)...)
	return res.RowsAffected, TranslateError(wrapIf(res.Error, "delete from "+table))
}

// wrapIf wraps a non-nil err with what was being done.
func wrapIf(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
