package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// AgentToolChange is one tool's part of a batch written by ConfigureAgentTools. Nil fields
// change nothing.
type AgentToolChange struct {
	ToolClass string
	// Enabled, when set, records the agent's own enablement of the tool.
	Enabled *bool
	// Settings, when set, computes the agent layer's new values from the stored ones.
	Settings SettingsEdit
	// Operations patch the agent's operation overrides.
	Operations []AgentOperationChange
}

// AgentOperationChange patches one operation override: a nil field keeps the stored value.
type AgentOperationChange struct {
	Name        string
	Enabled     *bool
	AutoApprove *bool
}

// ConfigureAgentTools applies every change to the agent's tools in one transaction, after check
// allowed it on the locked agent: either all of them are written or none. Errors: ErrNotFound
// "agent not found", ErrInvalid (malformed class, key or operation, a value over
// MaxToolSettingValueLen), and whatever check or a SettingsEdit return.
func (s *Agents) ConfigureAgentTools(ctx context.Context, agentID int64, check AgentCheck, changes []AgentToolChange) error {
	for _, c := range changes {
		if err := checkToolClass(c.ToolClass); err != nil {
			return err
		}
		for _, o := range c.Operations {
			if err := checkOperationName(o.Name); err != nil {
				return err
			}
		}
	}
	return s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		for _, c := range changes {
			if c.Enabled != nil {
				if err := s.setAgentToolEnabled(tx, agentID, c.ToolClass, *c.Enabled); err != nil {
					return err
				}
			}
			if c.Settings != nil {
				if _, err := s.editToolSettings(tx, AgentToolScope(agentID), c.ToolClass, c.Settings); err != nil {
					return err
				}
			}
			for _, o := range c.Operations {
				if err := s.patchAgentToolOperation(tx, agentID, c.ToolClass, o); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (s *Store) setAgentToolEnabled(tx *gorm.DB, agentID int64, class string, enabled bool) error {
	now := s.now()
	row := agentToolRow{AgentID: agentID, ToolClass: class, Enabled: enabled, CreatedAt: now, UpdatedAt: now}
	err := tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "agent_id"}, {Name: "tool_class"}},
		DoUpdates: clause.AssignmentColumns([]string{"enabled", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("store agent %d tool %s: %w", agentID, class, err)
	}
	return nil
}

func (s *Store) patchAgentToolOperation(tx *gorm.DB, agentID int64, class string, o AgentOperationChange) error {
	var rows []agentToolOperationRow
	err := tx.Where("agent_id = ? AND tool_class = ? AND operation = ?", agentID, class, o.Name).Limit(1).Find(&rows).Error
	if err != nil {
		return fmt.Errorf("load agent %d operation %s.%s: %w", agentID, class, o.Name, err)
	}
	row := agentToolOperationRow{AgentID: agentID, ToolClass: class, Operation: o.Name, UpdatedAt: s.now()}
	if len(rows) > 0 {
		row.Enabled, row.AutoApprove = rows[0].Enabled, rows[0].AutoApprove
	}
	if o.Enabled != nil {
		row.Enabled = o.Enabled
	}
	if o.AutoApprove != nil {
		row.AutoApprove = o.AutoApprove
	}
	err = tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "agent_id"}, {Name: "tool_class"}, {Name: "operation"}},
		DoUpdates: clause.AssignmentColumns([]string{"enabled", "auto_approve", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("store agent %d operation %s.%s: %w", agentID, class, o.Name, err)
	}
	return nil
}
