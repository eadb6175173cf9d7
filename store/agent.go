package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// Agent limits the contract does not state (those it states, the step budget and the text
// lengths, are internal/vocab/limits's): system_prompt has none there, so the store bounds it by what
// a MEDIUMTEXT column holds in the worst case (4 bytes a character).
const (
	MaxAgentSystemPromptLen  = 1 << 20
	MaxAgentMetadataLen      = 65535         // bytes of JSON
	MaxAgentRetryAfterMinute = math.MaxInt32 // the INT column's range
	MaxAgentRetries          = math.MaxInt32
)

// Compaction settings' defaults and bounds (issue 25 item 5; the loop's use is agentloop's).
const (
	DefaultCompactionThreshold = 80  // percent of the usable window
	MinCompactionThreshold     = 10  // lower compacts nearly every call
	MaxCompactionThreshold     = 100 // compact only when the window is full
	MaxCompactionAnswerReserve = math.MaxInt32
	MaxToolResultChars         = math.MaxInt32
)

// AgentCompaction are an agent's settings of long conversations: whether older turns are
// compacted, past which share of the usable window, the tokens kept for the answer (0: the
// model configuration's max_tokens_output, else agentloop's default), the characters of one
// tool result sent to the model (0: no agent-level budget; a tool's own result_max_chars
// setting comes first) and the model configuration that writes summaries (nil: the one the
// agent runs with).
type AgentCompaction struct {
	Enabled            bool
	ThresholdPercent   int
	AnswerReserve      int
	ToolResultMaxChars int
	SummaryLLMConfigID *int64
}

// Agent is a configurable AI agent owned by a principal. IsFavorite is relative to the user
// the agent was read for (the viewer argument of the reading method).
type Agent struct {
	ID                int64
	PrincipalID       int64
	Name              string
	Description       string
	SystemPrompt      string
	Notes             string
	MaxSteps          int
	AllowFollowup     bool
	RetryAfterMinutes int
	MaxRetries        int
	Metadata          map[string]any // never nil
	IsFavorite        bool
	PictureMediaID    *string // media asset of the picture; nil when none
	Compaction        AgentCompaction
	// Approvers names who may decide the agent's pending tool calls and questions (the rule
	// is package approval's); ApprovalTimeoutSeconds bounds how long a call waits for a
	// decision (0: forever) and ApprovalTimeoutAction is what happens then.
	Approvers              Approvers
	ApprovalTimeoutSeconds int
	ApprovalTimeoutAction  string
	CreatedAt              time.Time
	UpdatedAt              time.Time
}

// Approvers names who may decide an agent's pending tool calls and questions besides nobody:
// the task's owner, the managers of the agent's principal, named users (ids). Stored as a
// JSON object in agents.approvers.
type Approvers struct {
	Owner    bool    `json:"owner,omitempty"`
	Managers bool    `json:"managers,omitempty"`
	Users    []int64 `json:"users,omitempty"`
}

// DefaultApprovers is who decides when an agent names nobody: the task's owner.
func DefaultApprovers() Approvers { return Approvers{Owner: true} }

// Approval timeout actions.
const (
	ApprovalTimeoutReject = "reject"
	ApprovalTimeoutAbort  = "abort"
)

// MaxApprovalTimeoutSeconds bounds approval_timeout_seconds (the INT column's range).
const MaxApprovalTimeoutSeconds = math.MaxInt32

// MaxNamedApprovers bounds the named users of an agent's approvers.
const MaxNamedApprovers = 50

func decodeApprovers(s string) (Approvers, error) {
	var a Approvers
	if s == "" {
		return DefaultApprovers(), nil
	}
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return a, err
	}
	return a, nil
}

func encodeApprovers(a Approvers) (string, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("encode approvers: %w", err)
	}
	return string(b), nil
}

// AgentFields are the settable properties of an agent. For UpdateAgent nil means unchanged;
// for CreateAgent nil means the default (Name is required; MaxSteps limits.DefaultSteps,
// AllowFollowup true, everything else empty or zero). Metadata, when set, replaces the whole
// object. SummaryLLMConfigID 0 clears the summary model (the agent's own configuration writes
// summaries).
type AgentFields struct {
	Name              *string
	Description       *string
	SystemPrompt      *string
	Notes             *string
	MaxSteps          *int
	AllowFollowup     *bool
	RetryAfterMinutes *int
	MaxRetries        *int
	Metadata          *map[string]any

	CompactionEnabled          *bool
	CompactionThresholdPercent *int
	CompactionAnswerReserve    *int
	ToolResultMaxChars         *int
	SummaryLLMConfigID         *int64
	// Approvers replaces the whole set (nil: unchanged; create: DefaultApprovers).
	Approvers              *Approvers
	ApprovalTimeoutSeconds *int
	ApprovalTimeoutAction  *string
}

func (f AgentFields) empty() bool {
	return f.Name == nil && f.Description == nil && f.SystemPrompt == nil && f.Notes == nil &&
		f.MaxSteps == nil && f.AllowFollowup == nil && f.RetryAfterMinutes == nil &&
		f.MaxRetries == nil && f.Metadata == nil && f.CompactionEnabled == nil &&
		f.CompactionThresholdPercent == nil && f.CompactionAnswerReserve == nil &&
		f.ToolResultMaxChars == nil && f.SummaryLLMConfigID == nil && f.Approvers == nil &&
		f.ApprovalTimeoutSeconds == nil && f.ApprovalTimeoutAction == nil
}

// AgentCheck decides, inside the transaction that changes an agent and after its row is
// locked, whether the change may go ahead; it sees the agent as stored. A non-nil error aborts
// the change and is returned as it is (the permission rules live in package agent).
type AgentCheck func(a *Agent) error

// AgentQuery selects a page of agents for ListAgents.
type AgentQuery struct {
	// Viewer is the user whose favorite markers fill IsFavorite.
	Viewer int64
	// All lists every agent (administrators); otherwise only those of Principals.
	All        bool
	Principals []int64
	// FavoritesFirst orders the viewer's favorites before the others; then name, then id.
	FavoritesFirst bool
	// Match, when set, keeps the agents whose name or description contains it (ignoring case).
	Match string
	// Page starts at 1 (lower values mean 1); PerPage is at most 100, and below 1 means 25.
	Page, PerPage int
}

type agentRow struct {
	ID                int64
	PrincipalID       int64
	Name              string
	Description       string
	SystemPrompt      string
	Notes             string
	MaxSteps          int
	AllowFollowup     bool
	RetryAfterMinutes int
	MaxRetries        int
	Metadata          string
	PictureMediaID    *string

	CompactionEnabled          bool
	CompactionThresholdPercent int
	CompactionAnswerReserve    int
	ToolResultMaxChars         int
	SummaryLLMConfigID         *int64 `gorm:"column:summary_llm_config_id"`

	Approvers              string
	ApprovalTimeoutSeconds int
	ApprovalTimeoutAction  string

	CreatedAt time.Time
	UpdatedAt time.Time
}

func (agentRow) TableName() string { return "agents" }

// agentView is an agent row read with the viewer's favorite marker.
type agentView struct {
	Row        agentRow `gorm:"embedded"`
	IsFavorite bool
}

type agentFavoriteRow struct {
	UserID    int64 `gorm:"primaryKey;autoIncrement:false"`
	AgentID   int64 `gorm:"primaryKey;autoIncrement:false"`
	CreatedAt time.Time
}

func (agentFavoriteRow) TableName() string { return "agent_favorites" }

func (r *agentRow) toAgent(favorite bool) (*Agent, error) {
	md, err := decodeMetadata(r.Metadata)
	if err != nil {
		return nil, fmt.Errorf("agent %d: metadata: %w", r.ID, err)
	}
	appr, err := decodeApprovers(r.Approvers)
	if err != nil {
		return nil, fmt.Errorf("agent %d: approvers: %w", r.ID, err)
	}
	action := r.ApprovalTimeoutAction
	if action == "" {
		action = ApprovalTimeoutReject
	}
	return &Agent{
		Approvers: appr, ApprovalTimeoutSeconds: r.ApprovalTimeoutSeconds, ApprovalTimeoutAction: action,
		ID: r.ID, PrincipalID: r.PrincipalID, Name: r.Name, Description: r.Description,
		SystemPrompt: r.SystemPrompt, Notes: r.Notes, MaxSteps: r.MaxSteps, AllowFollowup: r.AllowFollowup,
		RetryAfterMinutes: r.RetryAfterMinutes, MaxRetries: r.MaxRetries, Metadata: md, IsFavorite: favorite,
		PictureMediaID: r.PictureMediaID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Compaction: AgentCompaction{Enabled: r.CompactionEnabled, ThresholdPercent: r.CompactionThresholdPercent,
			AnswerReserve: r.CompactionAnswerReserve, ToolResultMaxChars: r.ToolResultMaxChars, SummaryLLMConfigID: r.SummaryLLMConfigID},
	}, nil
}

// decodeMetadata reads the stored JSON object; numbers keep their exact text (json.Number).
func decodeMetadata(s string) (map[string]any, error) {
	out := map[string]any{}
	if s == "" {
		return out, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	if out == nil { // the JSON text "null"
		out = map[string]any{}
	}
	return out, nil
}

// encodeMetadata writes md as compact JSON. The caller has checked it (agent.CheckFields), so
// a failure here is a programming error, not a refusal.
func encodeMetadata(md map[string]any) (string, error) {
	if md == nil {
		return "{}", nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(md); err != nil {
		return "", fmt.Errorf("encode agent metadata: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

func errAgentNotFound() error { return svcerr.New(svcerr.ErrNotFound, "agent not found") }

// agentChanges returns the column values f sets. The field rules are package agent's
// (agent.CheckFields), applied by the services before they call the store.
func agentChanges(f AgentFields) (map[string]any, error) {
	ch := map[string]any{}
	for _, t := range []struct {
		col string
		v   *string
	}{
		{"name", f.Name}, {"description", f.Description}, {"system_prompt", f.SystemPrompt}, {"notes", f.Notes},
	} {
		if t.v != nil {
			ch[t.col] = *t.v
		}
	}
	for _, t := range []struct {
		col string
		v   *int
	}{
		{"max_steps", f.MaxSteps}, {"retry_after_minutes", f.RetryAfterMinutes}, {"max_retries", f.MaxRetries},
		{"compaction_threshold_percent", f.CompactionThresholdPercent}, {"compaction_answer_reserve", f.CompactionAnswerReserve},
		{"tool_result_max_chars", f.ToolResultMaxChars},
		{"approval_timeout_seconds", f.ApprovalTimeoutSeconds},
	} {
		if t.v != nil {
			ch[t.col] = *t.v
		}
	}
	if f.AllowFollowup != nil {
		ch["allow_followup"] = *f.AllowFollowup
	}
	if f.CompactionEnabled != nil {
		ch["compaction_enabled"] = *f.CompactionEnabled
	}
	if f.SummaryLLMConfigID != nil {
		if *f.SummaryLLMConfigID == 0 {
			ch["summary_llm_config_id"] = nil
		} else {
			ch["summary_llm_config_id"] = *f.SummaryLLMConfigID
		}
	}
	if f.ApprovalTimeoutAction != nil {
		ch["approval_timeout_action"] = *f.ApprovalTimeoutAction
	}
	if f.Approvers != nil {
		a, err := encodeApprovers(*f.Approvers)
		if err != nil {
			return nil, err
		}
		ch["approvers"] = a
	}
	if f.Metadata != nil {
		md, err := encodeMetadata(*f.Metadata)
		if err != nil {
			return nil, err
		}
		ch["metadata"] = md
	}
	return ch, nil
}

// principalExists returns ErrInvalid unless the principal exists (a reference in a request
// body, hence 422 rather than 404). It stays in the store: only the transaction that writes the
// reference can know the principal is still there.
func principalExists(tx *gorm.DB, id int64) error {
	var n int64
	if err := tx.Model(&principalRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return fmt.Errorf("check principal %d: %w", id, err)
	}
	if n == 0 {
		return invalidf("principal_id: no such principal")
	}
	return nil
}

// summaryConfigVisible refuses (ErrInvalid) a summary model configuration id (set, not 0) that
// principal cannot use: one of its own group, or a global one, as the agent's main model
// configuration is resolved (ResolveLLMConfig). Checked in the transaction that writes it.
func summaryConfigVisible(tx *gorm.DB, principal int64, id *int64) error {
	if id == nil || *id == 0 {
		return nil
	}
	if _, err := visibleLLMConfig(tx, principal, *id); err != nil {
		if errors.Is(err, svcerr.ErrNotFound) {
			return invalidf("summary_llm_config_id: no model configuration %d visible to the agent's owner", *id)
		}
		return err
	}
	return nil
}

// approversExist returns ErrInvalid unless every named approver is a user (a reference in a
// request body: 422), checked in the transaction that writes the reference.
func approversExist(tx *gorm.DB, a *Approvers) error {
	if a == nil || len(a.Users) == 0 {
		return nil
	}
	var n int64
	if err := tx.Table("users").Where("id IN ?", a.Users).Count(&n).Error; err != nil {
		return fmt.Errorf("check approvers: %w", err)
	}
	if int(n) != len(a.Users) {
		return invalidf("approvers.user_ids: no such user")
	}
	return nil
}

// CreateAgent stores a new agent owned by principalID and returns it (not a favorite of
// anyone). The caller decides whether the principal may be used and has checked the fields
// (agent.CheckFields; Name is required). Errors: ErrInvalid "principal_id: no such principal"
// (the principal is gone, known only in the transaction).
func (s *Agents) CreateAgent(ctx context.Context, principalID int64, f AgentFields) (*Agent, error) {
	row, err := newAgentRow(principalID, f)
	if err != nil {
		return nil, err
	}
	err = s.tx(ctx, func(tx *gorm.DB) error {
		if err := principalExists(tx, principalID); err != nil {
			return err
		}
		if err := summaryConfigVisible(tx, principalID, f.SummaryLLMConfigID); err != nil {
			return err
		}
		if err := approversExist(tx, f.Approvers); err != nil {
			return err
		}
		now := s.now()
		row.CreatedAt, row.UpdatedAt = now, now
		if err := tx.Create(row).Error; err != nil {
			return fmt.Errorf("create agent: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return row.toAgent(false)
}

// agentQuery selects agents with the viewer's favorite marker as is_favorite.
func agentQuery(db *gorm.DB, viewer int64) *gorm.DB {
	return db.Table("agents").
		Select("agents.*, agent_favorites.agent_id IS NOT NULL AS is_favorite").
		Joins("LEFT JOIN agent_favorites ON agent_favorites.agent_id = agents.id AND agent_favorites.user_id = ?", viewer)
}

// loadAgent reads one agent for viewer; lock takes a row lock (MySQL/MariaDB; SQLite's
// immediate transaction already holds the write lock). ErrNotFound when missing.
func loadAgent(db *gorm.DB, id, viewer int64, lock bool) (*Agent, error) {
	if lock {
		var row agentRow
		err := db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Take(&row, id).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, errAgentNotFound()
		}
		if err != nil {
			return nil, fmt.Errorf("lock agent %d: %w", id, err)
		}
	}
	// Hand-written (rawsql.go): a chat start and every session-API call on an agent read it.
	views, err := queryRows(db, (*agentView).dest, agentByID, viewer, id)
	if err != nil {
		return nil, fmt.Errorf("load agent %d: %w", id, err)
	}
	if len(views) == 0 {
		return nil, errAgentNotFound()
	}
	return views[0].Row.toAgent(views[0].IsFavorite)
}

// Agent returns one agent with viewer's favorite marker. Errors: ErrNotFound "agent not found".
func (s *Agents) Agent(ctx context.Context, id, viewer int64) (*Agent, error) {
	a, err := loadAgent(s.conn(ctx), id, viewer, false)
	return a, TranslateError(err)
}

// ListAgents returns one page of the agents q selects, each with the viewer's favorite marker:
// the viewer's favorites first when q.FavoritesFirst, then by name (byte order on both
// dialects) and id. An empty Principals list without All selects nothing. Errors: none beyond
// the database's own.
func (s *Agents) ListAgents(ctx context.Context, q AgentQuery) ([]Agent, error) {
	out := []Agent{}
	limit, offset, ok := pageWindow(q.Page, q.PerPage)
	if !ok || (!q.All && len(q.Principals) == 0) {
		return out, nil
	}
	db := agentQuery(s.conn(ctx), q.Viewer)
	if !q.All {
		db = db.Where("agents.principal_id IN ?", q.Principals)
	}
	if q.Match != "" {
		like := "%" + likeEscape(strings.ToLower(q.Match)) + "%"
		db = db.Where("(LOWER(agents.name) LIKE ? ESCAPE '!' OR LOWER(agents.description) LIKE ? ESCAPE '!')", like, like)
	}
	if q.FavoritesFirst {
		db = db.Order("is_favorite DESC")
	}
	var views []agentView
	err := db.Order("agents.name").Order("agents.id").Limit(limit).Offset(offset).Scan(&views).Error
	if err != nil {
		return nil, TranslateError(fmt.Errorf("list agents: %w", err))
	}
	for i := range views {
		a, err := views[i].Row.toAgent(views[i].IsFavorite)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, nil
}

// withAgent runs fn in a transaction on the locked agent id after check allowed it.
func (s *Store) withAgent(ctx context.Context, id, viewer int64, check AgentCheck, fn func(tx *gorm.DB, a *Agent) error) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		a, err := loadAgent(tx, id, viewer, true)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(a); err != nil {
				return err
			}
		}
		return fn(tx, a)
	})
}

// UpdateAgent changes the fields set in f (after check allowed it) and returns the agent as
// viewer sees it; the caller has checked the fields (agent.CheckFields). Sending no field
// changes nothing, not even updated_at. Errors: ErrNotFound "agent not found", and whatever
// check returns.
func (s *Agents) UpdateAgent(ctx context.Context, id, viewer int64, f AgentFields, check AgentCheck) (*Agent, error) {
	ch, err := agentChanges(f)
	if err != nil {
		return nil, err
	}
	var out *Agent
	err = s.withAgent(ctx, id, viewer, check, func(tx *gorm.DB, a *Agent) error {
		if f.empty() {
			out = a
			return nil
		}
		if err := summaryConfigVisible(tx, a.PrincipalID, f.SummaryLLMConfigID); err != nil {
			return err
		}
		if err := approversExist(tx, f.Approvers); err != nil {
			return err
		}
		ch["updated_at"] = s.now()
		if err := tx.Model(&agentRow{}).Where("id = ?", id).Updates(ch).Error; err != nil {
			return fmt.Errorf("update agent %d: %w", id, err)
		}
		out, err = loadAgent(tx, id, viewer, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteAgent removes an agent (after check allowed it) with everything that references it
// (favorite markers, tool configuration, tasks, by cascade). Its picture asset (owned by the
// agent's principal, which stays) is made unkept and expired, so the next media sweep deletes
// the row and the file. An agent with a RUNNING task is
// refused: a worker is running it and would lose its rows mid-step; abort the task first.
// Errors: ErrNotFound "agent not found", ErrInvalidState "the agent has a running task", and
// whatever check returns.
func (s *Agents) DeleteAgent(ctx context.Context, id int64, check AgentCheck) error {
	return s.withAgent(ctx, id, 0, check, func(tx *gorm.DB, _ *Agent) error {
		running, err := lockRunningTasks(tx, "agent_id = ?", id)
		if err != nil {
			return err
		}
		if len(running) > 0 {
			return svcerr.New(svcerr.ErrInvalidState, "the agent has a running task (task %d); abort it before deleting the agent", running[0].ID)
		}
		if err := expireAgentPictures(tx, s.now(), "id = ?", id); err != nil {
			return err
		}
		if err := tx.Delete(&agentRow{}, id).Error; err != nil {
			return fmt.Errorf("delete agent %d: %w", id, err)
		}
		return nil
	})
}

// deleteAgentsOf removes every agent owned by principal (and by cascade what belongs to them)
// and expires their picture assets at now, as DeleteAgent does (DeleteUser then deletes the
// principal's assets anyway); DeleteUser calls it for the personal principal in its own
// transaction. As DeleteAgent, it
// refuses (ErrInvalidState) while a task of one of those agents is RUNNING, so the whole user
// deletion is refused and nothing is written.
func deleteAgentsOf(tx *gorm.DB, principal int64, now time.Time) error {
	running, err := lockRunningTasks(tx, "agent_id IN (SELECT id FROM agents WHERE principal_id = ?)", principal)
	if err != nil {
		return err
	}
	if len(running) > 0 {
		return svcerr.New(svcerr.ErrInvalidState,
			"agent %d of this user has a running task (task %d); abort it before deleting the user", running[0].AgentID, running[0].ID)
	}
	if err := expireAgentPictures(tx, now, "principal_id = ?", principal); err != nil {
		return err
	}
	if err := tx.Where("principal_id = ?", principal).Delete(&agentRow{}).Error; err != nil {
		return fmt.Errorf("delete agents of principal %d: %w", principal, err)
	}
	return nil
}

// SetAgentFavorite marks (favorite true) or unmarks the agent as a favorite of userID, after
// check allowed it, and returns the agent as userID sees it. Both directions are idempotent.
// Errors: ErrNotFound "agent not found" (also for an unknown user), and whatever check returns.
func (s *Agents) SetAgentFavorite(ctx context.Context, id, userID int64, favorite bool, check AgentCheck) (*Agent, error) {
	var out *Agent
	err := s.withAgent(ctx, id, userID, check, func(tx *gorm.DB, a *Agent) error {
		if a.IsFavorite == favorite {
			out = a
			return nil
		}
		if favorite {
			if err := userExists(tx, userID); err != nil {
				return err
			}
			row := agentFavoriteRow{UserID: userID, AgentID: id, CreatedAt: s.now()}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
				return fmt.Errorf("favorite agent %d for user %d: %w", id, userID, err)
			}
		} else if err := tx.Where("user_id = ? AND agent_id = ?", userID, id).Delete(&agentFavoriteRow{}).Error; err != nil {
			return fmt.Errorf("unfavorite agent %d for user %d: %w", id, userID, err)
		}
		out = a
		out.IsFavorite = favorite
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TransferAgent gives the agent to principalID (after check allowed it) and returns it as
// viewer sees it; the id and everything belonging to the agent stay. Transferring to the
// current owner changes nothing. Errors: ErrNotFound "agent not found", ErrInvalid (unknown
// principal), and whatever check returns.
func (s *Agents) TransferAgent(ctx context.Context, id, viewer, principalID int64, check AgentCheck) (*Agent, error) {
	var out *Agent
	err := s.withAgent(ctx, id, viewer, check, func(tx *gorm.DB, a *Agent) error {
		if a.PrincipalID == principalID {
			out = a
			return nil
		}
		if err := principalExists(tx, principalID); err != nil {
			return err
		}
		now := s.now()
		ch := map[string]any{"principal_id": principalID, "updated_at": now}
		if err := summaryConfigVisible(tx, principalID, a.Compaction.SummaryLLMConfigID); errors.Is(err, svcerr.ErrInvalid) {
			ch["summary_llm_config_id"] = nil // the new owner cannot use it: summaries fall back to the agent's own
		} else if err != nil {
			return err
		}
		err := tx.Model(&agentRow{}).Where("id = ?", id).Updates(ch).Error
		if err != nil {
			return fmt.Errorf("transfer agent %d to principal %d: %w", id, principalID, err)
		}
		out = a
		out.PrincipalID, out.UpdatedAt = principalID, now
		if _, cleared := ch["summary_llm_config_id"]; cleared {
			out.Compaction.SummaryLLMConfigID = nil
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PrincipalOfGroup returns the principal of group groupID (principal_groups.id).
// Errors: ErrNotFound "group not found".
func (s *Agents) PrincipalOfGroup(ctx context.Context, groupID int64) (int64, error) {
	var ids []int64
	if err := s.conn(ctx).Table("principal_groups").Where("id = ?", groupID).Pluck("principal_id", &ids).Error; err != nil {
		return 0, TranslateError(fmt.Errorf("principal of group %d: %w", groupID, err))
	}
	if len(ids) == 0 {
		return 0, svcerr.New(svcerr.ErrNotFound, "group not found")
	}
	return ids[0], nil
}

// guardUserTasksNotRunning refuses (ErrInvalidState) the deletion of user userID (personal
// principal principal) while a task the deletion would remove is RUNNING: a task the user owns
// (it goes by cascade with the user) or a task of one of the user's personal agents. DeleteUser
// calls it before writing anything.
func guardUserTasksNotRunning(tx *gorm.DB, userID, principal int64) error {
	running, err := lockRunningTasks(tx, "user_id = ? OR agent_id IN (SELECT id FROM agents WHERE principal_id = ?)", userID, principal)
	if err != nil {
		return err
	}
	if len(running) > 0 {
		return svcerr.New(svcerr.ErrInvalidState,
			"task %d (agent %d) of this user or of its agents is running; abort it before deleting the user", running[0].ID, running[0].AgentID)
	}
	return nil
}

// runningTask names a RUNNING task found by lockRunningTasks.
type runningTask struct {
	ID      int64
	AgentID int64
}

// lockRunningTasks row-locks every task the condition selects for the rest of tx and returns
// the RUNNING ones, lowest id first. Locking all of them (not only the RUNNING ones) keeps a
// worker from claiming one meanwhile: the claim skips locked rows (MySQL/MariaDB; SQLite's
// immediate transaction already holds the write lock).
func lockRunningTasks(tx *gorm.DB, where string, args ...any) ([]runningTask, error) {
	var rows []struct {
		ID      int64
		AgentID int64
		Status  string
	}
	err := tx.Model(&taskRow{}).Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
		Select("id", "agent_id", "status").Where(where, args...).Order("id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("lock tasks: %w", err)
	}
	var out []runningTask
	for _, r := range rows {
		if r.Status == taskstate.Running {
			out = append(out, runningTask{ID: r.ID, AgentID: r.AgentID})
		}
	}
	return out, nil
}
