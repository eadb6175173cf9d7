// Service moves agents in and out of the agent template format (document 2,
// "Agent template"): the catalog of available templates, validation of an uploaded document
// against this installation, import of a document as a new agent with its tool records, and
// export of an agent as a document.
//
// The rest of the package knows the format and is pure; Service adds what only the running
// service knows: the registered tools and skills, the settings an owner already inherits (so a
// required setting given at the global, user or group layer does not make a tool "need
// configuration"), who may create and read which agents, and the store.
//
// Rules beyond the format's:
//   - A setting value must also pass the tool framework's own check (tools.ValidateSettings: an
//     absolute http(s) URL for url settings, a declared option for select …); otherwise it is
//     the error SETTINGS_INVALID_VALUE_TYPE, in validation and import alike, so that a template
//     that validates also imports and its settings are what the tool configuration accepts.
//   - allowed_target_agents may only name agents of the new agent's owner (as the tool
//     configuration requires); other ids are dropped on import, and when none is left the key
//     is dropped and a required setting reports TOOL_NEEDS_CONFIGURATION.
//   - Exports never carry password-typed values, values of undeclared keys, values that no
//     longer fit their declaration, or inherited (global, user, group) values.

package agenttemplate

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentsvc/svc/internal/domain/toolpolicy"

	agenttemplates "github.com/agentsvc/svc/agent-templates"
	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/toolconfig"
)

// SourcePlugin is the catalog source of a Summary from a plugin (SourceCore: shipped).
const SourcePlugin = "plugin"

// keyAllowedTargetAgents is the setting whose values are agent ids of the same owner.
const keyAllowedTargetAgents = "allowed_target_agents"

// maxListedCodes bounds the findings named in the message of a refused import.
const maxListedCodes = 20

// Store is what the service needs of the store; *store.Store satisfies it.
type Store interface {
	access.Memberships
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	AgentToolConfig(ctx context.Context, agentID int64) (*store.AgentToolConfig, error)
	AgentsOfPrincipal(ctx context.Context, principalID int64, ids []int64) ([]int64, error)
	InheritedToolSettings(ctx context.Context, principalID int64) ([]map[string]*store.ToolSettings, error)
	ImportAgent(ctx context.Context, principalID int64, f store.AgentFields, tools []store.ImportedTool, memories []string) (*store.Agent, error)
	RecallMemories(ctx context.Context, q store.MemoryQuery) ([]store.Memory, int64, error)
}

// Service applies the template rules of the running service.
type Service struct {
	store  Store
	reg    *tools.Registry
	skills *skill.Index
	// plugin reports whether a plugin package is installed; nil (no plugin support yet) means
	// none is, so every required plugin is reported missing.
	plugin func(pkg string) bool
	core   func() ([]Entry, error)
	extra  func() []Entry // the templates of the loaded plugins, after the core ones
}

// WithPlugins adds the templates of the loaded plugins, read at each use (after the core
// templates: an id taken by a core template stays the core one), and the check whether a
// plugin package is installed, and returns s.
func (s *Service) WithPlugins(entries func() []Entry, installed func(pkg string) bool) *Service {
	s.extra, s.plugin = entries, installed
	return s
}

// New returns the service: reg holds the registered tools, skills the available skills.
func New(st Store, reg *tools.Registry, skills *skill.Index) *Service {
	return &Service{
		store: st, reg: reg, skills: skills,
		core: sync.OnceValues(func() ([]Entry, error) {
			return LoadDir(agenttemplates.FS, SourceCore)
		}),
	}
}

// Summary is one catalog entry.
type Summary struct {
	ID          string
	Name        string
	Description string
	Version     string
	Source      string // SourceCore or SourcePlugin
	PluginSlug  string // "" for core templates
	Category    string // "" when the template sets none
	Icon        string // metadata.icon, default "puzzle"
	ToolClasses []string
	// RequiredPlugins are the plugin packages the template requires; MissingPlugins those of
	// them that are not installed (importing warns PLUGIN_MISSING).
	RequiredPlugins []string
	MissingPlugins  []string
}

// templates returns the available templates by id: the shipped core templates, then those of
// loaded plugins. Files with errors are left out; the first file of an id wins.
func (s *Service) templates() ([]*Template, error) {
	entries, err := s.core()
	if err != nil {
		return nil, err
	}
	if s.extra != nil {
		entries = append(entries[:len(entries):len(entries)], s.extra()...)
	}
	seen := map[string]bool{}
	out := make([]*Template, 0, len(entries))
	for _, e := range entries {
		if e.Template == nil || seen[e.Template.ID] {
			continue
		}
		seen[e.Template.ID] = true
		out = append(out, e.Template)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (s *Service) pluginInstalled(pkg string) bool { return s.plugin != nil && s.plugin(pkg) }

// List returns the catalog ordered by id. Errors: none but an unreadable template store (500).
func (s *Service) List(ctx context.Context) ([]Summary, error) {
	ts, err := s.templates()
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(ts))
	for _, t := range ts {
		sum := Summary{
			ID: t.ID, Name: t.Name, Description: t.Description, Version: t.Version, Source: SourceCore,
			Icon: DefaultIcon, ToolClasses: []string{},
			RequiredPlugins: append([]string{}, t.RequiredPlugins...), MissingPlugins: []string{},
		}
		if src, _, ok := strings.Cut(t.ID, "/"); ok && src != SourceCore {
			sum.Source, sum.PluginSlug = SourcePlugin, src
		}
		if m := t.Metadata; m != nil {
			sum.Category = m.Category
			if m.Icon != "" {
				sum.Icon = m.Icon
			}
		}
		for _, tl := range t.Tools {
			sum.ToolClasses = append(sum.ToolClasses, tl.ToolClass)
		}
		for _, p := range t.RequiredPlugins {
			if !s.pluginInstalled(p) {
				sum.MissingPlugins = append(sum.MissingPlugins, p)
			}
		}
		out = append(out, sum)
	}
	return out, nil
}

// Get returns the template id as its document holds it (defaults not applied). The result is
// shared: do not modify it. Errors: ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (*Template, error) {
	ts, err := s.templates()
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if t.ID == id {
			return t, nil
		}
	}
	return nil, svcerr.New(svcerr.ErrNotFound, "agent template %q not found", id)
}

// catalog answers the template rules for an agent owned by principal: the registered tools,
// the skills, the plugins, and which required settings the owner's inherited layers already
// provide (tools.Cascade over the global layer and the owning user's or group's layer, the
// layers the new agent will read).
func (s *Service) catalog(ctx context.Context, principal int64) (ToolCatalog, error) {
	layers, err := s.store.InheritedToolSettings(ctx, principal)
	if err != nil {
		return ToolCatalog{}, err
	}
	missing := map[string][]string{}
	provided := func(class, key string) bool {
		miss, ok := missing[class]
		if !ok {
			spec, known := s.reg.Spec(class)
			if !known {
				return false
			}
			values := make([]map[string]any, len(layers))
			for i, l := range layers {
				if ts := l[class]; ts != nil {
					values[i] = ts.Values
				}
			}
			_, miss = tools.Cascade(spec, values...)
			missing[class] = miss
		}
		return !slices.Contains(miss, key)
	}
	return ToolCatalog{Registry: s.reg, Skill: s.skillExists, Plugin: s.plugin, Provided: provided}, nil
}

func (s *Service) skillExists(name string) bool { return s.skills != nil && s.skills.Exists(name) }

// checked is a validated upload.
type checked struct {
	report   Report
	template *Template // nil when the report has errors
	catalog  ToolCatalog
}

// check validates an upload for an agent owned by principal: Validate with this
// installation's catalog, plus the tool framework's value check of each setting.
func (s *Service) check(ctx context.Context, principal int64, in Input) (*checked, error) {
	in.Source = SourceUploaded
	cat, err := s.catalog(ctx, principal)
	if err != nil {
		return nil, err
	}
	c := &checked{report: Validate(in, cat), catalog: cat}
	if !c.report.Valid {
		return c, nil
	}
	t, _ := Parse(in) // valid with the catalog, so valid without it
	if t == nil {
		return nil, fmt.Errorf("template valid with the catalog but not without it")
	}
	if extra := s.settingFindings(t); len(extra) > 0 {
		c.report.Errors = append(c.report.Errors, extra...)
		c.report.Valid = false
		return c, nil
	}
	c.template = t
	return c, nil
}

// settingFindings checks each declared, non-secret, set value of a registered tool with the
// tool framework's rules, which are stricter than the format's type check for url and select
// settings and for integers beyond 2^53.
func (s *Service) settingFindings(t *Template) []Finding {
	var out []Finding
	for i, tl := range t.Tools {
		spec, ok := s.reg.Spec(tl.ToolClass)
		if !ok {
			continue
		}
		for _, key := range sortedKeys(tl.Settings) {
			v := tl.Settings[key]
			st, ok := spec.Setting(key)
			if !ok || st.Type == tools.SettingPassword || tools.IsUnset(v) {
				continue
			}
			if err := tools.ValidateSettings(spec, map[string]any{key: v}); err != nil {
				msg, _, _ := svcerr.Public(err)
				out = append(out, Finding{
					Code: CodeSettingsInvalidValueType, Message: msg,
					Path: pointer("", "tools", fmt.Sprint(i), "settings", key),
				})
			}
		}
	}
	return out
}

// Validate checks an uploaded template for u: every error and warning of document 2, with the
// catalog answered for an agent of u's personal principal (the default owner of an import).
// It writes nothing and never refuses a document: unusable input is itself a finding. Errors:
// only the store's.
func (s *Service) Validate(ctx context.Context, u *store.User, in Input) (Report, error) {
	c, err := s.check(ctx, u.PrincipalID, in)
	if err != nil {
		return Report{}, err
	}
	return c.report, nil
}

// Import creates an agent from an uploaded template, owned by principalID (nil: u's personal
// principal), which u must be able to manage. With any error-severity finding nothing is
// written. Otherwise the agent and the records of its enabled, registered tools (operation
// overrides, agent-layer settings) are created in one transaction, and the warnings are
// returned. Errors: ErrForbidden (a principal u may not manage, or cannot see), ErrInvalid (the
// template has errors, the message lists their codes; the agent fields and tool records break
// agent.CheckFields or toolconfig.CheckImportedTools; an unknown principal for an
// administrator).
func (s *Service) Import(ctx context.Context, u *store.User, principalID *int64, in Input) (*store.Agent, []Finding, error) {
	p := u.PrincipalID
	if principalID != nil {
		p = *principalID
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, nil, err
	}
	if !sc.CanManage(p) {
		return nil, nil, svcerr.New(svcerr.ErrForbidden, "you may not create agents for principal %d", p)
	}
	c, err := s.check(ctx, p, in)
	if err != nil {
		return nil, nil, err
	}
	if !c.report.Valid {
		return nil, nil, refused(c.report.Errors, c.report.Warnings)
	}
	plan, findings := Plan(c.template, c.catalog)
	var errs, warns []Finding
	for _, f := range findings {
		if IsError(f.Code) {
			errs = append(errs, f)
		} else {
			warns = append(warns, f)
		}
	}
	if len(errs) > 0 { // Validate already reported them; kept so a disagreement never writes
		return nil, nil, refused(errs, warns)
	}
	warnings, err := s.restrictTargets(ctx, p, c.template, &plan, findings)
	if err != nil {
		return nil, nil, err
	}
	fields, imported := agentFields(plan), s.importedTools(plan)
	if err := agent.CheckFields(fields, true); err != nil {
		return nil, nil, err
	}
	if err := toolconfig.CheckImportedTools(imported); err != nil {
		return nil, nil, err
	}
	a, err := s.store.ImportAgent(ctx, p, fields, imported, plan.Agent.Memories)
	if err != nil {
		return nil, nil, err
	}
	return a, warnings, nil
}

// RefusedError is the refusal of an import whose template has error-severity findings: an
// ErrInvalid (errors.Is) whose message names each error's code and path, carrying every
// finding so the caller can show each next to its place.
type RefusedError struct {
	Errors, Warnings []Finding
	err              error
}

func (e *RefusedError) Error() string { return e.err.Error() }

// Unwrap gives the categorised error (svcerr.ErrInvalid with the message).
func (e *RefusedError) Unwrap() error { return e.err }

// refused is the 422 of an import with errors; its message names each error's code and path.
func refused(errs, warnings []Finding) error {
	parts := make([]string, 0, min(len(errs), maxListedCodes)+1)
	for i, f := range errs {
		if i == maxListedCodes {
			parts = append(parts, fmt.Sprintf("and %d more", len(errs)-maxListedCodes))
			break
		}
		if f.Path == "" { // the whole document: say why
			parts = append(parts, f.Code+" ("+f.Message+")")
		} else {
			parts = append(parts, f.Code+" at "+f.Path)
		}
	}
	return &RefusedError{Errors: errs, Warnings: warnings, err: svcerr.New(svcerr.ErrInvalid,
		"the template has errors: %s (POST /agent-templates/validate explains each)", strings.Join(parts, ", "))}
}

// restrictTargets drops allowed_target_agents ids that are not agents of principal; a list left
// empty is dropped, and a required setting then missing adds TOOL_NEEDS_CONFIGURATION.
func (s *Service) restrictTargets(ctx context.Context, principal int64, t *Template, plan *ImportPlan, warnings []Finding) ([]Finding, error) {
	for i := range plan.Tools {
		tp := &plan.Tools[i]
		list, ok := tp.Settings[keyAllowedTargetAgents].([]any)
		if !ok {
			continue
		}
		spec, known := s.reg.Spec(tp.ToolClass)
		st, declared := spec.Setting(keyAllowedTargetAgents)
		if !known || !declared || st.Type != tools.SettingIntegerList {
			continue
		}
		var ids []int64
		for _, v := range list {
			if id, ok := v.(int64); ok && id > 0 {
				ids = append(ids, id)
			}
		}
		found, err := s.store.AgentsOfPrincipal(ctx, principal, ids)
		if err != nil {
			return nil, err
		}
		kept := []any{}
		for _, v := range list {
			if id, ok := v.(int64); ok {
				if _, hit := slices.BinarySearch(found, id); hit {
					kept = append(kept, id)
				}
			}
		}
		if len(kept) > 0 {
			tp.Settings[keyAllowedTargetAgents] = kept
			continue
		}
		delete(tp.Settings, keyAllowedTargetAgents)
		if len(tp.Settings) == 0 {
			tp.Settings = nil
		}
		if st.Required && !slices.Contains(tp.MissingRequired, keyAllowedTargetAgents) {
			tp.MissingRequired = append(tp.MissingRequired, keyAllowedTargetAgents)
			warnings = append(warnings, Finding{
				Code: CodeToolNeedsConfiguration, Path: pointer("", "tools", fmt.Sprint(toolIndex(t, tp.ToolClass))),
				Message: fmt.Sprintf("tool %q needs configuration: %s names no agent of this owner", tp.ToolClass, keyAllowedTargetAgents),
			})
		}
	}
	return warnings, nil
}

// toolIndex is the position of class in the document's tools (classes are unique there).
func toolIndex(t *Template, class string) int {
	return slices.IndexFunc(t.Tools, func(tl Tool) bool { return tl.ToolClass == class })
}

// agentFields turns the plan's agent into the store's fields; the metadata keeps the set keys.
func agentFields(p ImportPlan) store.AgentFields {
	a := p.Agent
	md := map[string]any{}
	for k, v := range map[string]string{
		"category": p.Metadata.Category, "icon": p.Metadata.Icon, "archetype": p.Metadata.Archetype,
		"variant_key": p.Metadata.VariantKey, "palette_key": p.Metadata.PaletteKey,
	} {
		if v != "" {
			md[k] = v
		}
	}
	var approvers *store.Approvers
	if ap := a.Approvers; ap != nil {
		approvers = &store.Approvers{Owner: ap.Owner, Managers: ap.Managers}
	}
	return store.AgentFields{
		Name: &a.Name, Description: &a.Description, SystemPrompt: &a.SystemPrompt, Notes: &a.Notes,
		MaxSteps: &a.MaxSteps, AllowFollowup: &a.AllowFollowup, RetryAfterMinutes: &a.RetryAfterMinutes,
		MaxRetries: &a.MaxRetries, Metadata: &md, CompactionEnabled: a.CompactionEnabled,
		CompactionThresholdPercent: a.CompactionThresholdPercent, CompactionAnswerReserve: a.CompactionAnswerReserve,
		ToolResultMaxChars: a.ToolResultMaxChars, Approvers: approvers, ApprovalTimeoutSeconds: a.ApprovalTimeoutSeconds,
		ApprovalTimeoutAction: a.ApprovalTimeoutAction,
	}
}

// importedTools turns the plan's tools into the store's records. Password-typed keys never
// reach this point (the format refuses them); they are skipped all the same, so that no secret
// is ever stored unsealed.
func (s *Service) importedTools(p ImportPlan) []store.ImportedTool {
	out := make([]store.ImportedTool, 0, len(p.Tools))
	for _, tp := range p.Tools {
		it := store.ImportedTool{ToolClass: tp.ToolClass, Operations: map[string]store.ToolOperationOverride{}}
		for _, op := range tp.Operations {
			it.Operations[op.Name] = store.ToolOperationOverride{Enabled: op.Enabled, AutoApprove: op.AutoApprove,
				ApprovalTimeoutSeconds: op.ApprovalTimeoutSeconds}
		}
		spec, _ := s.reg.Spec(tp.ToolClass)
		if tp.ApprovalPolicy != nil {
			it.Settings = map[string]any{toolpolicy.Key: tp.ApprovalPolicy}
		}
		for k, v := range tp.Settings {
			if st, ok := spec.Setting(k); !ok || st.Type == tools.SettingPassword {
				continue
			}
			if it.Settings == nil {
				it.Settings = map[string]any{}
			}
			it.Settings[k] = v
		}
		out = append(out, it)
	}
	return out
}

// Export returns the agent id as a template (Export): anyone who sees the agent
// may export it; withSettings (the agent's own non-secret tool settings) needs the manage
// right. schemaURL is written as $schema. The tools are the agent's enabled tools (its own
// choice, else its group's entry) by class, each with its operation overrides in declaration
// order. The agent-wide memories (never a single user's) are carried when u may manage the
// agent: memories hold what the agent was told. Errors: ErrNotFound "agent not found" (unknown,
// malformed or invisible), ErrForbidden (settings without the manage right).
func (s *Service) Export(ctx context.Context, u *store.User, agentID string, withSettings bool, schemaURL string) (*Template, error) {
	aid, err := agent.ParseID(agentID)
	if err != nil {
		return nil, err
	}
	a, err := s.store.Agent(ctx, aid, u.ID)
	if err != nil {
		return nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	if withSettings {
		err = sc.Manage(a.PrincipalID, "agent")
	} else {
		err = sc.See(a.PrincipalID, "agent")
	}
	if err != nil {
		return nil, err
	}
	cfg, err := s.store.AgentToolConfig(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	in := ExportInput{
		SchemaURL: schemaURL, Name: a.Name, Description: a.Description, SystemPrompt: a.SystemPrompt,
		Notes: a.Notes, MaxSteps: a.MaxSteps, AllowFollowup: a.AllowFollowup,
		RetryAfterMinutes: a.RetryAfterMinutes, MaxRetries: a.MaxRetries, Metadata: a.Metadata, Compaction: &a.Compaction,
		Approvers: a.Approvers, ApprovalTimeoutSeconds: a.ApprovalTimeoutSeconds, ApprovalTimeoutAction: a.ApprovalTimeoutAction,
	}
	if sc.CanManage(a.PrincipalID) {
		ms, _, err := s.store.RecallMemories(ctx, store.MemoryQuery{AgentID: a.ID, Limit: limits.TemplateMemories})
		if err != nil {
			return nil, err
		}
		for _, m := range slices.Backward(ms) { // oldest first: an import keeps their order
			in.Memories = append(in.Memories, m.Text)
		}
	}
	for _, class := range enabledClasses(cfg) {
		spec, known := s.reg.Spec(class)
		et := ExportTool{ToolClass: class, Enabled: true, Operations: exportOperations(spec, known, cfg.Operations[class])}
		if withSettings && known {
			et.Settings = exportSettings(spec, cfg.Agent[class])
		}
		if l := cfg.Agent[class]; known && l != nil {
			if p, err := tools.ParsePolicy(spec, l.Values[toolpolicy.Key]); err == nil && p != nil {
				et.ApprovalPolicy, _ = l.Values[toolpolicy.Key].(map[string]any)
			}
		}
		in.Tools = append(in.Tools, et)
	}
	return Export(in, ToolCatalog{Registry: s.reg}), nil
}

// enabledClasses lists, by class, the tools the agent has enabled: its own choice, or else its
// group's entry.
func enabledClasses(cfg *store.AgentToolConfig) []string {
	var out []string
	for class, on := range cfg.Enabled {
		if on {
			out = append(out, class)
		}
	}
	for class, on := range cfg.GroupEnabled {
		if _, own := cfg.Enabled[class]; !own && on {
			out = append(out, class)
		}
	}
	sort.Strings(out)
	return out
}

// exportOperations lists the overrides: declared operations in declaration order (overrides of
// operations the tool no longer declares are left out); for an unregistered tool every
// override, by name.
func exportOperations(spec tools.Spec, known bool, overrides map[string]store.ToolOperationOverride) []Operation {
	op := func(name string, o store.ToolOperationOverride) Operation {
		return Operation{Name: name, Enabled: o.Enabled, AutoApprove: o.AutoApprove, ApprovalTimeoutSeconds: o.ApprovalTimeoutSeconds}
	}
	out := []Operation{}
	if known {
		for _, d := range spec.Operations {
			if o, ok := overrides[d.Name]; ok && !o.Empty() {
				out = append(out, op(d.Name, o))
			}
		}
		return out
	}
	for _, name := range sortedKeys(overrides) {
		if o := overrides[name]; !o.Empty() {
			out = append(out, op(name, o))
		}
	}
	return out
}

// exportSettings keeps the agent layer's declared, non-secret values that still fit their
// declaration; nil when none.
func exportSettings(spec tools.Spec, layer *store.ToolSettings) map[string]any {
	if layer == nil {
		return nil
	}
	var out map[string]any
	for k, v := range layer.Values {
		st, ok := spec.Setting(k)
		if !ok || st.Type == tools.SettingPassword || tools.IsUnset(v) {
			continue
		}
		if tools.ValidateSettings(spec, map[string]any{k: v}) != nil {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}
