package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/limits"
)

// ImportedTool is one tool record written by ImportAgent: the tool is enabled for the new agent,
// with the agent's operation overrides and agent-layer settings.
type ImportedTool struct {
	ToolClass string
	// Operations are the overrides by operation name; an override with both fields nil writes
	// nothing.
	Operations map[string]ToolOperationOverride
	// Settings are the agent-layer values by key (plain JSON values, stored as the tool
	// configuration stores them); nil values write nothing. Password-typed values must already
	// be sealed: ImportAgent stores what it is given.
	Settings map[string]any
}

// importRows are the rows of one ImportedTool, checked and encoded before the transaction.
type importRows struct {
	class    string
	ops      []agentToolOperationRow
	settings map[string]string // key → JSON
}

// ImportAgent creates an agent owned by principalID together with its tool records, in one
// transaction: an enabled agent_tools row per tool, its operation overrides and its agent-layer
// settings. Either everything is written or nothing. The caller decides whether the principal
// may be used and what the tools may hold (package agenttemplate applies the template rules),
// and has checked the fields (agent.CheckFields) and the tools (toolconfig.CheckImportedTools).
// memories become the agent's agent-wide memories (without an origin), in order; the caller
// has checked their number and lengths.
// Errors: ErrInvalid "principal_id: no such principal" (known only in the transaction).
func (s *Agents) ImportAgent(ctx context.Context, principalID int64, f AgentFields, tools []ImportedTool, memories []string) (*Agent, error) {
	row, err := newAgentRow(principalID, f)
	if err != nil {
		return nil, err
	}
	prepared, err := prepareImportedTools(tools)
	if err != nil {
		return nil, err
	}
	err = s.tx(ctx, func(tx *gorm.DB) error {
		if err := principalExists(tx, principalID); err != nil {
			return err
		}
		now := s.now()
		row.CreatedAt, row.UpdatedAt = now, now
		if err := tx.Create(row).Error; err != nil {
			return fmt.Errorf("import agent: %w", err)
		}
		for _, t := range prepared {
			if err := insertImportedTool(tx, row.ID, t, now); err != nil {
				return err
			}
		}
		for _, text := range memories {
			m := memoryRow{AgentID: row.ID, Text: text, Terms: memoryTerms(text), CreatedAt: now, UpdatedAt: now}
			if err := tx.Create(&m).Error; err != nil {
				return fmt.Errorf("import memory: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return row.toAgent(false)
}

// newAgentRow builds the row CreateAgent inserts from checked fields (Name set).
func newAgentRow(principalID int64, f AgentFields) (*agentRow, error) {
	if f.Name == nil {
		return nil, errors.New("new agent without a name")
	}
	ch, err := agentChanges(f)
	if err != nil {
		return nil, err
	}
	row := &agentRow{PrincipalID: principalID, MaxSteps: limits.DefaultSteps, AllowFollowup: true, Metadata: "{}",
		CompactionEnabled: true, CompactionThresholdPercent: DefaultCompactionThreshold,
		Approvers: `{"owner":true}`, ApprovalTimeoutAction: ApprovalTimeoutReject}
	row.Name = ch["name"].(string)
	for col, dst := range map[string]*string{
		"description": &row.Description, "system_prompt": &row.SystemPrompt, "notes": &row.Notes, "metadata": &row.Metadata,
		"approvers": &row.Approvers, "approval_timeout_action": &row.ApprovalTimeoutAction,
	} {
		if v, ok := ch[col]; ok {
			*dst = v.(string)
		}
	}
	for col, dst := range map[string]*int{
		"max_steps": &row.MaxSteps, "retry_after_minutes": &row.RetryAfterMinutes, "max_retries": &row.MaxRetries,
		"compaction_threshold_percent": &row.CompactionThresholdPercent, "compaction_answer_reserve": &row.CompactionAnswerReserve,
		"tool_result_max_chars":    &row.ToolResultMaxChars,
		"approval_timeout_seconds": &row.ApprovalTimeoutSeconds,
	} {
		if v, ok := ch[col]; ok {
			*dst = v.(int)
		}
	}
	if f.AllowFollowup != nil {
		row.AllowFollowup = *f.AllowFollowup
	}
	if f.CompactionEnabled != nil {
		row.CompactionEnabled = *f.CompactionEnabled
	}
	if f.SummaryLLMConfigID != nil && *f.SummaryLLMConfigID != 0 {
		row.SummaryLLMConfigID = f.SummaryLLMConfigID
	}
	return row, nil
}

// prepareImportedTools encodes the tool records (in class order, so the writes come in a stable
// order). The tool rules (class and operation shapes, a class given once, setting sizes) are
// package toolconfig's (toolconfig.CheckImportedTools), applied before the store is called;
// encodeSettings keeps its size guard as the last one for every settings write.
func prepareImportedTools(tools []ImportedTool) ([]importRows, error) {
	out := make([]importRows, 0, len(tools))
	for _, t := range tools {
		r := importRows{class: t.ToolClass}
		for op, o := range t.Operations {
			if o.Empty() {
				continue
			}
			r.ops = append(r.ops, agentToolOperationRow{ToolClass: t.ToolClass, Operation: op, Enabled: o.Enabled,
				AutoApprove: o.AutoApprove, ApprovalTimeoutSeconds: o.ApprovalTimeoutSeconds})
		}
		sort.Slice(r.ops, func(i, j int) bool { return r.ops[i].Operation < r.ops[j].Operation })
		enc, err := encodeSettings(t.Settings)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.ToolClass, err)
		}
		r.settings = enc
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].class < out[j].class })
	return out, nil
}

// insertImportedTool writes one tool of a new agent.
func insertImportedTool(tx *gorm.DB, agentID int64, t importRows, now time.Time) error {
	tr := agentToolRow{AgentID: agentID, ToolClass: t.class, Enabled: true, CreatedAt: now, UpdatedAt: now}
	if err := tx.Create(&tr).Error; err != nil {
		return fmt.Errorf("insert agent %d tool %s: %w", agentID, t.class, err)
	}
	for i := range t.ops {
		op := t.ops[i]
		op.AgentID, op.UpdatedAt = agentID, now
		if err := tx.Create(&op).Error; err != nil {
			return fmt.Errorf("insert agent %d operation %s.%s: %w", agentID, t.class, op.Operation, err)
		}
	}
	scope := AgentToolScope(agentID)
	keys := make([]string, 0, len(t.settings))
	for k := range t.settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		id := agentID
		sr := toolSettingRow{Scope: scope.Kind, ScopeKey: scope.Key(), AgentID: &id, ToolClass: t.class,
			SettingKey: k, Value: t.settings[k], UpdatedAt: now}
		if err := tx.Create(&sr).Error; err != nil {
			return fmt.Errorf("insert agent %d tool setting %s.%s: %w", agentID, t.class, k, err)
		}
	}
	return nil
}

// InheritedToolSettings returns the settings layers an agent of principalID inherits, lowest
// first, each by tool class: the global layer, then the owning user's layer (a personal
// principal) or the owning group's layer (a group's principal). The agent layer is not among
// them. An unknown principal inherits the global layer only. Values are as stored (numbers as
// json.Number, password values sealed). Errors: none beyond the database's own.
func (s *Agents) InheritedToolSettings(ctx context.Context, principalID int64) ([]map[string]*ToolSettings, error) {
	db := s.conn(ctx)
	scopes := []ToolScope{GlobalToolScope()}
	var ids []int64
	if err := db.Model(&userRow{}).Where("principal_id = ?", principalID).Pluck("id", &ids).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("owner of principal %d: %w", principalID, err))
	}
	if len(ids) > 0 {
		scopes = append(scopes, UserToolScope(ids[0]))
	} else {
		if err := db.Model(&groupRow{}).Where("principal_id = ?", principalID).Pluck("id", &ids).Error; err != nil {
			return nil, TranslateError(fmt.Errorf("owner of principal %d: %w", principalID, err))
		}
		if len(ids) > 0 {
			scopes = append(scopes, GroupToolScope(ids[0]))
		}
	}
	keys := make([]string, len(scopes))
	for i, sc := range scopes {
		keys[i] = sc.Key()
	}
	var rows []toolSettingRow
	if err := db.Where("scope_key IN ?", keys).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("tool settings inherited by principal %d: %w", principalID, err))
	}
	byScope := map[string][]toolSettingRow{}
	for _, r := range rows {
		byScope[r.ScopeKey] = append(byScope[r.ScopeKey], r)
	}
	out := make([]map[string]*ToolSettings, 0, len(scopes))
	for _, k := range keys {
		m, err := settingsOf(byScope[k])
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
