package agenttemplate

import (
	"slices"
	"strings"
)

// ImportPlan is what importing a template writes: one agent and its tool records, to be
// applied in one transaction by the caller.
type ImportPlan struct {
	Agent AgentPlan
	// Metadata is the template's metadata with defaults applied (icon, variant_key); the caller
	// stores its non-empty fields as the agent's metadata keys.
	Metadata Metadata
	// Tools are the records to create: enabled tools of registered classes only.
	Tools []ToolPlan
	// MissingPlugins are required plugins that are not installed (PLUGIN_MISSING).
	MissingPlugins []string
}

// AgentPlan holds the agent's fields with the format's defaults applied.
type AgentPlan struct {
	Name string
	// Description is agent.description, or the template description when that is empty.
	Description       string
	SystemPrompt      string
	Notes             string
	MaxSteps          int
	AllowFollowup     bool
	RetryAfterMinutes int
	MaxRetries        int
	// The compaction settings as written; nil ones take the agent's defaults.
	CompactionEnabled          *bool
	CompactionThresholdPercent *int
	CompactionAnswerReserve    *int
	ToolResultMaxChars         *int
	// Memories become agent-wide memories of the new agent.
	Memories []string
	// The approval settings as written; nil ones take the agent's defaults.
	Approvers              *Approvers
	ApprovalTimeoutSeconds *int
	ApprovalTimeoutAction  *string
}

// ToolPlan is one tool record of an import.
type ToolPlan struct {
	ToolClass string
	// Operations are the overrides of operations the tool declares (unknown ones are skipped);
	// nil pointers inherit the tool's defaults.
	Operations []Operation
	// Settings become agent-level overrides (nil when none survive).
	Settings map[string]any
	// ApprovalPolicy is the tools' approval policy (toolpolicy), stored at the agent layer
	// under toolpolicy.Key; nil when none.
	ApprovalPolicy map[string]any
	// MissingRequired lists required settings that stay unset (TOOL_NEEDS_CONFIGURATION).
	MissingRequired []string
}

// Plan computes what importing t writes, with the import's warnings (the same warnings, in the
// same order, that Validate reports for the document, except NAMESPACE_MISMATCH, which concerns
// scanned files). Call it on a template from Parse; for a template built by hand it reports the
// catalog's errors too (SETTINGS_…) and leaves the offending settings out. A nil catalog keeps
// every tool, operation and setting as written. The findings are never nil (an empty list is
// ready for a JSON response).
func Plan(t *Template, cat Catalog) (ImportPlan, []Finding) {
	var c collector
	d := *t // ApplyDefaults below must not touch the caller's template
	if t.Metadata != nil {
		m := *t.Metadata
		d.Metadata = &m
	}
	d.ApplyDefaults()

	p := ImportPlan{
		Agent: AgentPlan{
			Name:              d.Name,
			Description:       d.Agent.Description,
			SystemPrompt:      d.Agent.SystemPrompt,
			Notes:             d.Agent.Notes,
			MaxSteps:          *d.Agent.MaxSteps,
			AllowFollowup:     *d.Agent.AllowFollowup,
			RetryAfterMinutes: *d.Agent.RetryAfterMinutes,
			MaxRetries:        *d.Agent.MaxRetries,
			Memories:          slices.Clone(d.Agent.Memories),

			CompactionEnabled:          d.Agent.CompactionEnabled,
			CompactionThresholdPercent: d.Agent.CompactionThresholdPercent,
			CompactionAnswerReserve:    d.Agent.CompactionAnswerReserve,
			ToolResultMaxChars:         d.Agent.ToolResultMaxChars,
			ApprovalTimeoutSeconds:     d.Agent.ApprovalTimeoutSeconds,
		},
		Metadata: *d.Metadata,
		Tools:    []ToolPlan{},
	}
	if ap := d.Agent.Approvers; ap != nil {
		p.Agent.Approvers = &Approvers{Owner: ap.Owner, Managers: ap.Managers}
	}
	if d.Agent.ApprovalTimeoutAction != "" {
		p.Agent.ApprovalTimeoutAction = ptr(d.Agent.ApprovalTimeoutAction)
	}
	if p.Agent.Description == "" {
		p.Agent.Description = d.Description
	}
	if strings.TrimSpace(p.Agent.SystemPrompt) == "" {
		c.add(CodeSystemPromptMissing, "/agent/system_prompt", "agent.system_prompt is empty")
	}

	for i, tl := range t.Tools {
		ct := catalogTool{index: i, class: tl.ToolClass, enabled: tl.Enabled, settings: tl.Settings, policy: tl.ApprovalPolicy}
		for j, op := range tl.Operations {
			ct.ops = append(ct.ops, indexedOp{index: j, op: op})
		}
		var tp ToolPlan
		known := true
		if cat != nil {
			tp, known = applyCatalog(ct, cat, &c)
		} else {
			tp = ToolPlan{ToolClass: tl.ToolClass, Operations: slices.Clone(tl.Operations), Settings: keptSettings(tl.Settings), ApprovalPolicy: tl.ApprovalPolicy}
			if tp.Operations == nil {
				tp.Operations = []Operation{}
			}
		}
		if known && tl.Enabled {
			p.Tools = append(p.Tools, tp)
		}
	}

	for k, pkg := range t.RequiredPlugins {
		if cat != nil && !cat.PluginInstalled(pkg) {
			c.add(CodePluginMissing, pointer("/required_plugins", k),
				"required plugin %s is not installed (plugins are never installed automatically)", quote(pkg))
			p.MissingPlugins = append(p.MissingPlugins, pkg)
		}
	}
	if cat := d.Metadata.Category; cat != "" && !slices.Contains(Categories, cat) {
		c.add(CodeMetadataCategoryUnknown, "/metadata/category", "unknown category %s (known: %s)", quote(cat), strings.Join(Categories, ", "))
	}
	return p, append(append([]Finding{}, c.errs...), c.warns...)
}

// keptSettings drops null and "" values (they mean "no agent-level value").
func keptSettings(in map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		if s, ok := v.(string); v == nil || (ok && s == "") {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
