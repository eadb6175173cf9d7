package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// ScheduledRun starts a task of an agent on a cron schedule or once at RunAt.
type ScheduledRun struct {
	ID               int64
	AgentID          int64
	Name             string
	TemplateID       *int64
	Prompt           *string
	Variables        map[string]string // never nil
	CronExpression   *string
	RunAt            *time.Time
	Timezone         string
	MaxStepsOverride *int
	IsActive         bool
	LastRunAt        *time.Time
	NextRunAt        *time.Time
	LastTaskID       *int64
	CreatedBy        int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// ScheduledRunFields are the writable properties of a scheduled run (a replace). NextRunAt is
// computed by the caller (the schedule service owns the cron rules).
type ScheduledRunFields struct {
	Name             string
	TemplateID       *int64
	Prompt           *string
	Variables        map[string]string
	CronExpression   *string
	RunAt            *time.Time
	Timezone         string
	MaxStepsOverride *int
	IsActive         bool
	NextRunAt        *time.Time
}

// RunCheck decides, inside the writing transaction, whether a run write may happen: a is the
// locked agent, t the run's template (nil for an inline prompt).
type RunCheck func(a *Agent, t *PromptTemplate) error

type scheduledRunRow struct {
	ID               int64 `gorm:"primaryKey"`
	AgentID          int64
	Name             string
	TemplateID       *int64
	Prompt           *string
	Variables        string
	CronExpression   *string
	RunAt            *time.Time
	Timezone         string
	MaxStepsOverride *int
	IsActive         bool
	LastRunAt        *time.Time
	NextRunAt        *time.Time
	LastTaskID       *int64
	CreatedBy        int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

func (scheduledRunRow) TableName() string { return "scheduled_runs" }

func (r *scheduledRunRow) toRun() (*ScheduledRun, error) {
	vars := map[string]string{}
	if err := json.Unmarshal([]byte(r.Variables), &vars); err != nil {
		return nil, fmt.Errorf("decode variables of scheduled run %d: %w", r.ID, err)
	}
	if vars == nil {
		vars = map[string]string{}
	}
	return &ScheduledRun{
		ID: r.ID, AgentID: r.AgentID, Name: r.Name, TemplateID: r.TemplateID, Prompt: r.Prompt, Variables: vars,
		CronExpression: r.CronExpression, RunAt: r.RunAt, Timezone: r.Timezone, MaxStepsOverride: r.MaxStepsOverride,
		IsActive: r.IsActive, LastRunAt: r.LastRunAt, NextRunAt: r.NextRunAt, LastTaskID: r.LastTaskID,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}, nil
}

func errRunNotFound() error { return svcerr.New(svcerr.ErrNotFound, "scheduled run not found") }

func normPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := normTime(*t)
	return &n
}

// encodeRunVariables writes the variables as stored. The field rules are package schedule's
// (schedule.CheckRunFields), applied before the store is called.
func encodeRunVariables(f ScheduledRunFields) (string, error) {
	vars := f.Variables
	if vars == nil {
		vars = map[string]string{}
	}
	return encodeJSON("variables", vars)
}

func runsWhere(db *gorm.DB, where string, args ...any) ([]ScheduledRun, error) {
	var rows []scheduledRunRow
	if err := db.Where(where, args...).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list scheduled runs: %w", err)
	}
	out := make([]ScheduledRun, 0, len(rows))
	for i := range rows {
		r, err := rows[i].toRun()
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

func loadRun(db *gorm.DB, agentID, id int64) (*ScheduledRun, error) {
	var row scheduledRunRow
	err := db.Where("id = ? AND agent_id = ?", id, agentID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errRunNotFound()
	}
	if err != nil {
		return nil, fmt.Errorf("load scheduled run %d: %w", id, err)
	}
	return row.toRun()
}

// runTemplate loads the template a run refers to; one of another agent is an invalid reference
// (ErrInvalid, checked here: the template is read in the writing transaction).
func runTemplate(tx *gorm.DB, agentID int64, id *int64) (*PromptTemplate, error) {
	if id == nil {
		return nil, nil
	}
	t, err := loadTemplate(tx, agentID, *id)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, invalidf("template_id: no such prompt template of this agent")
	}
	return t, err
}

// ScheduledRuns returns every run of agent agentID by next_run_at (runs without one last), then
// id. The caller has checked visibility. Errors: none beyond the database's own.
func (s *Agents) ScheduledRuns(ctx context.Context, agentID int64) ([]ScheduledRun, error) {
	runs, err := runsWhere(s.conn(ctx).Order("next_run_at IS NULL").Order("next_run_at").Order("id"), "agent_id = ?", agentID)
	return runs, TranslateError(err)
}

// ScheduledRun returns run id of agent agentID. Errors: ErrNotFound "scheduled run not found".
func (s *Agents) ScheduledRun(ctx context.Context, agentID, id int64) (*ScheduledRun, error) {
	r, err := loadRun(s.conn(ctx), agentID, id)
	return r, TranslateError(err)
}

// CreateScheduledRun stores a run of agent agentID created by user createdBy, after check
// allowed it on the locked agent and the run's template; the caller has checked the fields
// (schedule.CheckRunFields). Errors: ErrNotFound "agent not found", ErrInvalid (a template of
// another agent), and whatever check returns.
func (s *Agents) CreateScheduledRun(ctx context.Context, agentID, createdBy int64, f ScheduledRunFields, check RunCheck) (*ScheduledRun, error) {
	vars, err := encodeRunVariables(f)
	if err != nil {
		return nil, err
	}
	var out *ScheduledRun
	err = s.withAgent(ctx, agentID, 0, nil, func(tx *gorm.DB, a *Agent) error {
		t, err := runTemplate(tx, agentID, f.TemplateID)
		if err != nil {
			return err
		}
		if err := check(a, t); err != nil {
			return err
		}
		now := s.now()
		row := scheduledRunRow{AgentID: agentID, Name: f.Name, TemplateID: f.TemplateID, Prompt: f.Prompt, Variables: vars,
			CronExpression: f.CronExpression, RunAt: normPtr(f.RunAt), Timezone: f.Timezone, MaxStepsOverride: f.MaxStepsOverride,
			IsActive: f.IsActive, NextRunAt: normPtr(f.NextRunAt), CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("create scheduled run: %w", err)
		}
		out, err = row.toRun()
		return err
	})
	if err != nil {
		return nil, TranslateError(err)
	}
	return out, nil
}

// UpdateScheduledRun replaces the writable fields of run id of agent agentID; last_run_at,
// last_task_id and created_by are kept. Errors: as CreateScheduledRun, plus ErrNotFound
// "scheduled run not found".
func (s *Agents) UpdateScheduledRun(ctx context.Context, agentID, id int64, f ScheduledRunFields, check RunCheck) (*ScheduledRun, error) {
	vars, err := encodeRunVariables(f)
	if err != nil {
		return nil, err
	}
	var out *ScheduledRun
	err = s.withAgent(ctx, agentID, 0, nil, func(tx *gorm.DB, a *Agent) error {
		if _, err := loadRun(tx, agentID, id); err != nil {
			return err
		}
		t, err := runTemplate(tx, agentID, f.TemplateID)
		if err != nil {
			return err
		}
		if err := check(a, t); err != nil {
			return err
		}
		ch := map[string]any{"name": f.Name, "template_id": f.TemplateID, "prompt": f.Prompt, "variables": vars,
			"cron_expression": f.CronExpression, "run_at": normPtr(f.RunAt), "timezone": f.Timezone,
			"max_steps_override": f.MaxStepsOverride, "is_active": f.IsActive, "next_run_at": normPtr(f.NextRunAt),
			"updated_at": s.now()}
		if err := tx.Model(&scheduledRunRow{}).Where("id = ?", id).Updates(ch).Error; err != nil {
			return fmt.Errorf("update scheduled run %d: %w", id, err)
		}
		out, err = loadRun(tx, agentID, id)
		return err
	})
	if err != nil {
		return nil, TranslateError(err)
	}
	return out, nil
}

// DeleteScheduledRun removes run id of agent agentID; tasks it started are kept. Errors:
// ErrNotFound (agent or run), and whatever check returns.
func (s *Agents) DeleteScheduledRun(ctx context.Context, agentID, id int64, check AgentCheck) error {
	return TranslateError(s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		if _, err := loadRun(tx, agentID, id); err != nil {
			return err
		}
		if err := tx.Delete(&scheduledRunRow{}, id).Error; err != nil {
			return fmt.Errorf("delete scheduled run %d: %w", id, err)
		}
		return nil
	}))
}

// RecordRunStart notes that run id started task taskID at `at` (last_run_at, last_task_id);
// the schedule is unchanged. A run deleted meanwhile is no error.
func (s *Agents) RecordRunStart(ctx context.Context, id, taskID int64, at time.Time) error {
	err := s.conn(ctx).Model(&scheduledRunRow{}).Where("id = ?", id).
		Updates(map[string]any{"last_run_at": normTime(at), "last_task_id": taskID}).Error
	return TranslateError(err)
}

// NextRunFunc computes when run r is due next after `after` (nil: never again).
type NextRunFunc func(r *ScheduledRun, after time.Time) *time.Time

// ClaimDueRun claims one active run due at now (next_run_at <= now, earliest first) and, in the
// same transaction, advances it: next_run_at becomes next(run, now) for cron runs, one-shot runs
// turn inactive with no next_run_at; last_run_at becomes now. Two workers never claim one due
// time twice (SQLite's write lock, row locks with SKIP LOCKED on MySQL/MariaDB, and a
// compare-and-swap on next_run_at). It returns the run as it was before the claim, or nil
// when nothing is due. Errors: database failures only.
func (s *Agents) ClaimDueRun(ctx context.Context, now time.Time, next NextRunFunc) (*ScheduledRun, error) {
	now = normTime(now)
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*ScheduledRun, error) {
		q := tx.Where("is_active = ? AND next_run_at IS NOT NULL AND next_run_at <= ?", true, now).
			Order("next_run_at").Order("id").Limit(1)
		if s.dialect != DialectSQLite {
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked})
		}
		var rows []scheduledRunRow
		if err := q.Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("find due scheduled run: %w", err)
		}
		if len(rows) == 0 {
			return nil, nil
		}
		r, err := rows[0].toRun()
		if err != nil {
			return nil, err
		}
		ch := map[string]any{"last_run_at": now, "next_run_at": nil}
		if r.CronExpression == nil {
			ch["is_active"] = false
		} else if n := next(r, now); n != nil {
			ch["next_run_at"] = normTime(*n)
		}
		res := tx.Model(&scheduledRunRow{}).Where("id = ? AND is_active = ? AND next_run_at = ?", r.ID, true, rows[0].NextRunAt).Updates(ch)
		if res.Error != nil {
			return nil, fmt.Errorf("claim scheduled run %d: %w", r.ID, res.Error)
		}
		if res.RowsAffected != 1 {
			return nil, nil
		}
		return r, nil
	})
}
