package tools

import "slices"

// DiscoveryVersion is the version of the get_available_tools payload.
const DiscoveryVersion = 2

// Discovery is the payload of the `get_available_tools` operation, version 2 (document 2).
type Discovery struct {
	Version int               `json:"version"`
	Count   int               `json:"count"`
	Tools   []DiscoveryTool   `json:"tools"`
	Skills  DiscoverySkillSet `json:"skills"`
}

// DiscoveryTool is one tool of the discovery payload.
type DiscoveryTool struct {
	ToolClass     string  `json:"tool_class"`
	DisplayName   string  `json:"display_name"`
	Description   string  `json:"description"`
	PluginSlug    *string `json:"plugin_slug"` // null for core tools
	Enabled       bool    `json:"enabled"`
	ReadyToEnable bool    `json:"ready_to_enable"`
	// MissingRequired holds setting keys only, never values.
	MissingRequired []string             `json:"missing_required"`
	Operations      []DiscoveryOperation `json:"operations"`
}

// DiscoveryOperation is the effective state of one operation for the agent.
type DiscoveryOperation struct {
	Name             string `json:"name"`
	Description      string `json:"description"`
	Enabled          bool   `json:"enabled"`
	RequiresApproval bool   `json:"requires_approval"`
}

// DiscoverySkillSet is the `skills` object of the discovery payload.
type DiscoverySkillSet struct {
	Allowed []string         `json:"allowed"`
	Visible []DiscoverySkill `json:"visible"`
}

// DiscoverySkill is one visible skill; Active is true when its name is in Allowed.
type DiscoverySkill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Active      bool   `json:"active"`
}

// ToolState is what an agent has configured for one tool: whether it is enabled, the settings
// layers above the tool defaults (global, user, group, agent: lowest first, as Cascade takes
// them), and the agent's operation overrides by operation name.
type ToolState struct {
	Enabled   bool
	Layers    []map[string]any
	Overrides map[string]OperationOverride
}

// OperationOverride is an agent's override of one operation; nil fields inherit the declared
// default.
type OperationOverride struct {
	Enabled *bool
	// AutoApprove true pre-approves calls, false requires confirmation.
	AutoApprove *bool
	// ApprovalTimeoutSeconds, when set, is how long a call held for approval waits for a decision
	// (0: forever) instead of the agent's approval timeout.
	ApprovalTimeoutSeconds *int
}

// Effective returns whether op is enabled and whether its calls need approval once the override
// o is applied to the declared defaults.
func (o OperationOverride) Effective(op Operation) (enabled, requiresApproval bool) {
	enabled, requiresApproval = op.EnabledByDefault, op.RequiresApprovalByDefault
	if o.Enabled != nil {
		enabled = *o.Enabled
	}
	if o.AutoApprove != nil {
		requiresApproval = !*o.AutoApprove
	}
	return enabled, requiresApproval
}

// SkillSummary is a skill as the discovery payload shows it.
type SkillSummary struct {
	Name        string
	Description string
}

// NewDiscovery builds the discovery payload: every registered tool ordered by class, with the
// state states gives for its class (a class absent from states is a disabled tool with nothing
// configured), and the skills: visible are the skills the agent can see, allowedSkills the
// agent's allow list; names in the allow list that are not visible cannot be loaded and are left
// out of skills.allowed. Lists are never null in the JSON.
func NewDiscovery(reg *Registry, states map[string]ToolState, allowedSkills []string, visible []SkillSummary) Discovery {
	specs := reg.Specs()
	d := Discovery{Version: DiscoveryVersion, Count: len(specs), Tools: make([]DiscoveryTool, 0, len(specs))}
	for _, spec := range specs {
		d.Tools = append(d.Tools, NewDiscoveryTool(spec, states[spec.Class]))
	}
	d.Skills = DiscoverySkillSet{Allowed: []string{}, Visible: make([]DiscoverySkill, 0, len(visible))}
	isVisible := map[string]bool{}
	for _, s := range visible {
		isVisible[s.Name] = true
	}
	for _, name := range allowedSkills {
		if isVisible[name] && !slices.Contains(d.Skills.Allowed, name) {
			d.Skills.Allowed = append(d.Skills.Allowed, name)
		}
	}
	for _, s := range visible {
		d.Skills.Visible = append(d.Skills.Visible, DiscoverySkill{
			Name: s.Name, Description: s.Description, Active: slices.Contains(d.Skills.Allowed, s.Name),
		})
	}
	return d
}

// NewDiscoveryTool builds one tool entry of the discovery payload (also the shape of an agent's
// tool status).
func NewDiscoveryTool(spec Spec, st ToolState) DiscoveryTool {
	_, missing := Cascade(spec, st.Layers...)
	t := DiscoveryTool{
		ToolClass:       spec.Class,
		DisplayName:     DisplayName(spec),
		Description:     spec.Description,
		Enabled:         st.Enabled,
		ReadyToEnable:   len(missing) == 0,
		MissingRequired: missing,
		Operations:      make([]DiscoveryOperation, 0, len(spec.Operations)),
	}
	if spec.PluginSlug != "" {
		slug := spec.PluginSlug
		t.PluginSlug = &slug
	}
	for _, op := range spec.Operations {
		enabled, approval := st.Overrides[op.Name].Effective(op)
		t.Operations = append(t.Operations, DiscoveryOperation{
			Name: op.Name, Description: op.Description, Enabled: enabled, RequiresApproval: approval,
		})
	}
	return t
}
