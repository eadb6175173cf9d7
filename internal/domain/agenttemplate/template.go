// Package agenttemplate reads, validates, plans the import of, and writes agent templates
// (document 2, "Agent template"): JSON or YAML documents describing a reusable agent with its
// tools. It is pure: no HTTP, no database. What it needs to know about the installation (tools,
// skills, plugins) it asks through the Catalog interface.
//
// The JSON schema of the format (agent-template.schema.json, served by the API) and Validate
// agree on every rule the schema can express; Validate adds the rules it cannot (duplicate tool
// classes, settings checked against the tool's declared settings, catalog warnings) and reports
// every finding with a document 2 code and a JSON Pointer, never stopping at the first.
package agenttemplate

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/limits"
)

// Defaults of the template format, applied where a template omits the field.
const (
	DefaultAllowFollowup     = true
	DefaultRetryAfterMinutes = 0
	DefaultMaxRetries        = 0
	DefaultIcon              = "puzzle"
	// ExportVersion is the version written into exported templates.
	ExportVersion = "1.0.0"
)

// Source values of Input.Source that are exempt from NAMESPACE_MISMATCH. Any other value is a
// plugin slug, and templates scanned from that plugin must have ids "<slug>/<name>".
const (
	SourceCore     = "core"
	SourceUploaded = "uploaded"
)

// Input is a template document as received.
type Input struct {
	// Raw is the document text.
	Raw []byte
	// ContentType selects the syntax: "application/json" (parameters allowed) means JSON text
	// only; "application/yaml", "text/plain" and anything else mean JSON or YAML text.
	ContentType string
	// Source is where the document comes from: "core", "uploaded" (or empty, the same), or the
	// slug of the plugin that ships it. It only matters for NAMESPACE_MISMATCH.
	Source string
}

// Finding is one validation result.
type Finding struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Path is a JSON Pointer (RFC 6901) to the offending location: the key itself for a missing
	// required key ("/id"), "" for the whole document.
	Path string `json:"path"`
}

// Report is the outcome of validating one document.
type Report struct {
	// Valid is true exactly when Errors is empty (an import would be accepted).
	Valid    bool      `json:"valid"`
	Errors   []Finding `json:"errors"`
	Warnings []Finding `json:"warnings"`
}

// Template is the typed form of a valid template document. Optional fields the document can
// omit are pointers or omitempty, so a parsed template marshals back to an equivalent document
// (JSON or YAML) and an exported one parses back to an equal value.
type Template struct {
	Schema          string    `json:"$schema,omitempty" yaml:"$schema,omitempty"`
	ID              string    `json:"id" yaml:"id"`
	Name            string    `json:"name" yaml:"name"`
	Description     string    `json:"description,omitempty" yaml:"description,omitempty"`
	Version         string    `json:"version" yaml:"version"`
	Agent           Agent     `json:"agent" yaml:"agent"`
	Tools           []Tool    `json:"tools,omitempty" yaml:"tools,omitempty"`
	RequiredPlugins []string  `json:"required_plugins,omitempty" yaml:"required_plugins,omitempty"`
	Metadata        *Metadata `json:"metadata,omitempty" yaml:"metadata,omitempty"`
}

// Agent is the agent definition of a template. Nil pointers take the Default… values.
type Agent struct {
	Description       string `json:"description,omitempty" yaml:"description,omitempty"`
	SystemPrompt      string `json:"system_prompt,omitempty" yaml:"system_prompt,omitempty"`
	Notes             string `json:"notes,omitempty" yaml:"notes,omitempty"`
	MaxSteps          *int   `json:"max_steps,omitempty" yaml:"max_steps,omitempty"`
	AllowFollowup     *bool  `json:"allow_followup,omitempty" yaml:"allow_followup,omitempty"`
	RetryAfterMinutes *int   `json:"retry_after_minutes,omitempty" yaml:"retry_after_minutes,omitempty"`
	MaxRetries        *int   `json:"max_retries,omitempty" yaml:"max_retries,omitempty"`
	// The compaction settings of long conversations (issue 25); absent, the agent's defaults
	// (compaction on at 80 %, the configuration's answer reserve, no tool-result budget). The
	// summary model is not carried: configurations are the installation's.
	CompactionEnabled          *bool `json:"compaction_enabled,omitempty" yaml:"compaction_enabled,omitempty"`
	CompactionThresholdPercent *int  `json:"compaction_threshold_percent,omitempty" yaml:"compaction_threshold_percent,omitempty"`
	CompactionAnswerReserve    *int  `json:"compaction_answer_reserve,omitempty" yaml:"compaction_answer_reserve,omitempty"`
	ToolResultMaxChars         *int  `json:"tool_result_max_chars,omitempty" yaml:"tool_result_max_chars,omitempty"`
	// Memories are the agent's agent-wide memories (the memory tool's scope agent); memories of
	// single users never travel with a template.
	Memories []string `json:"memories,omitempty" yaml:"memories,omitempty"`
	// Who decides the agent's pending tool calls and questions, and how long a call waits
	// (issue 26); absent, the task's owner decides and calls wait forever. Named approvers do
	// not travel: user ids are the installation's.
	Approvers              *Approvers `json:"approvers,omitempty" yaml:"approvers,omitempty"`
	ApprovalTimeoutSeconds *int       `json:"approval_timeout_seconds,omitempty" yaml:"approval_timeout_seconds,omitempty"`
	ApprovalTimeoutAction  string     `json:"approval_timeout_action,omitempty" yaml:"approval_timeout_action,omitempty"`
}

// Approvers is agent.approvers: the kinds of deciders a template can name (at least one).
type Approvers struct {
	Owner    bool `json:"owner" yaml:"owner"`
	Managers bool `json:"managers" yaml:"managers"`
}

// Tool is one tools[] entry.
type Tool struct {
	ToolClass  string      `json:"tool_class" yaml:"tool_class"`
	Enabled    bool        `json:"enabled" yaml:"enabled"`
	Operations []Operation `json:"operations" yaml:"operations"`
	// Settings are agent-level setting values. Values are plain: nil, bool, string, int64
	// (integers), float64 (other numbers), []any, map[string]any.
	Settings map[string]any `json:"settings,omitempty" yaml:"settings,omitempty"`
	// ApprovalPolicy is the approval policy of the tool's operations (package toolpolicy's
	// form), kept at the agent layer on import; exported with or without settings.
	ApprovalPolicy map[string]any `json:"approval_policy,omitempty" yaml:"approval_policy,omitempty"`
}

// MarshalJSON writes operations as [] rather than null when there are none: the key is
// required by the format.
func (t Tool) MarshalJSON() ([]byte, error) {
	type plainTool Tool
	p := plainTool(t)
	if p.Operations == nil {
		p.Operations = []Operation{}
	}
	return json.Marshal(p)
}

// Operation is one operations[] entry. Nil pointers inherit the tool's default.
type Operation struct {
	Name        string `json:"name" yaml:"name"`
	Enabled     *bool  `json:"enabled,omitempty" yaml:"enabled,omitempty"`
	AutoApprove *bool  `json:"auto_approve,omitempty" yaml:"auto_approve,omitempty"`
	// ApprovalTimeoutSeconds overrides the agent's approval timeout for this operation's calls
	// (0: they wait forever).
	ApprovalTimeoutSeconds *int `json:"approval_timeout_seconds,omitempty" yaml:"approval_timeout_seconds,omitempty"`
}

// Metadata is presentation metadata; empty strings are absent.
type Metadata struct {
	Category   string `json:"category,omitempty" yaml:"category,omitempty"`
	Icon       string `json:"icon,omitempty" yaml:"icon,omitempty"`
	Archetype  string `json:"archetype,omitempty" yaml:"archetype,omitempty"`
	VariantKey string `json:"variant_key,omitempty" yaml:"variant_key,omitempty"`
	PaletteKey string `json:"palette_key,omitempty" yaml:"palette_key,omitempty"`
}

// Allowed values of the metadata fields (document 2). Categories outside Categories are only a
// warning; the other lists are enforced.
var (
	Categories  = []string{"general", "productivity", "research", "communication", "media", "data", "automation"}
	Archetypes  = []string{"assistant", "researcher", "analyst", "writer", "coder", "explorer", "advisor", "creative"}
	VariantKeys = []string{"v0", "v1", "v2"}
	PaletteKeys = []string{"slate", "red", "orange", "amber", "green", "teal", "blue", "indigo", "violet", "pink"}
)

// Parse validates input (without a catalog: structural rules and the warnings that need no
// catalog) and returns the typed template. The template is nil exactly when the report has
// errors. Defaults are not applied: the template is the document as written (see ApplyDefaults).
func Parse(input Input) (*Template, Report) {
	root, rep := validate(input, nil)
	if !rep.Valid {
		return nil, rep
	}
	return build(root), rep
}

// ApplyDefaults fills every field the document omitted with the format's default: max_steps 10,
// allow_followup true, retry_after_minutes and max_retries 0, metadata.icon "puzzle" and
// metadata.variant_key derived from the id (VariantKey).
func (t *Template) ApplyDefaults() {
	a := &t.Agent
	if a.MaxSteps == nil {
		a.MaxSteps = ptr(limits.DefaultSteps)
	}
	if a.AllowFollowup == nil {
		a.AllowFollowup = ptr(DefaultAllowFollowup)
	}
	if a.RetryAfterMinutes == nil {
		a.RetryAfterMinutes = ptr(DefaultRetryAfterMinutes)
	}
	if a.MaxRetries == nil {
		a.MaxRetries = ptr(DefaultMaxRetries)
	}
	if t.Metadata == nil {
		t.Metadata = &Metadata{}
	}
	if t.Metadata.Icon == "" {
		t.Metadata.Icon = DefaultIcon
	}
	if t.Metadata.VariantKey == "" {
		t.Metadata.VariantKey = VariantKey(t.ID)
	}
}

// VariantKey derives metadata.variant_key for a template that omits it: "v" followed by the
// 32-bit FNV-1a hash of the template id modulo 3.
func VariantKey(id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return "v" + strconv.FormatUint(uint64(h.Sum32()%3), 10)
}

// Slug turns a name into a bare template id: lowercase ASCII letters and digits, other runs of
// characters become one "-", at most 64 characters, never empty ("agent").
func Slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= 64 {
			break
		}
	}
	s := strings.TrimRight(b.String()[:min(b.Len(), 64)], "-")
	if s == "" {
		return "agent"
	}
	return s
}

func ptr[T any](v T) *T { return &v }
