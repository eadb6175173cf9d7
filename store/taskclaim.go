package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// claimLease is what a claim sets besides the status (setStatus derives the rest from
// taskstate.Claim or taskstate.ClaimRetry): the lease.
func claimLease(worker string, until time.Time) map[string]any {
	return map[string]any{"lease_owner": worker, "lease_expires_at": until}
}

// Each kind of claim (QUEUED tasks, then due retries) is fair across users: tasks are ranked
// within their user by the kind's order (QUEUED: id, oldest first; due retries: (next_retry_at,
// id)), and a batch takes rank 1 of every user before rank 2 of any (ties by id, oldest first).
// So a user with 100 queued tasks and a user with one share the next batch, and the one task
// waits at most one poll interval.
//
// On SQLite, QUEUED tasks are ranked without reading the queue (queuedFairSQLite): each
// user's oldest task is found by a walk of the (status, user_id, id) index of migration 0018,
// one seek per user with queued tasks; when fewer users than wanted have queued tasks, their
// next ones are walked too, only as deep as a batch could reach (want − users + 1 ranks).
// Ranking every queued row with ROW_NUMBER() on each claim cost 12.6 ms per claim of 16 from
// 10,000 queued tasks (BenchmarkClaim; 4.0 ms now, the rest being the claim's writes).
// MariaDB runs the same walk's correlated seeks as scans of the whole status (its range access
// needs constants: 300 ms per claim from 10,000), and a window function over the queued rows
// grows with the queue (7 ms at 1,000, 30 ms at 50,000), so MySQL/MariaDB rank in two steps
// (rankQueuedMySQL): each user's oldest by a loose index scan of the same index, then, only
// when fewer users than wanted have queued tasks, each one's next tasks by one seek with
// constants. Due retries are few (the (status, next_retry_at) index bounds them) and keep the
// window function on every dialect.
const (
	claimQueuedWhere = "status = 'QUEUED'"
	claimRetryWhere  = "status = 'FAILED' AND next_retry_at IS NOT NULL AND next_retry_at <= ?"
)

// fairWindow is the SELECT of up to ? ids of tasks matching where (with its arguments first),
// in the fair order, ranked by a window function over every candidate.
func fairWindow(where, order string) string {
	return "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY " + order +
		") AS user_rank FROM tasks WHERE " + where + ") AS ranked ORDER BY user_rank, id LIMIT ?"
}

var retryFair = fairWindow(claimRetryWhere, "next_retry_at, id")

// queuedFairSQLite is the SELECT of up to ? ids of QUEUED tasks in the fair order; its first
// argument is the same number. claim_users walks the users with queued tasks in user_id order,
// one index seek each (a loose index scan, which SQLite does not make of a GROUP BY);
// claim_ranks walks each user's tasks from the oldest, rank by rank, while a batch could still
// reach the rank.
const queuedFairSQLite = "WITH RECURSIVE claim_users (uid) AS (" +
	"SELECT MIN(user_id) FROM tasks WHERE status = 'QUEUED' " +
	"UNION ALL SELECT (SELECT MIN(t.user_id) FROM tasks t WHERE t.status = 'QUEUED' AND t.user_id > u.uid) " +
	"FROM claim_users u WHERE u.uid IS NOT NULL), " +
	"claim_ranks (uid, id, r) AS (" +
	"SELECT uid, (SELECT MIN(t.id) FROM tasks t WHERE t.status = 'QUEUED' AND t.user_id = u.uid), 1 FROM claim_users u WHERE uid IS NOT NULL " +
	"UNION ALL SELECT c.uid, (SELECT MIN(t.id) FROM tasks t WHERE t.status = 'QUEUED' AND t.user_id = c.uid AND t.id > c.id), c.r + 1 " +
	"FROM claim_ranks c WHERE c.id IS NOT NULL AND c.r <= ? - (SELECT COUNT(*) FROM claim_users WHERE uid IS NOT NULL)) " +
	"SELECT id FROM claim_ranks WHERE id IS NOT NULL ORDER BY r, id LIMIT ?"

// PostgreSQL locks each kind's batch in one SELECT … FOR UPDATE SKIP LOCKED in the fair order,
// then moves it with one UPDATE … RETURNING: the candidates are ranked without locking (QUEUED
// tasks by SQLite's walk, which PostgreSQL also runs as one index seek per user; due retries by
// the window function), claimCandidates times as many as wanted, into an array, and the outer
// SELECT locks the first free ones in rank order, re-checking the kind's condition on each row
// it locks (READ COMMITTED re-reads a row changed meanwhile). A row another claimer holds is
// skipped, never waited for, so claimers do not deadlock and need no retry.
//
// The plan must not depend on the statistics: after a burst, before autovacuum's next ANALYZE,
// they still say few tasks are QUEUED, and a plan that reads the kind's rows through the status
// index (joined to the candidates, or filtered by them) reads the whole queue: 45 ms per claim
// at 50,000 queued instead of 6 (docs/benchmarks.md, "Fair claim cost"). So the candidates are
// fetched by primary key only: the array is materialised once, and the kind's condition is
// wrapped in IS TRUE, which no index answers, so it is checked on the fetched rows.
func pgLockedFair(ranked, where string) string {
	return "WITH claim_ids AS MATERIALIZED (SELECT ARRAY(" + ranked + ") AS ids) SELECT t.id FROM claim_ids c, tasks t WHERE t.id = ANY(c.ids) AND (" +
		where + ") IS TRUE ORDER BY array_position(c.ids, t.id) LIMIT ? FOR UPDATE OF t SKIP LOCKED"
}

var (
	queuedFairPostgresTemplate = pgLockedFair(queuedFairSQLite, "t.status = 'QUEUED'")
	retryFairPostgres          = pgLockedFair(retryFair, "t.status = 'FAILED' AND t.next_retry_at IS NOT NULL AND t.next_retry_at <= ?")
)

// queuedFairPostgres is PostgreSQL's locking read of up to want QUEUED tasks in the fair order,
// its numbers written into the text: a statement without parameters is planned once per
// connection, while with the batch sizes as parameters PostgreSQL judged its generic plan
// dearer than a custom one and planned the statement on every claim (1.1 ms of a claim's
// 2.2 ms on the server, issue 28). The texts differ only by want (up to max_workers of them).
func queuedFairPostgres(want int) string {
	return withInts(queuedFairPostgresTemplate, claimCandidates*want, claimCandidates*want, want)
}

// withInts writes ns into q's '?' placeholders, in order (q has exactly len(ns)).
func withInts(q string, ns ...int) string {
	var b strings.Builder
	b.Grow(len(q) + 8*len(ns))
	for _, n := range ns {
		i := strings.IndexByte(q, '?')
		b.WriteString(q[:i])
		b.WriteString(strconv.Itoa(n))
		q = q[i+1:]
	}
	b.WriteString(q)
	return b.String()
}

// claimCandidates is how many times more candidates than wanted MySQL/MariaDB ranks before
// locking, so that the rows concurrent claimers hold (skipped) still leave the batch full.
const claimCandidates = 4

// ClaimQueued moves up to limit tasks to RUNNING, leased to workerID until now+lease: QUEUED
// tasks first, then FAILED tasks whose automatic retry is due (their retry_count grows by one,
// error and next_retry_at are cleared); within each kind, round-robin across users, oldest first
// (see claimQueuedWhere). Concurrent claimers never receive the same task: SQLite claims with
// one UPDATE … RETURNING per kind inside an immediate transaction; PostgreSQL locks the batch
// with one FOR UPDATE SKIP LOCKED read in the fair order (pgLockedFair), then updates it;
// MySQL/MariaDB ranks the
// candidates without locking, then locks them with FOR UPDATE SKIP LOCKED (re-checking the
// kind's condition) and updates the first ones in rank order in the same transaction. Errors: ErrInvalid (empty or oversize worker id, lease not positive).
func (s *Tasks) ClaimQueued(ctx context.Context, workerID string, lease time.Duration, limit int) ([]Task, error) {
	if err := checkKey("worker id", workerID, true); err != nil {
		return nil, err
	}
	if lease <= 0 {
		return nil, invalidf("lease must be positive")
	}
	out := []Task{}
	if limit < 1 {
		return out, nil
	}
	rows, err := inTx(ctx, s.Store, func(tx *gorm.DB) ([]taskRow, error) {
		var rows []taskRow
		now := s.now()
		until := normTime(now.Add(lease))
		queued := claimKind{action: taskstate.Claim, from: taskstate.Queued, where: claimQueuedWhere,
			fair: func(want int) (string, []any) { return queuedFairSQLite, []any{want, want} }}
		retry := claimKind{action: taskstate.ClaimRetry, from: taskstate.Failed, where: claimRetryWhere, whereArgs: []any{now},
			fair: func(want int) (string, []any) { return retryFair, []any{now, want} }}
		switch s.dialect {
		case DialectMySQL:
			queued.rank = rankQueuedMySQL
		case DialectPostgres:
			queued.fair = func(want int) (string, []any) { return queuedFairPostgres(want), nil }
			retry.fair = func(want int) (string, []any) {
				return retryFairPostgres, []any{now, claimCandidates * want, now, want}
			}
		}
		for _, k := range []claimKind{queued, retry} {
			n := limit - len(rows)
			if n <= 0 {
				break
			}
			got, err := s.claim(tx, k, n, workerID, until, now)
			if err != nil {
				return nil, err
			}
			rows = append(rows, got...)
		}
		return rows, nil
	})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		t, err := rows[i].toTask()
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// claimKind is one kind of claimable task.
type claimKind struct {
	action    taskstate.Action
	from      string // the status of the kind's tasks
	where     string // the condition a task of the kind meets (checked again when locking)
	whereArgs []any
	// fair is the SELECT of up to want ids of the kind in the fair order, with its arguments.
	fair func(want int) (string, []any)
	// rank, when set, replaces fair on MySQL/MariaDB: up to want ids in the fair order.
	rank func(tx *gorm.DB, want int) ([]int64, error)
}

// rankQueuedMySQL returns up to want ids of QUEUED tasks in the fair order without reading the
// queue: each user's oldest through a loose index scan of (status, user_id, id) (one seek per
// user with queued tasks, "Using index for group-by"), and when fewer users than wanted have
// queued tasks, each one's next tasks up to the depth a batch could reach (want − users + 1
// ranks), one seek each with constants. Its cost grows with the users waiting, not the tasks.
func rankQueuedMySQL(tx *gorm.DB, want int) ([]int64, error) {
	type ranked struct {
		UserID int64
		ID     int64
		rank   int
	}
	var heads []ranked
	// MariaDB chooses the loose scan for a range on status, not for the equality (which it
	// reads as a ref over every queued row): the bounds say status = 'QUEUED' its way.
	if err := tx.Raw("SELECT user_id, MIN(id) AS id FROM tasks WHERE status >= 'QUEUED' AND status <= 'QUEUED' GROUP BY status, user_id").Scan(&heads).Error; err != nil {
		return nil, err
	}
	all := heads
	for i := range all {
		all[i].rank = 1
	}
	if depth := want - len(heads); depth > 0 && len(heads) > 0 {
		var q strings.Builder
		args := make([]any, 0, 3*len(heads))
		for i, h := range heads {
			if i > 0 {
				q.WriteString(" UNION ALL ")
			}
			q.WriteString("(SELECT user_id, id FROM tasks WHERE " + claimQueuedWhere + " AND user_id = ? AND id > ? ORDER BY id LIMIT ?)")
			args = append(args, h.UserID, h.ID, depth)
		}
		var next []ranked
		if err := tx.Raw(q.String(), args...).Scan(&next).Error; err != nil {
			return nil, err
		}
		// Each user's rows arrive in id order: rank them 2, 3, … within the user.
		slices.SortFunc(next, func(a, b ranked) int { return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.ID, b.ID)) })
		for i := range next {
			next[i].rank = 2
			if i > 0 && next[i-1].UserID == next[i].UserID {
				next[i].rank = next[i-1].rank + 1
			}
		}
		all = append(all, next...)
	}
	slices.SortFunc(all, func(a, b ranked) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.ID, b.ID)) })
	ids := make([]int64, 0, min(want, len(all)))
	for _, r := range all[:min(want, len(all))] {
		ids = append(ids, r.ID)
	}
	return ids, nil
}

// claim moves up to n tasks of kind k to RUNNING in the fair order, skipping on MySQL/MariaDB
// those another claimer holds.
func (s *Store) claim(tx *gorm.DB, k claimKind, n int, worker string, until, now time.Time) ([]taskRow, error) {
	c := statusChange{action: k.action, from: k.from, to: taskstate.Running, set: claimLease(worker, until), worker: worker}
	switch s.dialect {
	case DialectSQLite:
		// The immediate transaction holds the write lock: the ranked rows are still candidates.
		q, args := k.fair(n)
		c.where, c.args = "id IN ("+q+")", args
		rows, err := s.setStatus(tx, now, c)
		return rows, wrapClaim(err)
	case DialectPostgres:
		// k.fair locks the rows it returns (pgLockedFair). Not a subquery of the UPDATE: the
		// planner may run a semi-join's inner side again, and a second run of a SKIP LOCKED
		// read returns other rows.
		var ids []int64
		q, args := k.fair(n)
		if err := tx.Raw(q, args...).Scan(&ids).Error; err != nil {
			return nil, wrapClaim(err)
		}
		if len(ids) == 0 {
			return nil, nil
		}
		c.where, c.args = idIn(tx, "id", ids)
		c.ids = ids
		rows, err := s.setStatus(tx, now, c)
		return rows, wrapClaim(err)
	}
	// Rank without locking (a locking read of the ranking would lock every row it reads), then
	// lock candidates in rank order, as many as still wanted at a time, skipping those another
	// claimer holds or took meanwhile (the condition is checked again by the locking read):
	// only the rows claimed are locked.
	var ranked []int64
	var err error
	if k.rank != nil {
		ranked, err = k.rank(tx, claimCandidates*n)
	} else {
		q, args := k.fair(claimCandidates * n)
		err = tx.Raw(q, args...).Scan(&ranked).Error
	}
	if err != nil {
		return nil, wrapClaim(err)
	}
	// The locking read returns the rows whole: the UPDATE's changes are applied to them
	// (statusChange.locked) instead of a read-back, a round trip less on the serial claimer.
	var locked []taskRow
	for len(locked) < n && len(ranked) > 0 {
		chunk := ranked[:min(n-len(locked), len(ranked))]
		ranked = ranked[len(chunk):]
		in, args := inList(chunk)
		free, err := queryTasks(tx, "SELECT "+taskColumns+" FROM tasks WHERE id IN "+in+" AND "+k.where+" FOR UPDATE SKIP LOCKED",
			append(args, k.whereArgs...)...)
		if err != nil {
			return nil, wrapClaim(err)
		}
		locked = append(locked, free...)
	}
	if len(locked) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(locked))
	for i := range locked {
		ids[i] = locked[i].ID
	}
	c.where, c.args = idIn(tx, "id", ids)
	c.ids, c.locked = ids, locked
	rows, err := s.setStatus(tx, now, c)
	return rows, wrapClaim(err)
}

// wrapClaim names the claim in a database error (nil stays nil).
func wrapClaim(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("claim tasks: %w", err)
}

// guardLease bumps updated_at of task id if workerID still holds its lease (RUNNING, same
// owner, not expired), taking the row lock for the rest of tx. Errors: ErrInvalidState when
// the lease was lost (reaped, aborted, expired, claimed by another worker), ErrNotFound.
func (s *Store) guardLease(tx *gorm.DB, id int64, workerID string, now time.Time) error {
	res := tx.Model(&taskRow{}).
		Where("id = ? AND status = ? AND lease_owner = ? AND lease_expires_at >= ?", id, taskstate.Running, workerID, now).
		Update("updated_at", now)
	if res.Error != nil {
		return fmt.Errorf("task %d: check lease: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		if _, err := loadTask(tx, id, false); err != nil {
			return err
		}
		return svcerr.New(svcerr.ErrInvalidState, "worker %s no longer holds the lease of task %d", workerID, id)
	}
	return nil
}

// inLease runs fn in a transaction after guardLease confirmed that workerID still holds the
// lease of task id, so a worker that lost its lease writes nothing; now is the time of the
// check. It returns fn's value once committed. Errors: those of guardLease (ErrInvalidState
// when the lease was lost, ErrNotFound), then fn's.
func inLease[T any](ctx context.Context, s *Store, id int64, workerID string, fn func(tx *gorm.DB, now time.Time) (T, error)) (T, error) {
	return inTx(ctx, s, func(tx *gorm.DB) (T, error) {
		now := s.now()
		if err := s.guardLease(tx, id, workerID, now); err != nil {
			var zero T
			return zero, err
		}
		return fn(tx, now)
	})
}

// ExtendLease moves the lease of a RUNNING task held by workerID to now+lease. Errors:
// ErrInvalidState when the lease was lost or the task left RUNNING (for example aborted),
// ErrNotFound "task not found", ErrInvalid for a non-positive lease.
func (s *Tasks) ExtendLease(ctx context.Context, id int64, workerID string, lease time.Duration) error {
	if lease <= 0 {
		return invalidf("lease must be positive")
	}
	// One conditional UPDATE, no transaction: the lease check is its WHERE.
	now, db := s.now(), s.conn(ctx)
	res := db.Model(&taskRow{}).Where(leaseWhere, id, taskstate.Running, workerID, now).
		Updates(map[string]any{"lease_expires_at": normTime(now.Add(lease)), "updated_at": now})
	if res.Error != nil {
		return TranslateError(fmt.Errorf("task %d: extend lease: %w", id, res.Error))
	}
	if res.RowsAffected == 0 {
		return TranslateError(leaseLost(db, id, workerID))
	}
	return nil
}

// MaxRecoveries is how many times in a row (without a finished step between) a RUNNING task is
// taken back from a worker that died or failed mid-step and queued again; the next time it
// fails ORPHANED instead, so a task that kills every worker it reaches does not go round for
// ever.
const MaxRecoveries = 3

// Reaped is what ReapStale did with the RUNNING tasks whose lease expired.
type Reaped struct {
	Requeued []int64 // back in QUEUED, lease cleared: the next claim resumes them
	Failed   []int64 // FAILED with ORPHANED (recovered MaxRecoveries times already)
}

// ReapStale takes back every RUNNING task whose lease expired before now (its worker died or
// hung past worker_stale_minutes): a task recovered fewer than MaxRecoveries times goes back to
// QUEUED with its lease cleared and one more recovery counted, to resume from its durable steps
// (calls it had started are not run again); the others fail ORPHANED (an automatic retry may
// follow; see task.Service.ScheduleRetry). Ids are in ascending order. Errors: none beyond the
// database's own.
func (s *Tasks) ReapStale(ctx context.Context, now time.Time) (Reaped, error) {
	return s.reap(ctx, now, MaxRecoveries, taskstate.CodeOrphaned, "the worker running the task stopped answering")
}

// reap takes back every RUNNING task whose lease expired before now: those recovered fewer than
// maxRecoveries times are queued again, the others fail with code and message.
func (s *Store) reap(ctx context.Context, now time.Time, maxRecoveries int, code, msg string) (Reaped, error) {
	now = normTime(now)
	return inTx(ctx, s, func(tx *gorm.DB) (Reaped, error) {
		var out Reaped
		var rows []struct {
			ID         int64
			Recoveries int
		}
		err := tx.Model(&taskRow{}).Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Select("id", "recoveries").
			Where("status = ? AND lease_expires_at < ?", taskstate.Running, now).Order("id").Find(&rows).Error
		if err != nil {
			return out, fmt.Errorf("find tasks with expired leases: %w", err)
		}
		for _, r := range rows {
			if r.Recoveries < maxRecoveries {
				out.Requeued = append(out.Requeued, r.ID)
			} else {
				out.Failed = append(out.Failed, r.ID)
			}
		}
		at := s.now()
		for _, id := range append(slices.Clone(out.Requeued), out.Failed...) {
			if err := pruneDeltas(tx, id); err != nil { // the turn is run again: nothing partial is kept
				return out, err
			}
		}
		if len(out.Requeued) > 0 {
			where, args := idIn(tx, "id", out.Requeued)
			if _, err := s.setStatus(tx, at, statusChange{action: taskstate.Reap, from: taskstate.Running, to: taskstate.Queued,
				where: where, args: args, ids: out.Requeued,
				set: map[string]any{"recoveries": gorm.Expr("recoveries + 1")}}); err != nil {
				return out, err
			}
		}
		if len(out.Failed) > 0 {
			where, args := idIn(tx, "id", out.Failed)
			if _, err := s.setStatus(tx, at, statusChange{action: taskstate.Reap, from: taskstate.Running, to: taskstate.Failed,
				where: where, args: args, ids: out.Failed,
				set: map[string]any{"error_code": code, "error_message": msg}}); err != nil {
				return out, err
			}
		}
		return out, nil
	})
}

// HandBack returns a RUNNING task whose lease workerID holds to QUEUED, lease cleared, so the
// next claim (by any worker) resumes it at once: a worker that stops gracefully hands back its
// tasks between steps. With recovered set (the step failed for a reason of the worker's, such as
// a database error or a shutdown that could not wait for the step), one recovery is counted
// and, past MaxRecoveries, the task fails ORPHANED instead. It returns the task as left.
// Errors: ErrInvalidState when the lease was lost (aborted, reaped, claimed again: nothing is
// written), ErrNotFound.
func (s *Tasks) HandBack(ctx context.Context, id int64, workerID string, recovered bool) (*Task, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Task, error) {
		now := s.now()
		var cur taskRow
		if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Select("recoveries").Where("id = ?", id).Take(&cur).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil, errTaskNotFound()
			}
			return nil, fmt.Errorf("task %d: hand back: %w", id, err)
		}
		to, set := taskstate.Queued, map[string]any{}
		if recovered {
			if cur.Recoveries >= MaxRecoveries {
				to = taskstate.Failed
				set["error_code"], set["error_message"] = taskstate.CodeOrphaned, "the task failed on its worker too many times in a row"
			} else {
				set["recoveries"] = gorm.Expr("recoveries + 1")
			}
		}
		if err := pruneDeltas(tx, id); err != nil { // the turn is run again: nothing partial is kept
			return nil, err
		}
		rows, err := s.setStatus(tx, now, statusChange{action: taskstate.HandBack, from: taskstate.Running, to: to,
			where: leaseHeld, args: []any{id, workerID, now}, ids: []int64{id}, set: set, worker: workerID})
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return nil, leaseLost(tx, id, workerID)
		}
		row := &rows[0]
		return row.toTask()
	})
}

// StepOutcome is what one step of the loop did: its usage and steps deltas, and the state the
// task goes to (taskstate.Running keeps the lease for another step).
type StepOutcome struct {
	Status       string
	Answer       *string    // replaces the answer when set
	Error        *TaskError // required for FAILED
	InputTokens  int64
	OutputTokens int64
	Steps        int
	Data         map[string]any // keys merged into the task's data
	// Lease, when positive and the task stays RUNNING, renews the lease to now+Lease in the same
	// write (Loop.Run between steps: no separate ExtendLease).
	Lease time.Duration
	// ToolResult, when set, is the outcome of the step's last tool call, recorded in the step's
	// transaction instead of UpdateToolCall's own.
	ToolResult *ToolResult
	// Call, when set, is the step's model call: written to the usage ledger and its daily
	// rollup in the step's transaction (usage.go).
	Call *ModelCall
}

// ToolResult is the outcome of tool call CallID.
type ToolResult struct {
	CallID int64
	ToolCallUpdate
}

// FinishStep records the outcome of one step of a task whose lease workerID holds. Errors:
// ErrInvalidState when the lease was lost (the task was aborted, reaped or claimed again:
// nothing is written), ErrNotFound, ErrInvalid for an invalid outcome. The transaction may be
// shared with other tasks' steps finishing at the same time (groupTx).
func (s *Tasks) FinishStep(ctx context.Context, id int64, workerID string, o StepOutcome) (*Task, error) {
	if err := checkOutcome(o); err != nil {
		return nil, err
	}
	return inGroupTx(ctx, s.Store, usageShard(id), func(tx *gorm.DB) (*Task, error) {
		t, _, err := s.finishStep(tx, id, workerID, s.now(), o, nil)
		return t, err
	})
}

// checkOutcome checks a step's outcome before anything is written. Not user input: it guards
// the agent loop's own calls (the outcome it computed), so it stays with the write it guards.
func checkOutcome(o StepOutcome) error {
	if o.Status != taskstate.Running && !taskstate.Allows(taskstate.Step, taskstate.Running, o.Status) {
		return invalidf("a step cannot end in state %q", o.Status)
	}
	if (o.Status == taskstate.Failed) != (o.Error != nil) {
		return invalidf("an error is given exactly when the step fails")
	}
	if o.Error != nil {
		if !slices.Contains(taskstate.Codes, o.Error.Code) {
			return invalidf("unknown task error code %q", o.Error.Code)
		}
		if err := checkText("error message", o.Error.Message, MaxTaskErrorMessageLen); err != nil {
			return err
		}
	}
	if o.Answer != nil {
		if err := checkText("answer", *o.Answer, MaxTaskPromptLen); err != nil {
			return err
		}
	}
	if o.InputTokens < 0 || o.OutputTokens < 0 || o.Steps < 0 {
		return invalidf("usage and steps deltas must not be negative")
	}
	if o.Lease < 0 {
		return invalidf("lease must not be negative")
	}
	if err := checkModelCall(o.Call); err != nil {
		return err
	}
	if r := o.ToolResult; r != nil {
		if r.Status != ToolCallExecuted && r.Status != ToolCallFailed {
			return invalidf("a tool call ends EXECUTED or FAILED")
		}
		if _, err := encodeRaw("result", r.Result); err != nil {
			return err
		}
	}
	return nil
}

// finishStep records a step's outcome in tx under workerID's lease, after storing msg (an
// assistant turn without tool calls) when given: one UPDATE of the task row checks the lease,
// applies the outcome and numbers the events (and the message), one INSERT writes the events.
// The usage and the events are blind writes (holdBlind): on PostgreSQL they go as one statement.
func (s *Store) finishStep(tx *gorm.DB, id int64, workerID string, now time.Time, o StepOutcome, msg *NewTaskMessage) (*Task, *TaskMessage, error) {
	tx, held := holdBlind(tx)
	t, m, err := s.stepWrites(tx, id, workerID, now, o, msg)
	if err == nil {
		err = held.flush(tx)
	}
	if err != nil {
		return nil, nil, err
	}
	return t, m, nil
}

// stepWrites is finishStep's writes, its blind ones held by the caller's scope.
func (s *Store) stepWrites(tx *gorm.DB, id int64, workerID string, now time.Time, o StepOutcome, msg *NewTaskMessage) (*Task, *TaskMessage, error) {
	ch := map[string]any{
		"recoveries":    0, // the task made progress: recoveries count only failures in a row
		"input_tokens":  gorm.Expr("input_tokens + ?", o.InputTokens),
		"output_tokens": gorm.Expr("output_tokens + ?", o.OutputTokens),
		"steps_used":    gorm.Expr("steps_used + ?", o.Steps),
	}
	if o.Status == taskstate.Running && o.Lease > 0 {
		ch["lease_expires_at"] = normTime(now.Add(o.Lease))
	}
	if o.Answer != nil {
		ch["answer"] = *o.Answer
	}
	if o.Error != nil {
		ch["error_code"], ch["error_message"] = o.Error.Code, o.Error.Message
	}
	if len(o.Data) > 0 {
		row, err := loadTask(tx, id, true)
		if err != nil {
			return nil, nil, err
		}
		data, err := decodeMetadata(row.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("task %d: data: %w", id, err)
		}
		for k, v := range o.Data {
			data[k] = v
		}
		if ch["data"], err = encodeJSON("data", data); err != nil {
			return nil, nil, err
		}
	}
	r := reserve{}
	if o.ToolResult != nil {
		r.events++
	}
	if msg != nil {
		r.events, r.messages = r.events+1, 1
	}
	// own writes the step's tool result and message on the row as written, and returns their
	// events (numbered by that write, before the status event when the status changes).
	var stored *TaskMessage
	own := func(row *taskRow) ([]TaskEvent, error) {
		var evs []TaskEvent
		if o.Call != nil {
			if err := s.recordUsage(tx, row, now, *o.Call); err != nil {
				return nil, err
			}
		}
		if tr := o.ToolResult; tr != nil {
			result, _ := encodeRaw("result", tr.Result) // checked by checkOutcome
			c, err := writeToolResult(tx, id, tr.CallID, now, tr.Status, result)
			if err != nil {
				return nil, err
			}
			evs = append(evs, TaskEvent{Type: EventToolCallExecuted, ToolCall: &c})
		}
		if msg != nil {
			msgs, err := insertMessages(tx, id, int(row.MessageSeq)-1, now, []NewTaskMessage{*msg})
			if err != nil {
				return nil, err
			}
			stored = &msgs[0]
			evs = append(evs, messageEvents(msgs)...)
		}
		if (msg != nil && msg.Streamed) || (msg == nil && o.Status != taskstate.Running) {
			// The message holds the whole text now, or the turn failed and keeps nothing partial.
			if err := pruneDeltas(tx, id); err != nil {
				return nil, err
			}
		}
		return evs, nil
	}
	if o.Status != taskstate.Running {
		rows, err := s.setStatus(tx, now, statusChange{action: taskstate.Step, from: taskstate.Running, to: o.Status,
			where: leaseHeld, args: []any{id, workerID, now}, ids: []int64{id}, set: ch, reserve: r, before: own, worker: workerID})
		if err != nil {
			return nil, nil, err
		}
		if len(rows) == 0 {
			return nil, nil, leaseLost(tx, id, workerID)
		}
		t, err := rows[0].toTask()
		return t, stored, err
	}
	row, err := leaseWrite(tx, id, workerID, now, ch, r)
	if err != nil {
		return nil, nil, err
	}
	evs, err := own(row)
	if err != nil {
		return nil, nil, err
	}
	if err := insertNumbered(tx, id, row.EventSeq, now, evs); err != nil {
		return nil, nil, err
	}
	t, err := row.toTask()
	return t, stored, err
}

// FinishTurn stores the assistant turn msg (an answer: no tool calls) of a task whose lease
// workerID holds and records the step's outcome o, in one transaction: AppendAssistantTurn and
// FinishStep at once, possibly with other tasks' steps (groupTx). Errors: those of both.
func (s *Tasks) FinishTurn(ctx context.Context, id int64, workerID string, msg NewTaskMessage, o StepOutcome) (*Task, TaskMessage, error) {
	if msg.Role != RoleAssistant {
		return nil, TaskMessage{}, invalidf("an assistant turn has the role %q", RoleAssistant)
	}
	if len(msg.ToolCalls) > 0 {
		return nil, TaskMessage{}, invalidf("a turn with tool calls is stored with AppendAssistantTurn")
	}
	if err := checkOutcome(o); err != nil {
		return nil, TaskMessage{}, err
	}
	type out struct {
		t *Task
		m *TaskMessage
	}
	res, err := inGroupTx(ctx, s.Store, usageShard(id), func(tx *gorm.DB) (out, error) {
		t, m, err := s.finishStep(tx, id, workerID, s.now(), o, &msg)
		return out{t, m}, err
	})
	if err != nil {
		return nil, TaskMessage{}, err
	}
	return res.t, *res.m, nil
}
