package toolconfig

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/domain/toolpolicy"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// SkillToolClass is the tool whose allowed_skills setting is the agent's skill allow list.
const SkillToolClass = "core.SkillTool"

// ToolEntry is one parsed entry of configure_tools (document 2, "Tool configuration entry").
// Nil fields change nothing.
type ToolEntry struct {
	ToolClass string
	Enabled   *bool
	// Settings holds the keys to write at the agent level (nil: none); null or "" deletes one.
	Settings   map[string]any
	Operations []OperationEntry
}

// OperationEntry is one named operation of a ToolEntry: naming it turns it on unless Enabled is
// false; AutoApprove nil keeps the stored override.
type OperationEntry struct {
	Name        string
	Enabled     *bool
	AutoApprove *bool
}

// Manifest is the slim per-tool manifest configure_tools returns.
type Manifest struct {
	ToolClass  string              `json:"tool_class"`
	Icon       string              `json:"icon"`
	Enabled    bool                `json:"enabled"`
	Operations []ManifestOperation `json:"operations"`
}

// ManifestOperation is one operation of a Manifest.
type ManifestOperation struct {
	Name             string `json:"name"`
	Enabled          bool   `json:"enabled"`
	RequiresApproval bool   `json:"requires_approval"`
}

func invalid(format string, args ...any) error { return svcerr.New(svcerr.ErrInvalid, format, args...) }

// ParseToolEntries turns the `tools` argument of configure_tools (decoded JSON) into entries.
// Wrong types, unknown keys and duplicate classes or operation names are refused (ErrInvalid),
// as is a tool-level enabled that is neither a boolean, null nor a blank string (rule 5: a blank
// string counts as absent).
func ParseToolEntries(raw any) ([]ToolEntry, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, invalid("tools must be a list of tool entries")
	}
	seen := map[string]bool{}
	out := make([]ToolEntry, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, invalid("tools[%d] must be an object", i)
		}
		var e ToolEntry
		for k, v := range m {
			var err error
			switch k {
			case "tool_class":
				s, ok := v.(string)
				if !ok || s == "" {
					err = invalid("tools[%d].tool_class must be a non-empty string", i)
				}
				e.ToolClass = s
			case "enabled":
				e.Enabled, err = triState(v, fmt.Sprintf("tools[%d].enabled", i))
			case "settings":
				if v == nil {
					continue
				}
				s, ok := v.(map[string]any)
				if !ok {
					err = invalid("tools[%d].settings must be an object", i)
				}
				e.Settings = s
			case "operations":
				e.Operations, err = parseOperations(v, i)
			default:
				err = invalid("tools[%d] has unknown key %q", i, k)
			}
			if err != nil {
				return nil, err
			}
		}
		if e.ToolClass == "" {
			return nil, invalid("tools[%d].tool_class is required", i)
		}
		if seen[e.ToolClass] {
			return nil, invalid("tool %s appears twice", e.ToolClass)
		}
		seen[e.ToolClass] = true
		out = append(out, e)
	}
	return out, nil
}

// triState reads a tool-level enabled: bool, or absent for null and a blank string.
func triState(v any, what string) (*bool, error) {
	switch b := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return &b, nil
	case string:
		if strings.TrimSpace(b) == "" {
			return nil, nil
		}
	}
	return nil, invalid("%s must be true, false or left out", what)
}

func optBool(v any, what string) (*bool, error) {
	switch b := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return &b, nil
	}
	return nil, invalid("%s must be a boolean", what)
}

func parseOperations(v any, i int) ([]OperationEntry, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, invalid("tools[%d].operations must be a list", i)
	}
	seen := map[string]bool{}
	out := make([]OperationEntry, 0, len(list))
	for j, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, invalid("tools[%d].operations[%d] must be an object", i, j)
		}
		var o OperationEntry
		for k, v := range m {
			var err error
			what := fmt.Sprintf("tools[%d].operations[%d].%s", i, j, k)
			switch k {
			case "name":
				s, ok := v.(string)
				if !ok || s == "" {
					err = invalid("%s must be a non-empty string", what)
				}
				o.Name = s
			case "enabled":
				o.Enabled, err = optBool(v, what)
			case "auto_approve":
				o.AutoApprove, err = optBool(v, what)
			default:
				err = invalid("tools[%d].operations[%d] has unknown key %q", i, j, k)
			}
			if err != nil {
				return nil, err
			}
		}
		if o.Name == "" {
			return nil, invalid("tools[%d].operations[%d].name is required", i, j)
		}
		if seen[o.Name] {
			return nil, invalid("tools[%d]: operation %s appears twice", i, o.Name)
		}
		seen[o.Name] = true
		out = append(out, o)
	}
	return out, nil
}

// managedByAgent loads target for the calling agent: the calling agent itself or an agent of
// the same principal (the caller acts for the agent's owner). Errors: ErrNotFound for any other
// agent (whether it exists is not revealed).
func (s *Service) managedByAgent(ctx context.Context, callerID, targetID int64) (*store.Agent, error) {
	caller, err := s.store.Agent(ctx, callerID, 0)
	if err != nil {
		return nil, err
	}
	if targetID == 0 || targetID == callerID {
		return caller, nil
	}
	target, err := s.store.Agent(ctx, targetID, 0)
	if errors.Is(err, svcerr.ErrNotFound) || (err == nil && target.PrincipalID != caller.PrincipalID) {
		return nil, svcerr.New(svcerr.ErrNotFound, "agent %d not found among the agents of this agent's owner", targetID)
	}
	return target, err
}

// changeableByAgent is managedByAgent for an operation that changes the target: the user the
// task runs for (userID) must also be able to change it through the API, that is hold the
// manage role on its principal (access rules), so a group member without that role cannot
// rewrite a group agent through a model. Errors: those of managedByAgent, ErrForbidden.
func (s *Service) changeableByAgent(ctx context.Context, callerID, userID, targetID int64) (*store.Agent, error) {
	a, err := s.managedByAgent(ctx, callerID, targetID)
	if err != nil {
		return nil, err
	}
	if err := s.userManages(ctx, userID, a.PrincipalID); err != nil {
		return nil, err
	}
	return a, nil
}

// userManages returns ErrForbidden unless user userID may manage resources of principal p
// (access.Scope.CanManage); a user who no longer exists manages nothing.
func (s *Service) userManages(ctx context.Context, userID, p int64) error {
	u, err := s.store.UserByID(ctx, userID)
	if errors.Is(err, svcerr.ErrNotFound) {
		return svcerr.New(svcerr.ErrForbidden, "the user this task runs for no longer exists; agents cannot be changed")
	}
	if err != nil {
		return err
	}
	scope, err := access.For(ctx, s.store, u)
	if err != nil {
		return err
	}
	if !scope.CanManage(p) {
		return svcerr.New(svcerr.ErrForbidden,
			"the user this task runs for may not change this owner's agents (it needs the owner or admin role of the group); ask them to make the change")
	}
	return nil
}

// visibleSkills is every skill of the index, by name: what an agent can see.
func (s *Service) visibleSkills() []tools.SkillSummary {
	var all []skill.Skill
	if s.skills != nil {
		all = s.skills.All()
	}
	out := make([]tools.SkillSummary, 0, len(all))
	for _, sk := range all {
		out = append(out, tools.SkillSummary{Name: sk.Name, Description: sk.Description})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AgentDiscovery returns the get_available_tools payload (version 2) of agent targetID as the
// agent callerID sees it (targetID 0 is the caller itself): every registered tool with its state
// for the target, and the skills it can see and load. No settings values are included.
// Errors: ErrNotFound (the caller is gone, or the target is not an agent of its owner).
func (s *Service) AgentDiscovery(ctx context.Context, callerID, targetID int64) (tools.Discovery, error) {
	a, err := s.managedByAgent(ctx, callerID, targetID)
	if err != nil {
		return tools.Discovery{}, err
	}
	c, err := s.store.AgentToolConfig(ctx, a.ID)
	if err != nil {
		return tools.Discovery{}, err
	}
	states := make(map[string]tools.ToolState)
	for _, spec := range s.reg.Specs() {
		states[spec.Class] = state(c, spec.Class)
	}
	var allowed []string
	if spec, ok := s.reg.Spec(SkillToolClass); ok {
		eff, _ := tools.Cascade(spec, states[SkillToolClass].Layers...)
		for _, v := range listOf(eff[KeyAllowedSkills]) {
			if name, ok := v.(string); ok {
				allowed = append(allowed, name)
			}
		}
	}
	return tools.NewDiscovery(s.reg, states, allowed, s.visibleSkills()), nil
}

// ConfigureAgentTools applies configure_tools entries to agent targetID for the agent callerID
// (the calling agent itself or an agent of the same principal), when the user userID the task
// runs for may manage the target (ErrForbidden otherwise). Every entry is validated before
// anything is written and all of them are applied in one transaction: an unregistered class, an
// undeclared operation, an unknown setting key, a password-typed setting, a wrong value type, an
// allowed_skills name outside skills.visible or an allowed_target_agents id that is no agent of
// the same principal refuses the whole call. It returns the slim manifest of each configured
// tool, in entry order. Errors: ErrNotFound (caller or target), ErrInvalid, ErrInvalidState (the
// target changed owner meanwhile).
func (s *Service) ConfigureAgentTools(ctx context.Context, callerID, userID, targetID int64, entries []ToolEntry) ([]Manifest, error) {
	a, err := s.changeableByAgent(ctx, callerID, userID, targetID)
	if err != nil {
		return nil, err
	}
	specs := make([]tools.Spec, 0, len(entries))
	changes := make([]store.AgentToolChange, 0, len(entries))
	for _, e := range entries {
		spec, ok := s.reg.Spec(e.ToolClass)
		if !ok {
			return nil, invalid("tool %q is not registered (see get_available_tools)", e.ToolClass)
		}
		ch := store.AgentToolChange{ToolClass: spec.Class, Enabled: e.Enabled}
		if e.Settings != nil {
			if _, ok := e.Settings[toolpolicy.Key]; ok {
				return nil, invalid("tool %s: %s cannot be set by an agent (an administrator sets it)", spec.Class, toolpolicy.Key)
			}
			for k := range e.Settings {
				if st, ok := spec.Setting(k); ok && st.Type == tools.SettingPassword {
					return nil, invalid("tool %s: setting %q is a password and cannot be set by an agent", spec.Class, k)
				}
			}
			if err := tools.ValidateSettings(spec, e.Settings); err != nil {
				return nil, err
			}
			if err := s.checkAgentValues(ctx, spec, a, e.Settings); err != nil {
				return nil, err
			}
			write := e.Settings
			ch.Settings = func(stored map[string]any) (map[string]any, error) { return tools.Merge(spec, stored, write) }
		}
		for _, o := range e.Operations {
			if _, ok := spec.Operation(o.Name); !ok {
				return nil, invalid("tool %s has no operation %q", spec.Class, o.Name)
			}
			on := true
			if o.Enabled != nil {
				on = *o.Enabled
			}
			ch.Operations = append(ch.Operations, store.AgentOperationChange{Name: o.Name, Enabled: &on, AutoApprove: o.AutoApprove})
		}
		specs = append(specs, spec)
		changes = append(changes, ch)
	}
	check := sameOwner(a.PrincipalID)
	if err := s.store.ConfigureAgentTools(ctx, a.ID, check, changes); err != nil {
		return nil, err
	}
	c, err := s.store.AgentToolConfig(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	out := make([]Manifest, 0, len(specs))
	for _, spec := range specs {
		st := state(c, spec.Class)
		m := Manifest{ToolClass: spec.Class, Icon: tools.Icon(spec, ""), Enabled: st.Enabled, Operations: make([]ManifestOperation, 0, len(spec.Operations))}
		for _, op := range spec.Operations {
			on, approval := st.Overrides[op.Name].Effective(op)
			m.Operations = append(m.Operations, ManifestOperation{Name: op.Name, Enabled: on, RequiresApproval: approval})
		}
		out = append(out, m)
	}
	return out, nil
}

// ManagedAgent returns agent targetID for the agent callerID (targetID 0 is the caller itself):
// the caller or an agent of the same principal. It backs read_agent and read_notes. Errors:
// ErrNotFound (the caller is gone, or the target is not an agent of its owner).
func (s *Service) ManagedAgent(ctx context.Context, callerID, targetID int64) (*store.Agent, error) {
	return s.managedByAgent(ctx, callerID, targetID)
}

// WriteAgentNotes replaces the notes of agent targetID for the agent callerID (the caller or an
// agent of the same principal; targetID 0 is the caller) when the user userID the task runs for
// may manage it. Errors: ErrNotFound, ErrForbidden, ErrInvalid (notes over
// limits.AgentNotesLen, agent.CheckFields), ErrInvalidState (the target changed owner
// meanwhile).
func (s *Service) WriteAgentNotes(ctx context.Context, callerID, userID, targetID int64, notes string) (*store.Agent, error) {
	a, err := s.changeableByAgent(ctx, callerID, userID, targetID)
	if err != nil {
		return nil, err
	}
	f := store.AgentFields{Notes: &notes}
	if err := agent.CheckFields(f, false); err != nil {
		return nil, err
	}
	check := sameOwner(a.PrincipalID)
	return s.store.UpdateAgent(ctx, a.ID, 0, f, check)
}

// sameOwner is the check of a write through the agent tool: the agent still has the owner
// whose manage role was checked before the write (ErrInvalidState otherwise).
func sameOwner(principal int64) func(*store.Agent) error {
	return func(locked *store.Agent) error {
		if locked.PrincipalID != principal {
			return svcerr.New(svcerr.ErrInvalidState, "the agent changed owner during the call; try again")
		}
		return nil
	}
}
