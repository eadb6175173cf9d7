package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Tool configuration limits: the key columns' sizes, and a bound on one stored setting value
// (its JSON, password values sealed) so both dialects refuse the same values.
const (
	MaxToolClassLen        = 191
	MaxToolSettingKeyLen   = 64
	MaxToolOperationLen    = 64
	MaxToolSettingValueLen = 65535 // bytes of JSON per key
)

// Tool settings layers (the scope column), lowest first after the tool defaults.
const (
	ToolScopeGlobal = "global"
	ToolScopeUser   = "user"
	ToolScopeGroup  = "group"
	ToolScopeAgent  = "agent"
)

// ToolScope names one layer of the settings cascade with its owner: the global layer (ID 0), a
// user's, a group's (principal_groups.id) or an agent's.
type ToolScope struct {
	Kind string // one of the ToolScope constants
	ID   int64
}

// GlobalToolScope is the administrators' layer.
func GlobalToolScope() ToolScope { return ToolScope{Kind: ToolScopeGlobal} }

// UserToolScope is the layer of user id.
func UserToolScope(id int64) ToolScope { return ToolScope{Kind: ToolScopeUser, ID: id} }

// GroupToolScope is the layer of group id.
func GroupToolScope(id int64) ToolScope { return ToolScope{Kind: ToolScopeGroup, ID: id} }

// AgentToolScope is the layer of agent id.
func AgentToolScope(id int64) ToolScope { return ToolScope{Kind: ToolScopeAgent, ID: id} }

// Key is the stored scope_key: "global", "user:3", "group:2", "agent:7".
func (sc ToolScope) Key() string {
	if sc.Kind == ToolScopeGlobal {
		return ToolScopeGlobal
	}
	return sc.Kind + ":" + strconv.FormatInt(sc.ID, 10)
}

// check guards the scope the callers build (a programming error, not user input).
func (sc ToolScope) check() error {
	switch sc.Kind {
	case ToolScopeGlobal:
		if sc.ID == 0 {
			return nil
		}
	case ToolScopeUser, ToolScopeGroup, ToolScopeAgent:
		if sc.ID > 0 {
			return nil
		}
	}
	return invalidf("invalid tool settings scope %q", sc.Key())
}

// ToolSettings is one layer of one tool's settings as stored.
type ToolSettings struct {
	ToolClass string
	// Values maps setting keys to their JSON-decoded values (numbers as json.Number); never nil.
	// Password-typed values are the sealed text the service stored: never show them.
	Values map[string]any
	// UpdatedAt is the last write to the layer; nil when nothing is stored.
	UpdatedAt *time.Time
}

// SettingsEdit computes a layer's new values from the stored ones; it runs inside the write
// transaction, after the owner is locked, and must not keep stored. Keys absent from the result
// (or set to nil) are deleted. A non-nil error aborts the write and is returned as it is.
type SettingsEdit func(stored map[string]any) (map[string]any, error)

// ToolOperationOverride is an agent's override of one operation; nil inherits the declared
// default (the agent's approval timeout for ApprovalTimeoutSeconds, where 0 means forever).
type ToolOperationOverride struct {
	Enabled                *bool
	AutoApprove            *bool
	ApprovalTimeoutSeconds *int
}

// Empty reports whether o overrides nothing (no row holds it).
func (o ToolOperationOverride) Empty() bool {
	return o.Enabled == nil && o.AutoApprove == nil && o.ApprovalTimeoutSeconds == nil
}

// GroupTool is a group's entry for one tool class with the group layer of its settings.
type GroupTool struct {
	GroupID   int64
	ToolClass string
	Enabled   bool
	// Settings is the group layer (as ToolSettings.Values: sealed secrets, never nil).
	Settings  map[string]any
	CreatedAt time.Time
	UpdatedAt time.Time
}

// AgentToolConfig is everything stored about an agent's tools: what the settings cascade and
// the status of each tool are computed from.
type AgentToolConfig struct {
	AgentID     int64
	PrincipalID int64
	// OwnerUserID is the user whose personal principal owns the agent (0 for a group's agent);
	// OwnerGroupID the group that owns it (0 for a personal agent).
	OwnerUserID  int64
	OwnerGroupID int64
	// Enabled holds the agent's own enablement rows by tool class.
	Enabled map[string]bool
	// GroupEnabled holds the owning group's entries by tool class (empty for a personal agent).
	GroupEnabled map[string]bool
	// Operations holds the agent's operation overrides: tool class → operation → override.
	Operations map[string]map[string]ToolOperationOverride
	// Settings layers by tool class: global, the owning user's, the owning group's, the agent's.
	// A class without values at a layer is absent from it.
	Global, User, Group, Agent map[string]*ToolSettings
}

type agentToolRow struct {
	AgentID   int64  `gorm:"primaryKey;autoIncrement:false"`
	ToolClass string `gorm:"primaryKey"`
	Enabled   bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (agentToolRow) TableName() string { return "agent_tools" }

type agentToolOperationRow struct {
	AgentID                int64  `gorm:"primaryKey;autoIncrement:false"`
	ToolClass              string `gorm:"primaryKey"`
	Operation              string `gorm:"primaryKey"`
	Enabled                *bool
	AutoApprove            *bool
	ApprovalTimeoutSeconds *int
	UpdatedAt              time.Time
}

func (agentToolOperationRow) TableName() string { return "agent_tool_operations" }

type groupToolRow struct {
	GroupID   int64  `gorm:"primaryKey;autoIncrement:false"`
	ToolClass string `gorm:"primaryKey"`
	Enabled   bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (groupToolRow) TableName() string { return "group_tools" }

type toolSettingRow struct {
	ID         int64
	Scope      string
	ScopeKey   string
	UserID     *int64
	GroupID    *int64
	AgentID    *int64
	ToolClass  string
	SettingKey string
	Value      string
	UpdatedAt  time.Time
}

func (toolSettingRow) TableName() string { return "tool_settings" }

// checkToolClass and checkOperationName stay in the store as the last guard of the key
// columns (both dialects refuse the same values): package toolconfig reaches the store with
// registered classes and declared operations only, and checks the records of an import itself
// (toolconfig.CheckClass, CheckOperation).
func checkToolClass(class string) error { return checkASCII("tool class", class, 1, MaxToolClassLen) }

func checkOperationName(op string) error {
	return checkASCII("operation", op, 1, MaxToolOperationLen)
}

// decodeSettingValue reads one stored JSON value; numbers keep their exact text (json.Number).
func decodeSettingValue(raw string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// settingsOf groups rows of one scope by tool class.
func settingsOf(rows []toolSettingRow) (map[string]*ToolSettings, error) {
	out := map[string]*ToolSettings{}
	for i := range rows {
		r := &rows[i]
		v, err := decodeSettingValue(r.Value)
		if err != nil {
			return nil, fmt.Errorf("tool setting %s %s.%s holds invalid JSON: %w", r.ScopeKey, r.ToolClass, r.SettingKey, err)
		}
		ts := out[r.ToolClass]
		if ts == nil {
			ts = &ToolSettings{ToolClass: r.ToolClass, Values: map[string]any{}}
			out[r.ToolClass] = ts
		}
		ts.Values[r.SettingKey] = v
		at := r.UpdatedAt.UTC()
		if ts.UpdatedAt == nil || at.After(*ts.UpdatedAt) {
			ts.UpdatedAt = &at
		}
	}
	return out, nil
}

func loadToolSettings(db *gorm.DB, scope ToolScope, class string) (*ToolSettings, []toolSettingRow, error) {
	var rows []toolSettingRow
	err := db.Where("scope_key = ? AND tool_class = ?", scope.Key(), class).Order("setting_key").Find(&rows).Error
	if err != nil {
		return nil, nil, fmt.Errorf("load tool settings %s %s: %w", scope.Key(), class, err)
	}
	m, err := settingsOf(rows)
	if err != nil {
		return nil, nil, err
	}
	ts := m[class]
	if ts == nil {
		ts = &ToolSettings{ToolClass: class, Values: map[string]any{}}
	}
	return ts, rows, nil
}

// ToolSettings returns one layer of one tool's settings (empty when nothing is stored). It does
// not check that the owner exists. Errors: ErrInvalid (malformed scope or class).
func (s *Agents) ToolSettings(ctx context.Context, scope ToolScope, class string) (*ToolSettings, error) {
	if err := scope.check(); err != nil {
		return nil, err
	}
	if err := checkToolClass(class); err != nil {
		return nil, err
	}
	ts, _, err := loadToolSettings(s.conn(ctx), scope, class)
	return ts, TranslateError(err)
}

// encodeSettings turns an edit's result into stored JSON text by key, dropping unset values.
// Its key and size checks stay here: an edit's result is computed from the stored values inside
// the transaction, so this is where it is first known (toolconfig.CheckValues holds the same
// rule for values known before the call).
func encodeSettings(next map[string]any) (map[string]string, error) {
	out := make(map[string]string, len(next))
	for k, v := range next {
		if err := checkASCII("setting key", k, 1, MaxToolSettingKeyLen); err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, invalidf("setting %q cannot be encoded as JSON", k)
		}
		if len(b) > MaxToolSettingValueLen {
			return nil, invalidf("setting %q must encode to at most %d bytes of JSON", k, MaxToolSettingValueLen)
		}
		if string(b) == "null" {
			continue
		}
		out[k] = string(b)
	}
	return out, nil
}

// editToolSettings applies edit to one layer inside tx (the owner already locked): keys whose
// encoded value changed are written, keys gone are deleted, and when anything changed every row
// of the layer gets the new updated_at (so the layer's updated_at is its last write).
func (s *Store) editToolSettings(tx *gorm.DB, scope ToolScope, class string, edit SettingsEdit) (*ToolSettings, error) {
	cur, rows, err := loadToolSettings(tx, scope, class)
	if err != nil {
		return nil, err
	}
	next, err := edit(cur.Values)
	if err != nil {
		return nil, err
	}
	enc, err := encodeSettings(next)
	if err != nil {
		return nil, err
	}
	now := s.now()
	changed := false
	stored := make(map[string]*toolSettingRow, len(rows))
	for i := range rows {
		stored[rows[i].SettingKey] = &rows[i]
	}
	var gone []int64
	for k, r := range stored {
		if _, keep := enc[k]; !keep {
			gone = append(gone, r.ID)
		}
	}
	if len(gone) > 0 {
		changed = true
		if err := tx.Where("id IN ?", gone).Delete(&toolSettingRow{}).Error; err != nil {
			return nil, fmt.Errorf("delete tool settings %s %s: %w", scope.Key(), class, err)
		}
	}
	keys := make([]string, 0, len(enc))
	for k := range enc {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable write order
	for _, k := range keys {
		v := enc[k]
		if r, ok := stored[k]; ok {
			if r.Value == v {
				continue
			}
			changed = true
			if err := tx.Model(&toolSettingRow{}).Where("id = ?", r.ID).Update("value", v).Error; err != nil {
				return nil, fmt.Errorf("update tool setting %s %s.%s: %w", scope.Key(), class, k, err)
			}
			continue
		}
		changed = true
		row := toolSettingRow{Scope: scope.Kind, ScopeKey: scope.Key(), ToolClass: class, SettingKey: k, Value: v, UpdatedAt: now}
		id := scope.ID
		switch scope.Kind {
		case ToolScopeUser:
			row.UserID = &id
		case ToolScopeGroup:
			row.GroupID = &id
		case ToolScopeAgent:
			row.AgentID = &id
		}
		if err := tx.Create(&row).Error; err != nil {
			return nil, fmt.Errorf("insert tool setting %s %s.%s: %w", scope.Key(), class, k, err)
		}
	}
	if changed {
		err := tx.Model(&toolSettingRow{}).Where("scope_key = ? AND tool_class = ?", scope.Key(), class).Update("updated_at", now).Error
		if err != nil {
			return nil, fmt.Errorf("touch tool settings %s %s: %w", scope.Key(), class, err)
		}
	}
	out, _, err := loadToolSettings(tx, scope, class)
	return out, err
}

func deleteToolSettings(tx *gorm.DB, scope ToolScope, class string) error {
	if err := tx.Where("scope_key = ? AND tool_class = ?", scope.Key(), class).Delete(&toolSettingRow{}).Error; err != nil {
		return fmt.Errorf("delete tool settings %s %s: %w", scope.Key(), class, err)
	}
	return nil
}

// lockSettingsOwner serialises writes to a global or user layer: the global layer takes the
// accounts lock (it must be the transaction's first statement; global writes are rare
// administrator actions), a user layer locks the user's row.
func lockSettingsOwner(tx *gorm.DB, scope ToolScope) error {
	switch scope.Kind {
	case ToolScopeGlobal:
		return lockAccounts(tx)
	case ToolScopeUser:
		var ids []int64
		err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Model(&userRow{}).Where("id = ?", scope.ID).Pluck("id", &ids).Error
		if err != nil {
			return fmt.Errorf("lock user %d: %w", scope.ID, err)
		}
		if len(ids) == 0 {
			return userNotFound(scope.ID)
		}
		return nil
	}
	return invalidf("tool settings of scope %q are written with their own method", scope.Kind)
}

// EditToolSettings changes the global layer or a user's layer of a tool in one transaction:
// edit computes the new values from the stored ones (see SettingsEdit). Writes to one layer are
// serialised. Errors: ErrInvalid (a group or agent scope, malformed class or key, a value
// over MaxToolSettingValueLen), ErrNotFound (unknown user), and whatever edit returns.
func (s *Agents) EditToolSettings(ctx context.Context, scope ToolScope, class string, edit SettingsEdit) (*ToolSettings, error) {
	if err := scope.check(); err != nil {
		return nil, err
	}
	if err := checkToolClass(class); err != nil {
		return nil, err
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*ToolSettings, error) {
		if err := lockSettingsOwner(tx, scope); err != nil {
			return nil, err
		}
		return s.editToolSettings(tx, scope, class, edit)
	})
}

// DeleteToolSettings removes every value of the global layer or a user's layer of a tool;
// idempotent. Errors: ErrInvalid (a group or agent scope, malformed class).
func (s *Agents) DeleteToolSettings(ctx context.Context, scope ToolScope, class string) error {
	if err := scope.check(); err != nil {
		return err
	}
	if scope.Kind != ToolScopeGlobal && scope.Kind != ToolScopeUser {
		return invalidf("tool settings of scope %q are deleted with their own method", scope.Kind)
	}
	if err := checkToolClass(class); err != nil {
		return err
	}
	return TranslateError(deleteToolSettings(s.conn(ctx), scope, class))
}

// ReplaceAgentToolSettings changes the agent layer of a tool after check allowed it on the
// locked agent; edit computes the new values from the stored ones. Errors: ErrNotFound "agent
// not found", ErrInvalid (malformed class or key, a value over MaxToolSettingValueLen), and
// whatever check or edit return.
func (s *Agents) ReplaceAgentToolSettings(ctx context.Context, agentID int64, class string, check AgentCheck, edit SettingsEdit) (*ToolSettings, error) {
	if err := checkToolClass(class); err != nil {
		return nil, err
	}
	var out *ToolSettings
	err := s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		var err error
		out, err = s.editToolSettings(tx, AgentToolScope(agentID), class, edit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteAgentToolSettings removes the agent layer of a tool after check allowed it;
// idempotent. Errors: ErrNotFound "agent not found", ErrInvalid (malformed class), and
// whatever check returns.
func (s *Agents) DeleteAgentToolSettings(ctx context.Context, agentID int64, class string, check AgentCheck) error {
	if err := checkToolClass(class); err != nil {
		return err
	}
	return s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		return deleteToolSettings(tx, AgentToolScope(agentID), class)
	})
}

// SetAgentToolEnabled records whether the agent has the tool enabled, after check allowed it;
// idempotent. Operation overrides and settings are untouched. Errors: ErrNotFound "agent not
// found", ErrInvalid (malformed class), and whatever check returns.
func (s *Agents) SetAgentToolEnabled(ctx context.Context, agentID int64, class string, enabled bool, check AgentCheck) error {
	if err := checkToolClass(class); err != nil {
		return err
	}
	return s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		now := s.now()
		var rows []agentToolRow
		if err := tx.Where("agent_id = ? AND tool_class = ?", agentID, class).Limit(1).Find(&rows).Error; err != nil {
			return fmt.Errorf("load agent %d tool %s: %w", agentID, class, err)
		}
		if len(rows) == 0 {
			row := agentToolRow{AgentID: agentID, ToolClass: class, Enabled: enabled, CreatedAt: now, UpdatedAt: now}
			if err := tx.Create(&row).Error; err != nil {
				return fmt.Errorf("insert agent %d tool %s: %w", agentID, class, err)
			}
			return nil
		}
		if rows[0].Enabled == enabled {
			return nil
		}
		err := tx.Model(&agentToolRow{}).Where("agent_id = ? AND tool_class = ?", agentID, class).
			Updates(map[string]any{"enabled": enabled, "updated_at": now}).Error
		if err != nil {
			return fmt.Errorf("update agent %d tool %s: %w", agentID, class, err)
		}
		return nil
	})
}

// SetAgentToolOperation stores the agent's override of one operation after check allowed it;
// an override with every field nil removes the row. Errors: ErrNotFound "agent not found",
// ErrInvalid (malformed class or operation), and whatever check returns.
func (s *Agents) SetAgentToolOperation(ctx context.Context, agentID int64, class, op string, o ToolOperationOverride, check AgentCheck) error {
	if err := checkToolClass(class); err != nil {
		return err
	}
	if err := checkOperationName(op); err != nil {
		return err
	}
	return s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		where := tx.Where("agent_id = ? AND tool_class = ? AND operation = ?", agentID, class, op)
		if o.Empty() {
			if err := where.Delete(&agentToolOperationRow{}).Error; err != nil {
				return fmt.Errorf("delete agent %d operation %s.%s: %w", agentID, class, op, err)
			}
			return nil
		}
		row := agentToolOperationRow{AgentID: agentID, ToolClass: class, Operation: op,
			Enabled: o.Enabled, AutoApprove: o.AutoApprove, ApprovalTimeoutSeconds: o.ApprovalTimeoutSeconds, UpdatedAt: s.now()}
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "agent_id"}, {Name: "tool_class"}, {Name: "operation"}},
			DoUpdates: clause.AssignmentColumns([]string{"enabled", "auto_approve", "approval_timeout_seconds", "updated_at"}),
		}).Create(&row).Error
		if err != nil {
			return fmt.Errorf("store agent %d operation %s.%s: %w", agentID, class, op, err)
		}
		return nil
	})
}

// AgentToolConfig reads everything stored about the agent's tools (see AgentToolConfig).
// Errors: ErrNotFound "agent not found".
func (s *Agents) AgentToolConfig(ctx context.Context, agentID int64) (*AgentToolConfig, error) {
	out, err := agentToolConfig(s.conn(ctx), agentID)
	return out, TranslateError(err)
}

func agentToolConfig(db *gorm.DB, agentID int64) (*AgentToolConfig, error) {
	var principals []int64
	if err := db.Model(&agentRow{}).Where("id = ?", agentID).Pluck("principal_id", &principals).Error; err != nil {
		return nil, fmt.Errorf("load agent %d: %w", agentID, err)
	}
	if len(principals) == 0 {
		return nil, errAgentNotFound()
	}
	c := &AgentToolConfig{
		AgentID: agentID, PrincipalID: principals[0],
		Enabled: map[string]bool{}, GroupEnabled: map[string]bool{},
		Operations: map[string]map[string]ToolOperationOverride{},
	}
	var ids []int64
	if err := db.Model(&userRow{}).Where("principal_id = ?", c.PrincipalID).Pluck("id", &ids).Error; err != nil {
		return nil, fmt.Errorf("owner of agent %d: %w", agentID, err)
	}
	if len(ids) > 0 {
		c.OwnerUserID = ids[0]
	} else {
		if err := db.Model(&groupRow{}).Where("principal_id = ?", c.PrincipalID).Pluck("id", &ids).Error; err != nil {
			return nil, fmt.Errorf("owner of agent %d: %w", agentID, err)
		}
		if len(ids) > 0 {
			c.OwnerGroupID = ids[0]
		}
	}

	var tools []agentToolRow
	if err := db.Where("agent_id = ?", agentID).Find(&tools).Error; err != nil {
		return nil, fmt.Errorf("tools of agent %d: %w", agentID, err)
	}
	for _, t := range tools {
		c.Enabled[t.ToolClass] = t.Enabled
	}
	if c.OwnerGroupID != 0 {
		var gts []groupToolRow
		if err := db.Where("group_id = ?", c.OwnerGroupID).Find(&gts).Error; err != nil {
			return nil, fmt.Errorf("tools of group %d: %w", c.OwnerGroupID, err)
		}
		for _, t := range gts {
			c.GroupEnabled[t.ToolClass] = t.Enabled
		}
	}
	var ops []agentToolOperationRow
	if err := db.Where("agent_id = ?", agentID).Find(&ops).Error; err != nil {
		return nil, fmt.Errorf("operations of agent %d: %w", agentID, err)
	}
	for _, o := range ops {
		m := c.Operations[o.ToolClass]
		if m == nil {
			m = map[string]ToolOperationOverride{}
			c.Operations[o.ToolClass] = m
		}
		m[o.Operation] = ToolOperationOverride{Enabled: o.Enabled, AutoApprove: o.AutoApprove, ApprovalTimeoutSeconds: o.ApprovalTimeoutSeconds}
	}

	scopes := []ToolScope{GlobalToolScope(), AgentToolScope(agentID)}
	if c.OwnerUserID != 0 {
		scopes = append(scopes, UserToolScope(c.OwnerUserID))
	}
	if c.OwnerGroupID != 0 {
		scopes = append(scopes, GroupToolScope(c.OwnerGroupID))
	}
	keys := make([]string, len(scopes))
	for i, sc := range scopes {
		keys[i] = sc.Key()
	}
	var rows []toolSettingRow
	if err := db.Where("scope_key IN ?", keys).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("tool settings of agent %d: %w", agentID, err)
	}
	byScope := map[string][]toolSettingRow{}
	for _, r := range rows {
		byScope[r.ScopeKey] = append(byScope[r.ScopeKey], r)
	}
	layers := map[string]*map[string]*ToolSettings{
		ToolScopeGlobal: &c.Global, ToolScopeUser: &c.User, ToolScopeGroup: &c.Group, ToolScopeAgent: &c.Agent,
	}
	for _, sc := range scopes {
		m, err := settingsOf(byScope[sc.Key()])
		if err != nil {
			return nil, err
		}
		*layers[sc.Kind] = m
	}
	for _, l := range layers {
		if *l == nil {
			*l = map[string]*ToolSettings{}
		}
	}
	return c, nil
}

// AgentsOfPrincipal returns those of ids that are agents owned by principalID, ascending (the
// same-owner rule of allowed_target_agents). Errors: none beyond the database's own.
func (s *Agents) AgentsOfPrincipal(ctx context.Context, principalID int64, ids []int64) ([]int64, error) {
	out := []int64{}
	if len(ids) == 0 {
		return out, nil
	}
	err := s.conn(ctx).Model(&agentRow{}).Where("principal_id = ? AND id IN ?", principalID, ids).Order("id").Pluck("id", &out).Error
	if err != nil {
		return nil, TranslateError(fmt.Errorf("agents of principal %d: %w", principalID, err))
	}
	return out, nil
}

func groupToolNotFound(groupID int64, class string) error {
	return svcerr.New(svcerr.ErrNotFound, "group %d has no entry for tool %s", groupID, class)
}

func (r *groupToolRow) toGroupTool(settings map[string]any) *GroupTool {
	if settings == nil {
		settings = map[string]any{}
	}
	return &GroupTool{GroupID: r.GroupID, ToolClass: r.ToolClass, Enabled: r.Enabled, Settings: settings,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// GroupTools returns the group's tool entries ordered by class, each with its group layer. It
// does not check that the group exists (an unknown group has no entries). Errors: none beyond
// the database's own.
func (s *Agents) GroupTools(ctx context.Context, groupID int64) ([]GroupTool, error) {
	db := s.conn(ctx)
	var rows []groupToolRow
	if err := db.Where("group_id = ?", groupID).Order("tool_class").Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("tools of group %d: %w", groupID, err))
	}
	var srows []toolSettingRow
	if err := db.Where("scope_key = ?", GroupToolScope(groupID).Key()).Find(&srows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("tool settings of group %d: %w", groupID, err))
	}
	settings, err := settingsOf(srows)
	if err != nil {
		return nil, err
	}
	out := make([]GroupTool, 0, len(rows))
	for i := range rows {
		var vals map[string]any
		if ts := settings[rows[i].ToolClass]; ts != nil {
			vals = ts.Values
		}
		out = append(out, *rows[i].toGroupTool(vals))
	}
	return out, nil
}

// UpsertGroupTool creates or updates the group's entry for a tool class in one transaction,
// after check allowed it on the members' roles read under the group's lock. enabled nil keeps
// the current value (true for a new entry); edit, when not nil, computes the group layer's new
// settings from the stored ones. The entry's updated_at moves on every call. Errors:
// ErrNotFound (group), ErrInvalid (malformed class or key, a value over
// MaxToolSettingValueLen), and whatever check or edit return.
func (s *Agents) UpsertGroupTool(ctx context.Context, groupID int64, class string, enabled *bool, check RoleCheck, edit SettingsEdit) (*GroupTool, error) {
	if err := checkToolClass(class); err != nil {
		return nil, err
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*GroupTool, error) {
		if err := lockGroupForCheck(tx, groupID, check); err != nil {
			return nil, err
		}
		now := s.now()
		var rows []groupToolRow
		if err := tx.Where("group_id = ? AND tool_class = ?", groupID, class).Limit(1).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("load group %d tool %s: %w", groupID, class, err)
		}
		var row groupToolRow
		if len(rows) == 0 {
			row = groupToolRow{GroupID: groupID, ToolClass: class, Enabled: enabled == nil || *enabled, CreatedAt: now, UpdatedAt: now}
			if err := tx.Create(&row).Error; err != nil {
				return nil, fmt.Errorf("insert group %d tool %s: %w", groupID, class, err)
			}
		} else {
			row = rows[0]
			if enabled != nil {
				row.Enabled = *enabled
			}
			row.UpdatedAt = now
			err := tx.Model(&groupToolRow{}).Where("group_id = ? AND tool_class = ?", groupID, class).
				Updates(map[string]any{"enabled": row.Enabled, "updated_at": now}).Error
			if err != nil {
				return nil, fmt.Errorf("update group %d tool %s: %w", groupID, class, err)
			}
		}
		var ts *ToolSettings
		var err error
		if edit != nil {
			ts, err = s.editToolSettings(tx, GroupToolScope(groupID), class, edit)
		} else {
			ts, _, err = loadToolSettings(tx, GroupToolScope(groupID), class)
		}
		if err != nil {
			return nil, err
		}
		return row.toGroupTool(ts.Values), nil
	})
}

// RemoveGroupTool deletes the group's entry for a tool class and its group layer of settings,
// after check allowed it. Errors: ErrNotFound (group, or no entry for the class), and whatever
// check returns.
func (s *Agents) RemoveGroupTool(ctx context.Context, groupID int64, class string, check RoleCheck) error {
	if err := checkToolClass(class); err != nil {
		return groupToolNotFound(groupID, class)
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		if err := lockGroupForCheck(tx, groupID, check); err != nil {
			return err
		}
		res := tx.Where("group_id = ? AND tool_class = ?", groupID, class).Delete(&groupToolRow{})
		if res.Error != nil {
			return fmt.Errorf("delete group %d tool %s: %w", groupID, class, res.Error)
		}
		if res.RowsAffected == 0 {
			return groupToolNotFound(groupID, class)
		}
		return deleteToolSettings(tx, GroupToolScope(groupID), class)
	})
}

// lockGroupForCheck locks the group and runs check on its members' roles.
func lockGroupForCheck(tx *gorm.DB, groupID int64, check RoleCheck) error {
	if _, err := lockGroup(tx, groupID); err != nil {
		return err
	}
	if check == nil {
		return nil
	}
	roles, err := groupRoles(tx, groupID)
	if err != nil {
		return err
	}
	return check(roles)
}
