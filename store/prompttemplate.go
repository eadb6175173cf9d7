package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// PromptVariable is a declared `{{key}}` placeholder; a nil DefaultValue makes it mandatory.
type PromptVariable struct {
	Key          string  `json:"key"`
	DefaultValue *string `json:"default_value"`
}

// PromptTemplate is a reusable prompt of an agent.
type PromptTemplate struct {
	ID          int64
	AgentID     int64
	Name        string
	Description string
	Template    string
	Variables   []PromptVariable // never nil
	MaxSteps    *int
	IsActive    bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// PromptTemplateFields are the writable properties of a prompt template (a replace, not a patch).
type PromptTemplateFields struct {
	Name        string
	Description string
	Template    string
	Variables   []PromptVariable
	MaxSteps    *int
	IsActive    bool
}

type promptTemplateRow struct {
	ID          int64 `gorm:"primaryKey"`
	AgentID     int64
	Name        string
	Description string
	Template    string
	Variables   string
	MaxSteps    *int
	IsActive    bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (promptTemplateRow) TableName() string { return "prompt_templates" }

func (r *promptTemplateRow) toTemplate() (*PromptTemplate, error) {
	vars := []PromptVariable{}
	if err := json.Unmarshal([]byte(r.Variables), &vars); err != nil {
		return nil, fmt.Errorf("decode variables of prompt template %d: %w", r.ID, err)
	}
	if vars == nil {
		vars = []PromptVariable{}
	}
	return &PromptTemplate{
		ID: r.ID, AgentID: r.AgentID, Name: r.Name, Description: r.Description, Template: r.Template,
		Variables: vars, MaxSteps: r.MaxSteps, IsActive: r.IsActive, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}, nil
}

func errTemplateNotFound() error {
	return svcerr.New(svcerr.ErrNotFound, "prompt template not found")
}

// encodeTemplateVariables writes the variables as stored. The field rules are package
// schedule's (schedule.CheckTemplateFields), applied before the store is called; encodeJSON's
// ErrInvalid on an oversize column stays as the last guard of every JSON column.
func encodeTemplateVariables(f PromptTemplateFields) (string, error) {
	vars := f.Variables
	if vars == nil {
		vars = []PromptVariable{}
	}
	return encodeJSON("variables", vars)
}

func loadTemplate(db *gorm.DB, agentID, id int64) (*PromptTemplate, error) {
	var row promptTemplateRow
	err := db.Where("id = ? AND agent_id = ?", id, agentID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errTemplateNotFound()
	}
	if err != nil {
		return nil, fmt.Errorf("load prompt template %d: %w", id, err)
	}
	return row.toTemplate()
}

// PromptTemplates returns every template of agent agentID by name (byte order) and id. The
// caller has checked visibility. Errors: none beyond the database's own.
func (s *Agents) PromptTemplates(ctx context.Context, agentID int64) ([]PromptTemplate, error) {
	var rows []promptTemplateRow
	if err := s.conn(ctx).Where("agent_id = ?", agentID).Order("name").Order("id").Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("list prompt templates: %w", err))
	}
	out := make([]PromptTemplate, 0, len(rows))
	for i := range rows {
		t, err := rows[i].toTemplate()
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// PromptTemplate returns template id of agent agentID. Errors: ErrNotFound "prompt template
// not found" (unknown, or of another agent).
func (s *Agents) PromptTemplate(ctx context.Context, agentID, id int64) (*PromptTemplate, error) {
	t, err := loadTemplate(s.conn(ctx), agentID, id)
	return t, TranslateError(err)
}

func duplicateName(err error) error {
	if errors.Is(TranslateError(err), svcerr.ErrConflict) {
		return svcerr.New(svcerr.ErrConflict, "a prompt template with this name already exists for the agent")
	}
	return err
}

// CreatePromptTemplate stores a template of agent agentID after check allowed it on the locked
// agent; the caller has checked the fields (schedule.CheckTemplateFields). Errors: ErrNotFound
// "agent not found", ErrConflict (name taken within the agent, the unique key's answer), and
// whatever check returns.
func (s *Agents) CreatePromptTemplate(ctx context.Context, agentID int64, f PromptTemplateFields, check AgentCheck) (*PromptTemplate, error) {
	vars, err := encodeTemplateVariables(f)
	if err != nil {
		return nil, err
	}
	var out *PromptTemplate
	err = s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		now := s.now()
		row := promptTemplateRow{AgentID: agentID, Name: f.Name, Description: f.Description, Template: f.Template,
			Variables: vars, MaxSteps: f.MaxSteps, IsActive: f.IsActive, CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			return duplicateName(fmt.Errorf("create prompt template: %w", err))
		}
		var err error
		out, err = row.toTemplate()
		return err
	})
	if err != nil {
		return nil, TranslateError(err)
	}
	return out, nil
}

// UpdatePromptTemplate replaces every writable field of template id of agent agentID. A change
// that leaves a scheduled run of the template without a value for a variable lacking a default
// is refused; it is checked here because the runs are read under the agent's lock. The caller
// has checked the fields (schedule.CheckTemplateFields). Errors: ErrNotFound (agent or
// template), ErrInvalid (the run rule), ErrConflict (name taken), and whatever check returns.
func (s *Agents) UpdatePromptTemplate(ctx context.Context, agentID, id int64, f PromptTemplateFields, check AgentCheck) (*PromptTemplate, error) {
	vars, err := encodeTemplateVariables(f)
	if err != nil {
		return nil, err
	}
	var out *PromptTemplate
	err = s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		if _, err := loadTemplate(tx, agentID, id); err != nil {
			return err
		}
		runs, err := runsWhere(tx, "template_id = ?", id)
		if err != nil {
			return err
		}
		for _, r := range runs { // stays here: the runs are read under the agent's lock
			for _, v := range f.Variables {
				if _, ok := r.Variables[v.Key]; !ok && v.DefaultValue == nil {
					return invalidf("variables: scheduled run %d has no value for %q, which has no default", r.ID, v.Key)
				}
			}
		}
		ch := map[string]any{"name": f.Name, "description": f.Description, "template": f.Template, "variables": vars,
			"max_steps": f.MaxSteps, "is_active": f.IsActive, "updated_at": s.now()}
		if err := tx.Model(&promptTemplateRow{}).Where("id = ?", id).Updates(ch).Error; err != nil {
			return duplicateName(fmt.Errorf("update prompt template %d: %w", id, err))
		}
		out, err = loadTemplate(tx, agentID, id)
		return err
	})
	if err != nil {
		return nil, TranslateError(err)
	}
	return out, nil
}

// DeletePromptTemplate removes template id of agent agentID. Errors: ErrNotFound (agent or
// template), ErrInvalidState while a scheduled run uses it, and whatever check returns.
func (s *Agents) DeletePromptTemplate(ctx context.Context, agentID, id int64, check AgentCheck) error {
	return TranslateError(s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		if _, err := loadTemplate(tx, agentID, id); err != nil {
			return err
		}
		var n int64
		if err := tx.Model(&scheduledRunRow{}).Where("template_id = ?", id).Count(&n).Error; err != nil {
			return fmt.Errorf("count runs of prompt template %d: %w", id, err)
		}
		if n > 0 {
			return svcerr.New(svcerr.ErrInvalidState, "a scheduled run uses this prompt template; delete or change the run first")
		}
		if err := tx.Delete(&promptTemplateRow{}, id).Error; err != nil {
			return fmt.Errorf("delete prompt template %d: %w", id, err)
		}
		return nil
	}))
}
