package agenttemplate

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

// ExportInput is an agent as the export needs it, in plain values.
type ExportInput struct {
	// SchemaURL is written as $schema ({schema_url} of this deployment); empty leaves it out.
	SchemaURL         string
	Name              string
	Description       string
	SystemPrompt      string
	Notes             string
	MaxSteps          int
	AllowFollowup     bool
	RetryAfterMinutes int
	MaxRetries        int
	// Compaction are the agent's compaction settings (nil: the defaults); those at their
	// defaults are left out.
	Compaction *store.AgentCompaction
	// Metadata is the agent's free-form metadata; the recognised keys with valid values
	// (category, icon, archetype, variant_key, palette_key) are carried over.
	Metadata map[string]any
	Tools    []ExportTool
	// Memories are the agent-wide memories to carry, oldest first; blank ones are left out,
	// long ones cut, and at most limits.TemplateMemories kept.
	Memories []string
	// Approvers, ApprovalTimeoutSeconds and ApprovalTimeoutAction are the agent's approval
	// settings; the defaults (the owner decides, no timeout) and named users are left out.
	Approvers              store.Approvers
	ApprovalTimeoutSeconds int
	ApprovalTimeoutAction  string
}

// ExportTool is one tool record of the agent.
type ExportTool struct {
	ToolClass  string
	Enabled    bool
	Operations []Operation
	// Settings are this agent's own override values (never inherited ones), or nil to leave
	// settings out. Pass non-secret values only; with a catalog, undeclared and password-typed
	// keys are dropped as well.
	Settings map[string]any
	// ApprovalPolicy is the agent layer's approval policy of the tool (nil: none).
	ApprovalPolicy map[string]any
}

// Export builds the template of an agent, such that marshalling it (JSON or YAML) and importing
// it gives back the same template: the id is Slug(name), the version ExportVersion, texts are
// cut to the format's lengths, numbers clamped to its ranges, disabled tools and duplicate or
// unusable tool classes and operation names are left out, null settings are dropped and setting
// values are normalised to the plain types Parse produces. cat may be nil.
func Export(in ExportInput, cat Catalog) *Template {
	name := truncate(clean(in.Name), limits.AgentNameLen)
	if name == "" {
		name = "Agent"
	}
	t := &Template{
		Schema:      truncate(clean(in.SchemaURL), limits.URLLen),
		ID:          Slug(name),
		Name:        name,
		Description: truncate(clean(in.Description), limits.TemplateDescriptionLen),
		Version:     ExportVersion,
		Agent: Agent{
			Description:       truncate(clean(in.Description), limits.AgentDescriptionLen),
			SystemPrompt:      clean(in.SystemPrompt),
			Notes:             truncate(clean(in.Notes), limits.AgentNotesLen),
			MaxSteps:          ptr(min(max(in.MaxSteps, limits.MinSteps), limits.MaxSteps)),
			AllowFollowup:     ptr(in.AllowFollowup),
			RetryAfterMinutes: ptr(min(max(in.RetryAfterMinutes, 0), maxCount)),
			MaxRetries:        ptr(min(max(in.MaxRetries, 0), maxCount)),
		},
		Metadata: exportMetadata(in.Metadata),
	}
	if in.Compaction != nil {
		exportCompaction(&t.Agent, *in.Compaction)
	}
	exportApprovals(&t.Agent, in)
	for _, m := range in.Memories {
		if m = truncate(strings.TrimSpace(clean(m)), limits.MemoryTextLen); m != "" && len(t.Agent.Memories) < limits.TemplateMemories {
			t.Agent.Memories = append(t.Agent.Memories, m)
		}
	}
	seen := map[string]bool{}
	for _, et := range in.Tools {
		class := clean(et.ToolClass)
		if !et.Enabled || seen[class] || class == "" || runes(class) > limits.ToolClassLen {
			continue
		}
		seen[class] = true
		tl := Tool{ToolClass: class, Enabled: true, Operations: []Operation{}}
		for _, op := range et.Operations {
			op.Name = clean(op.Name)
			if op.Name == "" || runes(op.Name) > limits.OperationNameLen {
				continue
			}
			if op.Enabled != nil {
				op.Enabled = ptr(*op.Enabled)
			}
			if op.AutoApprove != nil {
				op.AutoApprove = ptr(*op.AutoApprove)
			}
			if op.ApprovalTimeoutSeconds != nil {
				op.ApprovalTimeoutSeconds = ptr(min(max(*op.ApprovalTimeoutSeconds, 0), store.MaxApprovalTimeoutSeconds))
			}
			tl.Operations = append(tl.Operations, op)
		}
		var info ToolInfo
		known := false
		if cat != nil {
			info, known = cat.Tool(class)
		}
		for key, v := range et.Settings {
			if cat != nil {
				decl, ok := info.Settings[key]
				if !known || !ok || decl.Type == SettingPassword {
					continue
				}
			}
			nv, ok := normalize(v)
			if !ok || nv == nil {
				continue
			}
			if tl.Settings == nil {
				tl.Settings = map[string]any{}
			}
			tl.Settings[clean(key)] = nv
		}
		if len(et.ApprovalPolicy) > 0 {
			if nv, ok := normalize(et.ApprovalPolicy); ok {
				tl.ApprovalPolicy, _ = nv.(map[string]any)
			}
		}
		t.Tools = append(t.Tools, tl)
	}
	return t
}

func exportMetadata(m map[string]any) *Metadata {
	str := func(key string) string {
		s, _ := m[key].(string)
		return s
	}
	oneOf := func(key string, allowed []string) string {
		if s := str(key); slices.Contains(allowed, s) {
			return s
		}
		return ""
	}
	md := Metadata{
		Archetype:  oneOf("archetype", Archetypes),
		VariantKey: oneOf("variant_key", VariantKeys),
		PaletteKey: oneOf("palette_key", PaletteKeys),
	}
	if s := clean(str("category")); runes(s) <= limits.TemplateMetadataLen {
		md.Category = s
	}
	if s := clean(str("icon")); runes(s) <= limits.TemplateMetadataLen {
		md.Icon = s
	}
	if md == (Metadata{}) {
		return nil
	}
	return &md
}

// normalize turns a value into the plain form Parse produces (nil, bool, string, int64,
// float64, []any, map[string]any) by way of JSON; ok is false for values JSON cannot carry.
func normalize(v any) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, false
	}
	return fromJSON(out)
}

func fromJSON(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		return plainNumber(x.String())
	case []any:
		for i, e := range x {
			var ok bool
			if x[i], ok = fromJSON(e); !ok {
				return nil, false
			}
		}
		return x, true
	case map[string]any:
		for k, e := range x {
			var ok bool
			if x[k], ok = fromJSON(e); !ok {
				return nil, false
			}
		}
		return x, true
	}
	return v, true
}

// clean makes s valid UTF-8, as a JSON round trip would.
func clean(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// truncate cuts s to at most n characters.
func truncate(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// exportApprovals sets on a the approval settings of in that differ from an agent's defaults:
// the kinds of approvers when the managers are among them (named users are the
// installation's, so the owner alone, with or without named users, is the default, and an
// agent of named users only exports none: its import falls back to the owner), and the timeout with its action when calls do not wait forever.
func exportApprovals(a *Agent, in ExportInput) {
	if ap := in.Approvers; ap.Managers {
		a.Approvers = &Approvers{Owner: ap.Owner, Managers: ap.Managers}
	}
	if in.ApprovalTimeoutSeconds > 0 {
		a.ApprovalTimeoutSeconds = ptr(min(in.ApprovalTimeoutSeconds, store.MaxApprovalTimeoutSeconds))
		if in.ApprovalTimeoutAction == store.ApprovalTimeoutAbort {
			a.ApprovalTimeoutAction = store.ApprovalTimeoutAbort
		}
	}
}

// exportCompaction sets on a the compaction settings of c that differ from an agent's defaults
// (clamped to the format's ranges).
func exportCompaction(a *Agent, c store.AgentCompaction) {
	if !c.Enabled {
		a.CompactionEnabled = ptr(false)
	}
	if c.ThresholdPercent != store.DefaultCompactionThreshold && c.ThresholdPercent > 0 {
		a.CompactionThresholdPercent = ptr(min(max(c.ThresholdPercent, store.MinCompactionThreshold), store.MaxCompactionThreshold))
	}
	if c.AnswerReserve > 0 {
		a.CompactionAnswerReserve = ptr(min(c.AnswerReserve, maxCount))
	}
	if c.ToolResultMaxChars > 0 {
		a.ToolResultMaxChars = ptr(min(c.ToolResultMaxChars, maxCount))
	}
}
