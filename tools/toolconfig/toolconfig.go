// Package toolconfig holds the rules of tool configuration: the registered tools as operators
// see them, the settings layers of the cascade (tool default < global < user < group < agent),
// which tools an agent has enabled and its per-operation overrides, and a group's tool entries.
//
// Layers. The global layer is the administrators'; a user layer belongs to one user and is
// written by that user only. An agent's cascade uses the layers of its owner, never of the
// signed-in user (document 2, schema rule 4: the owner of a tool call is the owner of the
// agent): a personal agent reads global < its owner's user layer < its own layer; a group's
// agent reads global < the group's layer < its own layer and has no user layer, because a group
// is no user and the result must not depend on who happens to look at the agent or start it.
//
// Enablement. An agent's own enable/disable decides; without one, a group's agent follows the
// group's entry for the tool ("enabled for the group's agents"); otherwise the tool is off.
// Disabling stores an explicit "off", so an agent can switch off a tool its group enables.
//
// Secrets. Password-typed values are sealed with the master key (secret.Box) before they reach
// the store, are never returned (every layer shown is masked, and only declared keys are
// shown), and the mask `********` sent back keeps the stored secret. Only AgentToolStates opens
// them, for the agent loop.
//
// Writes are whole-call: the settings are validated against the declaration (and, at the agent
// layer, allowed_skills against the visible skills and allowed_target_agents against the
// agents of the same principal) before anything is written; the permission is checked first
// and again inside the store's transaction on the locked owner.
package toolconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/domain/toolpolicy"
	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// Setting keys with rules beyond their type (document 2, "Tool configuration entry").
const (
	KeyAllowedSkills       = "allowed_skills"
	KeyAllowedTargetAgents = "allowed_target_agents"
)

// Store is what the service needs of the store; *store.Store satisfies it.
type Store interface {
	access.Memberships
	UserByID(ctx context.Context, id int64) (*store.User, error)
	GroupByID(ctx context.Context, id int64) (*store.Group, error)
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	ListAgents(ctx context.Context, q store.AgentQuery) ([]store.Agent, error)
	AgentsOfPrincipal(ctx context.Context, principalID int64, ids []int64) ([]int64, error)
	CreateAgent(ctx context.Context, principalID int64, f store.AgentFields) (*store.Agent, error)
	UpdateAgent(ctx context.Context, id, viewer int64, f store.AgentFields, check store.AgentCheck) (*store.Agent, error)
	ToolSettings(ctx context.Context, scope store.ToolScope, class string) (*store.ToolSettings, error)
	EditToolSettings(ctx context.Context, scope store.ToolScope, class string, edit store.SettingsEdit) (*store.ToolSettings, error)
	DeleteToolSettings(ctx context.Context, scope store.ToolScope, class string) error
	GroupTools(ctx context.Context, groupID int64) ([]store.GroupTool, error)
	UpsertGroupTool(ctx context.Context, groupID int64, class string, enabled *bool, check store.RoleCheck, edit store.SettingsEdit) (*store.GroupTool, error)
	RemoveGroupTool(ctx context.Context, groupID int64, class string, check store.RoleCheck) error
	AgentToolConfig(ctx context.Context, agentID int64) (*store.AgentToolConfig, error)
	ConfigureAgentTools(ctx context.Context, agentID int64, check store.AgentCheck, changes []store.AgentToolChange) error
	SetAgentToolEnabled(ctx context.Context, agentID int64, class string, enabled bool, check store.AgentCheck) error
	SetAgentToolOperation(ctx context.Context, agentID int64, class, op string, o store.ToolOperationOverride, check store.AgentCheck) error
	ReplaceAgentToolSettings(ctx context.Context, agentID int64, class string, check store.AgentCheck, edit store.SettingsEdit) (*store.ToolSettings, error)
	DeleteAgentToolSettings(ctx context.Context, agentID int64, class string, check store.AgentCheck) error
}

// Service applies the tool configuration rules on top of the store.
type Service struct {
	store  Store
	reg    *tools.Registry
	skills *skill.Index
	box    *secret.Box
}

// New returns the service. reg holds the registered tools, skills the available skills (for
// recommended skills and allowed_skills), box seals password-typed values at rest.
func New(st Store, reg *tools.Registry, skills *skill.Index, box *secret.Box) *Service {
	return &Service{store: st, reg: reg, skills: skills, box: box}
}

// Layer is one settings layer of one tool as a caller may see it: only declared keys, password
// values masked.
type Layer struct {
	ToolClass string
	Scope     string // store.ToolScopeGlobal, ToolScopeUser, ToolScopeGroup or ToolScopeAgent
	Settings  map[string]any
	UpdatedAt *time.Time // nil when nothing is stored
}

// GroupTool is a group's entry for one tool with its group layer (masked).
type GroupTool struct {
	ToolClass string
	Enabled   bool
	Settings  map[string]any
	UpdatedAt time.Time
}

// Status is the status of one tool for an agent: the discovery payload's entry plus its icon.
type Status struct {
	tools.DiscoveryTool
	Icon string
}

// Operation is one operation of a tool for an agent: the declaration, the agent's override and
// the effective values.
type Operation struct {
	ToolClass                 string
	Name                      string
	Description               string
	ToolEnabled               bool
	Override                  tools.OperationOverride
	EnabledByDefault          bool
	RequiresApprovalByDefault bool
	EffectiveEnabled          bool
	RequiresApproval          bool
}

// spec returns the declaration of a registered class. Errors: ErrNotFound.
func (s *Service) spec(class string) (tools.Spec, error) {
	spec, ok := s.reg.Spec(class)
	if !ok {
		return tools.Spec{}, svcerr.New(svcerr.ErrNotFound, "tool %q is not registered", class)
	}
	return spec, nil
}

// Registered returns every registered tool ordered by class after checking that each
// recommended skill exists. Errors: ErrSkillsMissing naming the first tool and skill that fail
// (an installation problem, answered 500).
func (s *Service) Registered() ([]tools.Spec, error) {
	if err := tools.CheckRecommendedSkills(s.reg, s.skillExists); err != nil {
		return nil, err
	}
	return s.reg.Specs(), nil
}

func (s *Service) skillExists(name string) bool { return s.skills != nil && s.skills.Exists(name) }

// shown turns a stored layer into what a caller may see: declared keys only (a key a newer
// declaration dropped may hold anything), password values masked.
func shown(spec tools.Spec, values map[string]any) map[string]any {
	out := make(map[string]any, len(values))
	for k, v := range values {
		if _, ok := spec.Setting(k); ok || k == toolpolicy.Key {
			out[k] = v
		}
	}
	return tools.MaskSettings(spec, out)
}

func layer(spec tools.Spec, scope string, ts *store.ToolSettings) *Layer {
	return &Layer{ToolClass: spec.Class, Scope: scope, Settings: shown(spec, ts.Values), UpdatedAt: ts.UpdatedAt}
}

// sealWrite returns a copy of a settings write in which every new password value (not unset,
// not the mask) is sealed. The error never contains the value.
func (s *Service) sealWrite(spec tools.Spec, write map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(write))
	for k, v := range write {
		out[k] = v
		st, ok := spec.Setting(k)
		if !ok || st.Type != tools.SettingPassword || tools.IsUnset(v) || v == tools.Mask {
			continue
		}
		plain, ok := v.(string)
		if !ok {
			continue // ValidateSettings refuses it
		}
		if s.box == nil {
			return nil, errors.New("toolconfig: no secret box to seal password settings")
		}
		sealed, err := s.box.Seal([]byte(plain))
		if err != nil {
			return nil, fmt.Errorf("seal setting %s.%s: %w", spec.Class, k, err)
		}
		out[k] = sealed
	}
	return out, nil
}

// mergeEdit validates a "keys sent replace, null or empty deletes, mask keeps" write and returns
// the store edit applying it. Errors: ErrInvalid (unknown key, wrong type).
func (s *Service) mergeEdit(spec tools.Spec, write map[string]any) (store.SettingsEdit, error) {
	if err := tools.ValidateSettings(spec, write); err != nil {
		return nil, err
	}
	sealed, err := s.sealWrite(spec, write)
	if err != nil {
		return nil, err
	}
	return func(stored map[string]any) (map[string]any, error) { return tools.Merge(spec, stored, sealed) }, nil
}

// policyOnlyAtGroupOrAgent refuses an approval policy in a write of the global or a user layer:
// policies are kept with the group's and the agent's tool configuration (issue 26), the
// agent's rules for an operation replacing the group's. Errors: ErrInvalid.
func policyOnlyAtGroupOrAgent(write map[string]any) error {
	if v, ok := write[toolpolicy.Key]; ok && !tools.IsUnset(v) {
		return svcerr.New(svcerr.ErrInvalid, "%s: approval policies are set on a group's tools or an agent's, not at this layer", toolpolicy.Key)
	}
	return nil
}

// ---- global and user layers ----

func requireAdmin(u *store.User) error {
	if !u.IsAdmin() {
		return svcerr.New(svcerr.ErrForbidden, "administrator rights required")
	}
	return nil
}

// GlobalSettings returns the global layer of a tool (administrators only). Errors: ErrForbidden,
// ErrNotFound (unregistered class).
func (s *Service) GlobalSettings(ctx context.Context, u *store.User, class string) (*Layer, error) {
	return s.readLayer(ctx, u, class, store.GlobalToolScope())
}

// PutGlobalSettings writes keys of the global layer (administrators only): each key sent
// replaces its value, null or "" deletes it, the mask keeps a stored secret. Errors:
// ErrForbidden, ErrNotFound, ErrInvalid (unknown key, wrong type; nothing is written).
func (s *Service) PutGlobalSettings(ctx context.Context, u *store.User, class string, write map[string]any) (*Layer, error) {
	return s.writeLayer(ctx, u, class, store.GlobalToolScope(), write)
}

// DeleteGlobalSettings removes the global layer of a tool (administrators only); idempotent.
// Errors: ErrForbidden, ErrNotFound.
func (s *Service) DeleteGlobalSettings(ctx context.Context, u *store.User, class string) error {
	return s.deleteLayer(ctx, u, class, store.GlobalToolScope())
}

// UserSettings returns the caller's own layer of a tool. Errors: ErrNotFound (unregistered
// class).
func (s *Service) UserSettings(ctx context.Context, u *store.User, class string) (*Layer, error) {
	return s.readLayer(ctx, u, class, store.UserToolScope(u.ID))
}

// PutUserSettings writes keys of the caller's own layer, with the rules of PutGlobalSettings.
// Errors: ErrNotFound, ErrInvalid (nothing is written).
func (s *Service) PutUserSettings(ctx context.Context, u *store.User, class string, write map[string]any) (*Layer, error) {
	return s.writeLayer(ctx, u, class, store.UserToolScope(u.ID), write)
}

// DeleteUserSettings removes the caller's own layer of a tool; idempotent. Errors: ErrNotFound.
func (s *Service) DeleteUserSettings(ctx context.Context, u *store.User, class string) error {
	return s.deleteLayer(ctx, u, class, store.UserToolScope(u.ID))
}

// layerSpec checks the caller may use the layer and that class is registered.
func (s *Service) layerSpec(u *store.User, class string, scope store.ToolScope) (tools.Spec, error) {
	if scope.Kind == store.ToolScopeGlobal {
		if err := requireAdmin(u); err != nil {
			return tools.Spec{}, err
		}
	}
	return s.spec(class)
}

func (s *Service) readLayer(ctx context.Context, u *store.User, class string, scope store.ToolScope) (*Layer, error) {
	spec, err := s.layerSpec(u, class, scope)
	if err != nil {
		return nil, err
	}
	ts, err := s.store.ToolSettings(ctx, scope, class)
	if err != nil {
		return nil, err
	}
	return layer(spec, scope.Kind, ts), nil
}

func (s *Service) writeLayer(ctx context.Context, u *store.User, class string, scope store.ToolScope, write map[string]any) (*Layer, error) {
	spec, err := s.layerSpec(u, class, scope)
	if err != nil {
		return nil, err
	}
	if err := policyOnlyAtGroupOrAgent(write); err != nil {
		return nil, err
	}
	edit, err := s.mergeEdit(spec, write)
	if err != nil {
		return nil, err
	}
	ts, err := s.store.EditToolSettings(ctx, scope, class, edit)
	if err != nil {
		return nil, err
	}
	return layer(spec, scope.Kind, ts), nil
}

func (s *Service) deleteLayer(ctx context.Context, u *store.User, class string, scope store.ToolScope) error {
	if _, err := s.layerSpec(u, class, scope); err != nil {
		return err
	}
	return s.store.DeleteToolSettings(ctx, scope, class)
}

// ---- group tools ----

// group loads a group the caller may see (members and administrators) and the caller's scope.
// Errors: ErrNotFound (absent or invisible).
func (s *Service) group(ctx context.Context, u *store.User, id int64) (*access.Scope, *store.Group, error) {
	g, err := s.store.GroupByID(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, nil, err
	}
	if err := sc.See(g.PrincipalID, "group"); err != nil {
		return nil, nil, err
	}
	return sc, g, nil
}

// managedGroup is group plus the manage right (owners, admins, administrators). Errors:
// ErrNotFound, ErrForbidden (a plain member).
func (s *Service) managedGroup(ctx context.Context, u *store.User, id int64) (*access.Scope, error) {
	sc, g, err := s.group(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if err := sc.Manage(g.PrincipalID, "this group's tools"); err != nil {
		return nil, err
	}
	return sc, nil
}

// groupManager re-checks the manage right on the roles read under the group's lock.
func groupManager(sc *access.Scope) store.RoleCheck {
	return func(roles map[int64]string) error {
		if sc.Admin {
			return nil
		}
		switch roles[sc.UserID] {
		case store.GroupRoleOwner, store.GroupRoleAdmin:
			return nil
		case "":
			return svcerr.New(svcerr.ErrNotFound, "group not found")
		}
		return svcerr.New(svcerr.ErrForbidden, "you may not manage this group's tools")
	}
}

// GroupTools lists the group's tool entries by class (members and administrators), each with
// its group layer masked. Entries of classes no longer registered are left out: without a
// declaration nothing says which values are secrets. Errors: ErrNotFound.
func (s *Service) GroupTools(ctx context.Context, u *store.User, groupID int64) ([]GroupTool, error) {
	if _, _, err := s.group(ctx, u, groupID); err != nil {
		return nil, err
	}
	rows, err := s.store.GroupTools(ctx, groupID)
	if err != nil {
		return nil, err
	}
	out := make([]GroupTool, 0, len(rows))
	for i := range rows {
		spec, ok := s.reg.Spec(rows[i].ToolClass)
		if !ok {
			continue
		}
		out = append(out, groupTool(spec, &rows[i]))
	}
	return out, nil
}

func groupTool(spec tools.Spec, gt *store.GroupTool) GroupTool {
	return GroupTool{ToolClass: gt.ToolClass, Enabled: gt.Enabled, Settings: shown(spec, gt.Settings), UpdatedAt: gt.UpdatedAt}
}

// UpsertGroupTool creates or updates the group's entry for a registered class (owners, admins,
// administrators). enabled nil keeps the current value (true for a new entry); settings, when
// not nil, is a write with the rules of PutGlobalSettings. Errors: ErrNotFound (group or
// unregistered class), ErrForbidden, ErrInvalid (unknown key, wrong type; nothing is written).
func (s *Service) UpsertGroupTool(ctx context.Context, u *store.User, groupID int64, class string, enabled *bool, settings map[string]any) (*GroupTool, error) {
	sc, err := s.managedGroup(ctx, u, groupID)
	if err != nil {
		return nil, err
	}
	spec, err := s.spec(class)
	if err != nil {
		return nil, err
	}
	var edit store.SettingsEdit
	if settings != nil {
		if edit, err = s.mergeEdit(spec, settings); err != nil {
			return nil, err
		}
	}
	gt, err := s.store.UpsertGroupTool(ctx, groupID, class, enabled, groupManager(sc), edit)
	if err != nil {
		return nil, err
	}
	out := groupTool(spec, gt)
	return &out, nil
}

// RemoveGroupTool deletes the group's entry for a class and its group layer (owners, admins,
// administrators). Errors: ErrNotFound (group, or no entry for the class), ErrForbidden.
func (s *Service) RemoveGroupTool(ctx context.Context, u *store.User, groupID int64, class string) error {
	sc, err := s.managedGroup(ctx, u, groupID)
	if err != nil {
		return err
	}
	return s.store.RemoveGroupTool(ctx, groupID, class, groupManager(sc))
}

// ---- agent tools ----

// agentFor loads the agent id for u: visible (ErrNotFound otherwise) and, with manage, also
// manageable (ErrForbidden when visible only).
func (s *Service) agentFor(ctx context.Context, u *store.User, id string, manage bool) (*store.Agent, *access.Scope, error) {
	aid, err := agent.ParseID(id)
	if err != nil {
		return nil, nil, err
	}
	a, err := s.store.Agent(ctx, aid, u.ID)
	if err != nil {
		return nil, nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, nil, err
	}
	if manage {
		err = sc.Manage(a.PrincipalID, "agent")
	} else {
		err = sc.See(a.PrincipalID, "agent")
	}
	if err != nil {
		return nil, nil, err
	}
	return a, sc, nil
}

// agentManager re-checks the manage right on the locked agent and, when principal is not 0,
// that the agent still belongs to it (the checks of the write were made against that owner).
func agentManager(sc *access.Scope, principal int64) store.AgentCheck {
	return func(a *store.Agent) error {
		if err := sc.Manage(a.PrincipalID, "agent"); err != nil {
			return err
		}
		if principal != 0 && a.PrincipalID != principal {
			return svcerr.New(svcerr.ErrInvalidState, "the agent changed owner during the request; try again")
		}
		return nil
	}
}

// state computes the ToolState of one class from an agent's stored configuration: layers are
// global, the owner user's, the owning group's and the agent's (absent ones empty).
func state(c *store.AgentToolConfig, class string) tools.ToolState {
	st := tools.ToolState{Overrides: map[string]tools.OperationOverride{}}
	if on, ok := c.Enabled[class]; ok {
		st.Enabled = on
	} else {
		st.Enabled = c.GroupEnabled[class]
	}
	for _, l := range []map[string]*store.ToolSettings{c.Global, c.User, c.Group, c.Agent} {
		var vals map[string]any
		if ts := l[class]; ts != nil {
			vals = ts.Values
		}
		st.Layers = append(st.Layers, vals)
	}
	for op, o := range c.Operations[class] {
		st.Overrides[op] = tools.OperationOverride{Enabled: o.Enabled, AutoApprove: o.AutoApprove, ApprovalTimeoutSeconds: o.ApprovalTimeoutSeconds}
	}
	return st
}

func status(spec tools.Spec, st tools.ToolState) Status {
	return Status{DiscoveryTool: tools.NewDiscoveryTool(spec, st), Icon: tools.Icon(spec, "")}
}

// Statuses returns the status of every registered tool for the agent, by class (anyone who sees
// the agent). Errors: ErrNotFound "agent not found".
func (s *Service) Statuses(ctx context.Context, u *store.User, agentID string) ([]Status, error) {
	a, _, err := s.agentFor(ctx, u, agentID, false)
	if err != nil {
		return nil, err
	}
	c, err := s.store.AgentToolConfig(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	specs := s.reg.Specs()
	out := make([]Status, 0, len(specs))
	for _, spec := range specs {
		out = append(out, status(spec, state(c, spec.Class)))
	}
	return out, nil
}

// Status returns the status of one tool for the agent (anyone who sees the agent). Errors:
// ErrNotFound (agent, unregistered class).
func (s *Service) Status(ctx context.Context, u *store.User, agentID, class string) (*Status, error) {
	spec, err := s.spec(class)
	if err != nil {
		return nil, err
	}
	a, _, err := s.agentFor(ctx, u, agentID, false)
	if err != nil {
		return nil, err
	}
	return s.statusOf(ctx, a.ID, spec)
}

func (s *Service) statusOf(ctx context.Context, agentID int64, spec tools.Spec) (*Status, error) {
	c, err := s.store.AgentToolConfig(ctx, agentID)
	if err != nil {
		return nil, err
	}
	st := status(spec, state(c, spec.Class))
	return &st, nil
}

// Enable turns the tool on for the agent (manage right); idempotent. A tool whose required
// settings are missing is enabled all the same (the status shows them). Errors: ErrNotFound
// (agent, unregistered class), ErrForbidden.
func (s *Service) Enable(ctx context.Context, u *store.User, agentID, class string) (*Status, error) {
	return s.setEnabled(ctx, u, agentID, class, true)
}

// Disable turns the tool off for the agent (manage right); idempotent. Operation overrides and
// agent-level settings are kept. Errors: ErrNotFound (agent, unregistered class), ErrForbidden.
func (s *Service) Disable(ctx context.Context, u *store.User, agentID, class string) error {
	_, err := s.setEnabled(ctx, u, agentID, class, false)
	return err
}

func (s *Service) setEnabled(ctx context.Context, u *store.User, agentID, class string, on bool) (*Status, error) {
	spec, err := s.spec(class)
	if err != nil {
		return nil, err
	}
	a, sc, err := s.agentFor(ctx, u, agentID, true)
	if err != nil {
		return nil, err
	}
	if err := s.store.SetAgentToolEnabled(ctx, a.ID, class, on, agentManager(sc, 0)); err != nil {
		return nil, err
	}
	if !on {
		return nil, nil
	}
	return s.statusOf(ctx, a.ID, spec)
}

func operation(spec tools.Spec, op tools.Operation, st tools.ToolState) Operation {
	o := st.Overrides[op.Name]
	enabled, approval := o.Effective(op)
	return Operation{
		ToolClass: spec.Class, Name: op.Name, Description: op.Description, ToolEnabled: st.Enabled, Override: o,
		EnabledByDefault: op.EnabledByDefault, RequiresApprovalByDefault: op.RequiresApprovalByDefault,
		EffectiveEnabled: enabled, RequiresApproval: approval,
	}
}

// Operations lists every operation of every registered tool for the agent, by class then
// declaration order (anyone who sees the agent). Errors: ErrNotFound "agent not found".
func (s *Service) Operations(ctx context.Context, u *store.User, agentID string) ([]Operation, error) {
	a, _, err := s.agentFor(ctx, u, agentID, false)
	if err != nil {
		return nil, err
	}
	c, err := s.store.AgentToolConfig(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	var out []Operation
	for _, spec := range s.reg.Specs() {
		st := state(c, spec.Class)
		for _, op := range spec.Operations {
			out = append(out, operation(spec, op, st))
		}
	}
	if out == nil {
		out = []Operation{}
	}
	return out, nil
}

// specOp returns the declaration of a registered class and one of its operations. Errors:
// ErrNotFound.
func (s *Service) specOp(class, name string) (tools.Spec, tools.Operation, error) {
	spec, err := s.spec(class)
	if err != nil {
		return tools.Spec{}, tools.Operation{}, err
	}
	op, ok := spec.Operation(name)
	if !ok {
		return tools.Spec{}, tools.Operation{}, svcerr.New(svcerr.ErrNotFound, "tool %s has no operation %q", class, name)
	}
	return spec, op, nil
}

// Operation returns one operation with the agent's override (anyone who sees the agent).
// Errors: ErrNotFound (agent, unregistered class, undeclared operation).
func (s *Service) Operation(ctx context.Context, u *store.User, agentID, class, name string) (*Operation, error) {
	spec, op, err := s.specOp(class, name)
	if err != nil {
		return nil, err
	}
	a, _, err := s.agentFor(ctx, u, agentID, false)
	if err != nil {
		return nil, err
	}
	return s.operationOf(ctx, a.ID, spec, op)
}

func (s *Service) operationOf(ctx context.Context, agentID int64, spec tools.Spec, op tools.Operation) (*Operation, error) {
	c, err := s.store.AgentToolConfig(ctx, agentID)
	if err != nil {
		return nil, err
	}
	out := operation(spec, op, state(c, spec.Class))
	return &out, nil
}

// SetOperation stores the agent's override of one operation (manage right): each field set
// overrides the declared default (the agent's approval timeout for ApprovalTimeoutSeconds), nil
// removes that override. Errors: ErrNotFound (agent, unregistered class, undeclared operation),
// ErrForbidden, ErrInvalid (a timeout outside 0..store.MaxApprovalTimeoutSeconds).
func (s *Service) SetOperation(ctx context.Context, u *store.User, agentID, class, name string, o tools.OperationOverride) (*Operation, error) {
	spec, op, err := s.specOp(class, name)
	if err != nil {
		return nil, err
	}
	if t := o.ApprovalTimeoutSeconds; t != nil && (*t < 0 || *t > store.MaxApprovalTimeoutSeconds) {
		return nil, svcerr.New(svcerr.ErrInvalid, "approval_timeout_seconds must be from 0 to %d", store.MaxApprovalTimeoutSeconds)
	}
	a, sc, err := s.agentFor(ctx, u, agentID, true)
	if err != nil {
		return nil, err
	}
	ov := store.ToolOperationOverride{Enabled: o.Enabled, AutoApprove: o.AutoApprove, ApprovalTimeoutSeconds: o.ApprovalTimeoutSeconds}
	if err := s.store.SetAgentToolOperation(ctx, a.ID, class, name, ov, agentManager(sc, 0)); err != nil {
		return nil, err
	}
	return s.operationOf(ctx, a.ID, spec, op)
}

// Override returns the agent layer of a tool's settings, masked (manage right: the layer may
// name what the agent is allowed to reach). Errors: ErrNotFound (agent, unregistered class),
// ErrForbidden.
func (s *Service) Override(ctx context.Context, u *store.User, agentID, class string) (*Layer, error) {
	spec, err := s.spec(class)
	if err != nil {
		return nil, err
	}
	a, _, err := s.agentFor(ctx, u, agentID, true)
	if err != nil {
		return nil, err
	}
	ts, err := s.store.ToolSettings(ctx, store.AgentToolScope(a.ID), class)
	if err != nil {
		return nil, err
	}
	return layer(spec, store.ToolScopeAgent, ts), nil
}

// ReplaceOverride replaces the agent layer of a tool's settings (manage right): keys left out,
// null or "" are removed, the mask keeps a stored secret. The call is refused as a whole
// (ErrInvalid, nothing written) for an undeclared key, a wrong type, an allowed_skills name that
// is not a visible skill, or an allowed_target_agents id that is not an agent of the same
// principal. Errors: ErrNotFound (agent, unregistered class), ErrForbidden, ErrInvalid,
// ErrInvalidState (the agent changed owner meanwhile).
func (s *Service) ReplaceOverride(ctx context.Context, u *store.User, agentID, class string, next map[string]any) (*Layer, error) {
	spec, err := s.spec(class)
	if err != nil {
		return nil, err
	}
	a, sc, err := s.agentFor(ctx, u, agentID, true)
	if err != nil {
		return nil, err
	}
	if err := tools.ValidateSettings(spec, next); err != nil {
		return nil, err
	}
	if err := s.checkAgentValues(ctx, spec, a, next); err != nil {
		return nil, err
	}
	sealed, err := s.sealWrite(spec, next)
	if err != nil {
		return nil, err
	}
	edit := func(stored map[string]any) (map[string]any, error) { return tools.Replace(spec, stored, sealed) }
	ts, err := s.store.ReplaceAgentToolSettings(ctx, a.ID, class, agentManager(sc, a.PrincipalID), edit)
	if err != nil {
		return nil, err
	}
	return layer(spec, store.ToolScopeAgent, ts), nil
}

// checkAgentValues applies the rules of allowed_skills and allowed_target_agents to a validated
// agent-layer write.
func (s *Service) checkAgentValues(ctx context.Context, spec tools.Spec, a *store.Agent, values map[string]any) error {
	if st, ok := spec.Setting(KeyAllowedSkills); ok && st.Type == tools.SettingStringList {
		for _, v := range listOf(values[KeyAllowedSkills]) {
			name, _ := v.(string)
			if !s.skillExists(name) {
				return svcerr.New(svcerr.ErrInvalid, "%s: %q is not a skill visible to this agent", KeyAllowedSkills, name)
			}
		}
	}
	if st, ok := spec.Setting(KeyAllowedTargetAgents); ok && st.Type == tools.SettingIntegerList {
		var ids []int64
		for _, v := range listOf(values[KeyAllowedTargetAgents]) {
			id, ok := toInt64(v)
			if !ok || id < 1 {
				return svcerr.New(svcerr.ErrInvalid, "%s: %v is not an agent of the same owner", KeyAllowedTargetAgents, v)
			}
			ids = append(ids, id)
		}
		if len(ids) > 0 {
			found, err := s.store.AgentsOfPrincipal(ctx, a.PrincipalID, ids)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if _, ok := slices.BinarySearch(found, id); !ok {
					return svcerr.New(svcerr.ErrInvalid, "%s: %d is not an agent of the same owner", KeyAllowedTargetAgents, id)
				}
			}
		}
	}
	return nil
}

// DeleteOverride removes the agent layer of a tool's settings (manage right); enablement and
// operation overrides stay. Idempotent. Errors: ErrNotFound (agent, unregistered class),
// ErrForbidden.
func (s *Service) DeleteOverride(ctx context.Context, u *store.User, agentID, class string) error {
	if _, err := s.spec(class); err != nil {
		return err
	}
	a, sc, err := s.agentFor(ctx, u, agentID, true)
	if err != nil {
		return err
	}
	return s.store.DeleteAgentToolSettings(ctx, a.ID, class, agentManager(sc, 0))
}

// AgentToolStates returns the configuration of every registered tool for the agent, by class,
// for the agent loop and the discovery payload (tools.NewDiscovery): enablement, the settings
// layers global < owner user < owning group < agent, and the operation overrides. There is no
// permission check: the caller acts for the agent's owner.
//
// Password values in the layers are OPENED (plaintext): the result must never be serialised
// into a response, a log or a transcript. A sealed value that cannot be opened (the master key
// changed) is dropped, so the setting reads as unset. Errors: ErrNotFound "agent not found".
func (s *Service) AgentToolStates(ctx context.Context, agentID int64) (map[string]tools.ToolState, error) {
	c, err := s.store.AgentToolConfig(ctx, agentID)
	if err != nil {
		return nil, err
	}
	specs := s.reg.Specs()
	out := make(map[string]tools.ToolState, len(specs))
	for _, spec := range specs {
		st := state(c, spec.Class)
		keys := tools.PasswordKeys(spec)
		for i, l := range st.Layers {
			st.Layers[i] = s.open(keys, l)
		}
		out[spec.Class] = st
	}
	return out, nil
}

// open returns a copy of layer with the password values of keys opened.
func (s *Service) open(keys []string, layer map[string]any) map[string]any {
	if len(layer) == 0 || len(keys) == 0 {
		return layer
	}
	out := make(map[string]any, len(layer))
	for k, v := range layer {
		out[k] = v
	}
	for _, k := range keys {
		sealed, ok := out[k].(string)
		if !ok || sealed == "" {
			continue
		}
		var plain []byte
		var err error
		if s.box != nil {
			plain, err = s.box.Open(sealed)
		}
		if s.box == nil || err != nil {
			delete(out, k)
			continue
		}
		out[k] = string(plain)
	}
	return out
}
