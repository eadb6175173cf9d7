package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Budgets (issue 27): a limit in tokens and/or money per calendar period on a user, a group,
// an agent or a per-agent key. Before each model call the loop reads the budgets that apply to
// the task (BudgetsFor) and their use in the current period from the daily rollup; a budget
// whose use reached a limit stops the call. The check reads what committed steps wrote, so
// under concurrency each task already past the check may finish the one call it is making:
// the overshoot is bounded by one model call per task in flight when the limit is reached
// (docs/reliability.md), on every database and across processes.

// Budget scope kinds.
const (
	BudgetScopeUser  = "user"
	BudgetScopeGroup = "group" // ScopeID is the group's id (principal_groups.id)
	BudgetScopeAgent = "agent"
	BudgetScopeKey   = "key" // ScopeID is the key's row id (agent_api_keys.id)
)

// Budget periods: calendar periods in the instance's time zone; weeks start on Monday.
const (
	BudgetPeriodDay   = "day"
	BudgetPeriodWeek  = "week"
	BudgetPeriodMonth = "month"
)

// Budget is one limit.
type Budget struct {
	ID             int64
	ScopeKind      string
	ScopeID        int64
	Period         string
	LimitTokens    *int64 // input + output tokens per period
	LimitCost      *int64 // micro-units per period
	SoftPercent    *int
	NotifiedPeriod *string // start day of the period whose soft threshold was notified
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func (Budget) TableName() string { return "budgets" }

// BudgetUse is a budget with its use in the current period.
type BudgetUse struct {
	Budget
	SpentTokens int64
	SpentCost   int64
	PeriodStart time.Time
	ResetsAt    time.Time
	At          time.Time // when the use was read (the store's clock): ResetsAt less At is the wait
}

// Exceeded reports whether a limit is reached: new model calls are stopped.
func (u BudgetUse) Exceeded() bool {
	return (u.LimitTokens != nil && u.SpentTokens >= *u.LimitTokens) || (u.LimitCost != nil && u.SpentCost >= *u.LimitCost)
}

// SoftReached reports whether the soft threshold (SoftPercent of a limit) is reached.
func (u BudgetUse) SoftReached() bool {
	if u.SoftPercent == nil {
		return false
	}
	p := int64(*u.SoftPercent)
	return (u.LimitTokens != nil && u.SpentTokens*100 >= *u.LimitTokens*p) || (u.LimitCost != nil && u.SpentCost*100 >= *u.LimitCost*p)
}

// Message is the one sentence a refusal by the budget says: which budget, and when it resets
// (the task's BUDGET_EXCEEDED error, and the per-agent API's 429).
func (u BudgetUse) Message() string {
	limit := ""
	if u.LimitTokens != nil && u.SpentTokens >= *u.LimitTokens {
		limit = fmt.Sprintf("%d tokens", *u.LimitTokens)
	} else if u.LimitCost != nil {
		limit = fmt.Sprintf("%d micro-units", *u.LimitCost)
	}
	return fmt.Sprintf("budget %d (%s %d, %s limit of %s) is used up; it resets at %s",
		u.ID, u.ScopeKind, u.ScopeID, u.Period, limit, u.ResetsAt.UTC().Format(time.RFC3339))
}

// PeriodBounds is the calendar period (day, week from Monday, month) holding now in loc:
// its start and its end (the reset).
func PeriodBounds(period string, now time.Time, loc *time.Location) (start, end time.Time) {
	t := now.In(loc)
	y, m, d := t.Date()
	switch period {
	case BudgetPeriodWeek:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		start = time.Date(y, m, d-back, 0, 0, 0, 0, loc)
		return start, start.AddDate(0, 0, 7)
	case BudgetPeriodMonth:
		start = time.Date(y, m, 1, 0, 0, 0, 0, loc)
		return start, start.AddDate(0, 1, 0)
	default:
		start = time.Date(y, m, d, 0, 0, 0, 0, loc)
		return start, start.AddDate(0, 0, 1)
	}
}

// ValidBudget checks a budget's fields. Errors: ErrInvalid.
func ValidBudget(b *Budget) error {
	switch b.ScopeKind {
	case BudgetScopeUser, BudgetScopeGroup, BudgetScopeAgent, BudgetScopeKey:
	default:
		return invalidf("scope_kind must be user, group, agent or key")
	}
	switch b.Period {
	case BudgetPeriodDay, BudgetPeriodWeek, BudgetPeriodMonth:
	default:
		return invalidf("period must be day, week or month")
	}
	if b.LimitTokens == nil && b.LimitCost == nil {
		return invalidf("a budget needs limit_tokens or limit_cost")
	}
	if (b.LimitTokens != nil && *b.LimitTokens < 1) || (b.LimitCost != nil && *b.LimitCost < 1) {
		return invalidf("limits must be positive")
	}
	if b.SoftPercent != nil && (*b.SoftPercent < 1 || *b.SoftPercent > 99) {
		return invalidf("soft_percent must be between 1 and 99")
	}
	return nil
}

// CreateBudget stores b. Errors: ErrInvalid (ValidBudget), ErrConflict when the scope already
// has a budget for the period.
func (s *Store) CreateBudget(ctx context.Context, b Budget) (*Budget, error) {
	if err := ValidBudget(&b); err != nil {
		return nil, err
	}
	now := s.now()
	b.ID, b.NotifiedPeriod, b.CreatedAt, b.UpdatedAt = 0, nil, now, now
	err := s.tx(ctx, func(tx *gorm.DB) error { return tx.Create(&b).Error })
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return nil, svcerr.New(svcerr.ErrConflict, "this %s already has a %s budget", b.ScopeKind, b.Period)
	}
	if err != nil {
		return nil, fmt.Errorf("create budget: %w", err)
	}
	return &b, nil
}

// BudgetByID reads budget id. Errors: ErrNotFound.
func (s *Store) BudgetByID(ctx context.Context, id int64) (*Budget, error) {
	var rows []Budget
	if err := s.db.WithContext(ctx).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("load budget %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, svcerr.New(svcerr.ErrNotFound, "budget %d not found", id)
	}
	return &rows[0], nil
}

// UpdateBudget writes b's limits (ValidBudget first); the scope and period do not change.
// Errors: ErrInvalid, ErrNotFound.
func (s *Store) UpdateBudget(ctx context.Context, b Budget) (*Budget, error) {
	if err := ValidBudget(&b); err != nil {
		return nil, err
	}
	res, err := s.write(ctx, func(tx *gorm.DB) *gorm.DB {
		return tx.Model(&Budget{}).Where("id = ?", b.ID).Updates(map[string]any{
			"limit_tokens": b.LimitTokens, "limit_cost": b.LimitCost, "soft_percent": b.SoftPercent,
			"notified_period": nil, "updated_at": s.now()})
	})
	if err != nil {
		return nil, fmt.Errorf("update budget %d: %w", b.ID, err)
	}
	if res.RowsAffected == 0 {
		return nil, svcerr.New(svcerr.ErrNotFound, "budget %d not found", b.ID)
	}
	return s.BudgetByID(ctx, b.ID)
}

// DeleteBudget removes budget id. Errors: ErrNotFound.
func (s *Store) DeleteBudget(ctx context.Context, id int64) error {
	res, err := s.write(ctx, func(tx *gorm.DB) *gorm.DB { return tx.Where("id = ?", id).Delete(&Budget{}) })
	if err != nil {
		return fmt.Errorf("delete budget %d: %w", id, err)
	}
	if res.RowsAffected == 0 {
		return svcerr.New(svcerr.ErrNotFound, "budget %d not found", id)
	}
	return nil
}

// Budgets lists the budgets, by scope then period; kind and id filter when not empty/zero.
func (s *Store) Budgets(ctx context.Context, kind string, id int64) ([]Budget, error) {
	db := s.db.WithContext(ctx)
	if kind != "" {
		db = db.Where("scope_kind = ? AND scope_id = ?", kind, id)
	}
	var rows []Budget
	if err := db.Order("scope_kind, scope_id, period").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list budgets: %w", err)
	}
	return rows, nil
}

// HasBudgets reports whether any budget exists: the loop reads budgets before a model call only
// then (it caches the answer with the step's configuration; budgets is a ConfigTables table,
// so a budget set on any process shows at the next configuration check, within a second).
func (s *Store) HasBudgets(ctx context.Context) (bool, error) {
	var ids []int64
	if err := s.db.WithContext(ctx).Model(&Budget{}).Limit(1).Pluck("id", &ids).Error; err != nil {
		return false, fmt.Errorf("budgets: %w", err)
	}
	return len(ids) > 0, nil
}

// BudgetScope names what a task's model calls count against: its user, its agent, the agent's
// principal (a group's, for group budgets) and the per-agent key that started it.
type BudgetScope struct {
	UserID      int64
	AgentID     int64
	PrincipalID int64
	APIKeyID    *int64
}

// BudgetsFor returns the budgets that apply to sc with their use in the current period.
func (s *Store) BudgetsFor(ctx context.Context, sc BudgetScope) ([]BudgetUse, error) {
	db := s.db.WithContext(ctx)
	q := db.Where("(scope_kind = ? AND scope_id = ?) OR (scope_kind = ? AND scope_id = ?)",
		BudgetScopeUser, sc.UserID, BudgetScopeAgent, sc.AgentID).
		Or("scope_kind = ? AND scope_id IN (SELECT id FROM principal_groups WHERE principal_id = ?)", BudgetScopeGroup, sc.PrincipalID)
	if sc.APIKeyID != nil {
		q = q.Or("scope_kind = ? AND scope_id = ?", BudgetScopeKey, *sc.APIKeyID)
	}
	var rows []Budget
	if err := q.Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("budgets of agent %d: %w", sc.AgentID, err)
	}
	out := make([]BudgetUse, 0, len(rows))
	for _, b := range rows {
		u, err := s.BudgetUse(ctx, b)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// BudgetUse sums b's use in its current period from the daily rollup.
func (s *Store) BudgetUse(ctx context.Context, b Budget) (BudgetUse, error) {
	loc := s.TimeZone()
	now := s.clock()
	start, end := PeriodBounds(b.Period, now, loc)
	col, arg := "", any(b.ScopeID)
	switch b.ScopeKind {
	case BudgetScopeUser:
		col = "user_id = ?"
	case BudgetScopeAgent:
		col = "agent_id = ?"
	case BudgetScopeKey:
		col = "api_key_id = ?"
	default:
		col = "principal_id = (SELECT principal_id FROM principal_groups WHERE id = ?)"
	}
	var sum struct{ Tokens, Cost *int64 }
	err := s.db.WithContext(ctx).Table("usage_daily").Select("SUM(input_tokens + output_tokens) AS tokens, SUM(cost) AS cost").
		Where(col, arg).Where("day >= ? AND day < ?", start.Format(time.DateOnly), end.Format(time.DateOnly)).Scan(&sum).Error
	if err != nil {
		return BudgetUse{}, fmt.Errorf("use of budget %d: %w", b.ID, err)
	}
	u := BudgetUse{Budget: b, PeriodStart: start.UTC(), ResetsAt: end.UTC(), At: now.UTC()}
	if sum.Tokens != nil {
		u.SpentTokens = *sum.Tokens
	}
	if sum.Cost != nil {
		u.SpentCost = *sum.Cost
	}
	return u, nil
}

// write runs one statement in a transaction (the writer queue on SQLite) and returns its result.
func (s *Store) write(ctx context.Context, fn func(tx *gorm.DB) *gorm.DB) (*gorm.DB, error) {
	var res *gorm.DB
	err := s.tx(ctx, func(tx *gorm.DB) error {
		res = fn(tx)
		return res.Error
	})
	return res, err
}

// APIKeyByID reads a per-agent key by its row id (revoked ones included): a key budget names
// its key by it. Errors: ErrNotFound.
func (s *Store) APIKeyByID(ctx context.Context, id int64) (*AgentAPIKey, error) {
	var rows []apiKeyRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("load API key %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, svcerr.New(svcerr.ErrNotFound, "key not found")
	}
	return rows[0].toKey(), nil
}

// NotificationKindBudgetThreshold is the notification of a budget's soft threshold.
const NotificationKindBudgetThreshold = "budget_threshold"

// NotifyBudgetThreshold tells the managers of budget u's scope that its soft threshold is
// reached, once per period across processes: in one transaction it marks the period notified
// (notified_period) and, when this call marked it, writes a notification (title, body) for each
// recipient — the user of a user budget; the owners and admins of the group of a group budget,
// or of the group owning the agent (the user, for a personal agent) of an agent or key budget.
// It returns how many were written (0 when already notified).
func (s *Store) NotifyBudgetThreshold(ctx context.Context, u BudgetUse, title, body string) (int, error) {
	day := u.PeriodStart.In(s.TimeZone()).Format(time.DateOnly)
	n := 0
	err := s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&Budget{}).Where("id = ? AND (notified_period IS NULL OR notified_period <> ?)", u.ID, day).
			Update("notified_period", day)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var principal string
		var arg any = u.ScopeID
		var agentID *int64
		switch u.ScopeKind {
		case BudgetScopeUser:
			principal = "SELECT principal_id FROM users WHERE id = ?"
		case BudgetScopeGroup:
			principal = "SELECT principal_id FROM principal_groups WHERE id = ?"
		case BudgetScopeAgent:
			principal, agentID = "SELECT principal_id FROM agents WHERE id = ?", &u.ScopeID
		default:
			principal = "SELECT principal_id FROM agents WHERE id = (SELECT agent_id FROM agent_api_keys WHERE id = ?)"
		}
		var users []int64
		err := tx.Raw("SELECT id FROM users WHERE principal_id IN ("+principal+") UNION "+
			"SELECT user_id FROM group_members WHERE role IN ? AND group_id IN (SELECT id FROM principal_groups WHERE principal_id IN ("+principal+"))",
			arg, []string{GroupRoleOwner, GroupRoleAdmin}, arg).Scan(&users).Error
		if err != nil {
			return fmt.Errorf("budget %d: recipients: %w", u.ID, err)
		}
		now := s.now()
		for _, uid := range users {
			x := Notification{ID: newNotificationID("ntf_"), UserID: uid, Kind: NotificationKindBudgetThreshold,
				Title: title, Body: body, AgentID: agentID, CreatedAt: now}
			if err := tx.Create(&x).Error; err != nil {
				return fmt.Errorf("budget %d: notify user %d: %w", u.ID, uid, err)
			}
		}
		n = len(users)
		return nil
	})
	return n, err
}
