package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Usage (issue 27): every model call a step (or a summary) makes is one row of the ledger
// (usage_ledger), written in the transaction that records the step, with the prices in force and
// its cost; the same transaction adds it to the daily rollup (usage_daily), which GET /usage and
// the budget check read. Days are calendar days in the instance's time zone (SetTimeZone).
//
// A day's rollup of one agent, user, key and model is split into usageShards rows by task (the
// task's id modulo usageShards): the step holds the row it adds to until its commit, and with one
// row the steps of all tasks running side by side for that user and agent waited for each
// other's commits, one at a time. Readers sum the rows, as they sum days.

// ModelCall is the usage of one model call as its step records it.
type ModelCall struct {
	LLMConfigID       int64 // 0: none (a configuration deleted since)
	Model             string
	InputTokens       int64 // prompt tokens, cached ones included
	CachedInputTokens int64
	OutputTokens      int64
	Prices            LLMPrices // in force at the call
}

// Cost is the call's cost in micro-units: (input - cached) x input price + cached x cached
// price (the input price when unset) + output x output price, per million tokens, rounded
// up so that no call is free when priced. Integer arithmetic only (money is never a float).
func (c ModelCall) Cost() int64 {
	price := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	cached := min(max(c.CachedInputTokens, 0), c.InputTokens)
	cachedPrice := price(c.Prices.Input)
	if c.Prices.CachedInput != nil {
		cachedPrice = *c.Prices.CachedInput
	}
	// Tokens of a call are at most millions and prices at most 1e12: the products are split
	// so that none passes int64 (1e12 x 1e6 = 1e18 < 9.2e18).
	total := mulDivUp(c.InputTokens-cached, price(c.Prices.Input)) + mulDivUp(cached, cachedPrice) +
		mulDivUp(c.OutputTokens, price(c.Prices.Output))
	return total
}

// mulDivUp is ceil(tokens x price / 1e6) without overflow for tokens < 9e6 x 1e12 / price.
func mulDivUp(tokens, price int64) int64 {
	if tokens <= 0 || price <= 0 {
		return 0
	}
	q, r := tokens/1_000_000, tokens%1_000_000
	return q*price + (r*price+999_999)/1_000_000
}

// SetTimeZone sets the instance's time zone (the time_zone setting), in which the usage days and
// the budget periods are counted; nil is UTC. Call it before serving: a change applies to calls
// recorded afterwards (days already rolled up keep their day).
func (s *Store) SetTimeZone(loc *time.Location) {
	if loc == nil {
		loc = time.UTC
	}
	s.zone.Store(loc)
}

// TimeZone is the zone SetTimeZone set (UTC by default).
func (s *Store) TimeZone() *time.Location {
	if loc := s.zone.Load(); loc != nil {
		return loc
	}
	return time.UTC
}

// Day is t's calendar day in the instance's time zone, as the ledger stores it (YYYY-MM-DD).
func (s *Store) Day(t time.Time) string { return t.In(s.TimeZone()).Format(time.DateOnly) }

type usageLedgerRow struct {
	ID                int64
	CreatedAt         time.Time
	Day               string
	TaskID            int64
	AgentID           int64
	PrincipalID       int64
	UserID            int64
	APIKeyID          *int64
	LLMConfigID       *int64
	Model             string
	InputTokens       int64
	CachedInputTokens int64
	OutputTokens      int64
	PriceInput        *int64
	PriceOutput       *int64
	PriceCachedInput  *int64
	Cost              int64
}

func (usageLedgerRow) TableName() string { return "usage_ledger" }

// usageShards is the number of rows a day's rollup of one agent, user, key and model is split
// into: the most runs a worker process starts side by side by default (32 on MySQL/MariaDB), so
// that tasks queued one after the other (consecutive ids) add to different rows. A year of one
// agent, user, key and model is then at most 366 x 32 rows, summed through the day indexes.
const usageShards = 32

// usageShard is the rollup shard of task id's calls; steps finishing together are grouped in
// its order (groupTx), so that they take the shards' row locks in one order.
func usageShard(taskID int64) int64 { return taskID % usageShards }

// checkModelCall guards the loop's own usage report (not user input).
func checkModelCall(c *ModelCall) error {
	if c == nil {
		return nil
	}
	if c.InputTokens < 0 || c.OutputTokens < 0 || c.CachedInputTokens < 0 || c.CachedInputTokens > c.InputTokens {
		return invalidf("model call usage must not be negative, nor cached tokens exceed input tokens")
	}
	if err := checkText("model", c.Model, 200); err != nil {
		return err
	}
	return nil
}

// recordUsage writes call c of task row r to the ledger and adds it to the daily rollup, in tx
// (the step's transaction), at now.
func (s *Store) recordUsage(tx *gorm.DB, r *taskRow, now time.Time, c ModelCall) error {
	day := s.Day(now)
	row := usageLedgerRow{CreatedAt: now, Day: day, TaskID: r.ID, AgentID: r.AgentID, PrincipalID: r.PrincipalID,
		UserID: r.UserID, APIKeyID: r.APIKeyID, Model: c.Model, InputTokens: c.InputTokens,
		CachedInputTokens: min(c.CachedInputTokens, c.InputTokens), OutputTokens: c.OutputTokens,
		PriceInput: c.Prices.Input, PriceOutput: c.Prices.Output, PriceCachedInput: c.Prices.CachedInput, Cost: c.Cost()}
	if c.LLMConfigID != 0 {
		id := c.LLMConfigID
		row.LLMConfigID = &id
	}
	if err := blindExec(tx, "INSERT INTO usage_ledger (created_at, day, task_id, agent_id, principal_id, user_id, api_key_id, "+
		"llm_config_id, model, input_tokens, cached_input_tokens, output_tokens, price_input, price_output, price_cached_input, cost) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row.CreatedAt, row.Day, row.TaskID, row.AgentID, row.PrincipalID,
		row.UserID, row.APIKeyID, row.LLMConfigID, row.Model, row.InputTokens, row.CachedInputTokens, row.OutputTokens, row.PriceInput,
		row.PriceOutput, row.PriceCachedInput, row.Cost); err != nil {
		return fmt.Errorf("record usage of task %d: %w", r.ID, err)
	}
	var apiKeyID int64
	if r.APIKeyID != nil {
		apiKeyID = *r.APIKeyID
	}
	if err := blindExec(tx, rollupUpserts[s.dialect], day, r.AgentID, r.PrincipalID, r.UserID, apiKeyID, c.LLMConfigID, c.Model, usageShard(r.ID),
		1, row.InputTokens, row.CachedInputTokens, row.OutputTokens, row.Cost,
		1, row.InputTokens, row.CachedInputTokens, row.OutputTokens, row.Cost); err != nil {
		return fmt.Errorf("roll up usage of task %d: %w", r.ID, err)
	}
	return nil
}

// rollupUpserts are rollupUpsert's statements by dialect.
var rollupUpserts = map[string]string{DialectSQLite: rollupUpsert(DialectSQLite), DialectMySQL: rollupUpsert(DialectMySQL),
	DialectPostgres: rollupUpsert(DialectPostgres)}

// rollupUpsert is the dialect's upsert of a usage_daily row (recordUsage): the key, the
// counts, then the counts again, added to an existing row's.
func rollupUpsert(dialect string) string {
	q := "INSERT INTO usage_daily (day, agent_id, principal_id, user_id, api_key_id, llm_config_id, model, shard, calls, " +
		"input_tokens, cached_input_tokens, output_tokens, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
	table := "usage_daily."
	if dialect == DialectMySQL { // ON DUPLICATE KEY UPDATE cannot name the table's columns qualified
		q, table = q+"ON DUPLICATE KEY UPDATE ", ""
	} else {
		q += "ON CONFLICT (day, agent_id, principal_id, user_id, api_key_id, llm_config_id, model, shard) DO UPDATE SET "
	}
	for i, col := range []string{"calls", "input_tokens", "cached_input_tokens", "output_tokens", "cost"} {
		if i > 0 {
			q += ", "
		}
		q += col + " = " + table + col + " + ?"
	}
	return q
}

// Usage grouping keys (UsageQuery.GroupBy).
const (
	UsageByAgent = "agent"
	UsageByUser  = "user"
	UsageByGroup = "group"
	UsageByKey   = "key"
	UsageByModel = "model"
	UsageByDay   = "day"
)

// UsageQuery selects and groups usage. Days are YYYY-MM-DD in the instance's zone, To
// inclusive. The visibility is the caller's (package usage decides it): All, or the union of
// the calls of agents owned by Principals and of tasks of UserID.
type UsageQuery struct {
	From, To    string
	GroupBy     []string
	AgentID     *int64
	UserID      *int64
	PrincipalID *int64 // a group's principal
	APIKeyID    *int64
	TaskID      *int64 // reads the ledger (a task's calls) instead of the rollup
	All         bool
	Principals  []int64
	Viewer      int64 // the caller's user id: their own tasks' calls are visible
}

// UsageRow is one group of usage.
type UsageRow struct {
	AgentID           *int64
	UserID            *int64
	PrincipalID       *int64
	GroupID           *int64 // the principal's group, when it is one
	KeyID             *string
	HasKey            bool // grouped by key (KeyID nil: session tasks)
	Model             *string
	Day               *string
	Calls             int64
	InputTokens       int64
	CachedInputTokens int64
	OutputTokens      int64
	Cost              int64
}

// Usage sums usage as q asks, ordered by the grouping keys. Errors: ErrInvalid for an unknown
// grouping key.
func (s *Store) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	table, calls := "usage_daily u", "SUM(u.calls)"
	if q.TaskID != nil {
		table, calls = "usage_ledger u", "COUNT(*)"
	}
	sel := []string{calls + " AS calls", "SUM(u.input_tokens) AS input_tokens",
		"SUM(u.cached_input_tokens) AS cached_input_tokens", "SUM(u.output_tokens) AS output_tokens", "SUM(u.cost) AS cost"}
	var group []string
	db := s.db.WithContext(ctx).Table(table)
	for _, g := range q.GroupBy {
		switch g {
		case UsageByAgent:
			sel, group = append(sel, "u.agent_id AS agent_id"), append(group, "u.agent_id")
		case UsageByUser:
			sel, group = append(sel, "u.user_id AS user_id"), append(group, "u.user_id")
		case UsageByGroup:
			sel, group = append(sel, "u.principal_id AS principal_id", "MAX(pg.id) AS group_id"), append(group, "u.principal_id")
			db = db.Joins("LEFT JOIN principal_groups pg ON pg.principal_id = u.principal_id")
		case UsageByKey:
			sel, group = append(sel, "u.api_key_id AS api_key_id", "MAX(k.key_id) AS key_id"), append(group, "u.api_key_id")
			db = db.Joins("LEFT JOIN agent_api_keys k ON k.id = u.api_key_id")
		case UsageByModel:
			sel, group = append(sel, "u.model AS model"), append(group, "u.model")
		case UsageByDay:
			sel, group = append(sel, "u.day AS day"), append(group, "u.day")
		default:
			return nil, invalidf("group_by: unknown key %q", g)
		}
	}
	db = db.Select(strings.Join(sel, ", ")).Where("u.day >= ? AND u.day <= ?", q.From, q.To)
	if q.AgentID != nil {
		db = db.Where("u.agent_id = ?", *q.AgentID)
	}
	if q.UserID != nil {
		db = db.Where("u.user_id = ?", *q.UserID)
	}
	if q.PrincipalID != nil {
		db = db.Where("u.principal_id = ?", *q.PrincipalID)
	}
	if q.APIKeyID != nil {
		db = db.Where("u.api_key_id = ?", *q.APIKeyID)
	}
	if q.TaskID != nil {
		db = db.Where("u.task_id = ?", *q.TaskID)
	}
	if !q.All {
		if len(q.Principals) > 0 {
			db = db.Where("(u.principal_id IN ? OR u.user_id = ?)", q.Principals, q.Viewer)
		} else {
			db = db.Where("u.user_id = ?", q.Viewer)
		}
	}
	if len(group) > 0 {
		db = db.Group(strings.Join(group, ", ")).Order(strings.Join(group, ", "))
	}
	type scanRow struct {
		AgentID, UserID, PrincipalID, GroupID, APIKeyID           *int64
		KeyID, Model, Day                                         *string
		Calls, InputTokens, CachedInputTokens, OutputTokens, Cost *int64
	}
	var rows []scanRow
	if err := db.Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	out := make([]UsageRow, 0, len(rows))
	hasKey := false
	for _, g := range q.GroupBy {
		hasKey = hasKey || g == UsageByKey
	}
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	for _, r := range rows {
		if r.Calls == nil || *r.Calls == 0 {
			continue // no row matched: SUM over nothing
		}
		u := UsageRow{AgentID: r.AgentID, UserID: r.UserID, PrincipalID: r.PrincipalID, GroupID: r.GroupID,
			KeyID: r.KeyID, HasKey: hasKey, Model: r.Model, Day: r.Day, Calls: val(r.Calls), InputTokens: val(r.InputTokens),
			CachedInputTokens: val(r.CachedInputTokens), OutputTokens: val(r.OutputTokens), Cost: val(r.Cost)}
		if hasKey && (r.APIKeyID == nil || *r.APIKeyID == 0) {
			u.KeyID = nil
		}
		out = append(out, u)
	}
	return out, nil
}
