package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Tool is a registered tool. Execution is added with the agent loop; for now a tool is its
// declaration.
type Tool interface {
	Spec() Spec
}

// Registry holds the tools of one running service: core tools and those of loaded plugins. It is
// built explicitly (NewRegistry) and handed to whoever needs it; there is no global registry. It
// is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	byClass map[string]entry
	byModel map[string]string // model-facing name → class
	offered []ModelTool       // ModelTools, built on first use after a change; nil: stale
}

type entry struct {
	tool Tool
	spec Spec
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byClass: map[string]entry{}, byModel: map[string]string{}}
}

// Register validates the declaration of t and adds it. It fails with an error wrapping
// svcerr.ErrInvalid for a declaration that breaks a rule (the message names the tool and the
// rule), and svcerr.ErrConflict when the class or the model-facing name is taken. A refused tool
// leaves the registry unchanged.
func (r *Registry) Register(t Tool) error {
	if t == nil {
		return svcerr.New(svcerr.ErrInvalid, "register tool: nil tool")
	}
	spec := t.Spec()
	if err := Validate(spec); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byClass[spec.Class]; ok {
		return svcerr.New(svcerr.ErrConflict, "register tool %s: class already registered", spec.Class)
	}
	name := ModelName(spec)
	if other, ok := r.byModel[name]; ok {
		return svcerr.New(svcerr.ErrConflict, "register tool %s: model-facing name %q already used by %s", spec.Class, name, other)
	}
	r.byClass[spec.Class] = entry{tool: t, spec: spec}
	r.byModel[name] = spec.Class
	r.offered = nil
	return nil
}

// Replace registers t, or replaces the tool already registered under its class: tools whose
// declaration changes while the service runs (an MCP server's tool list) are updated in one step,
// so a concurrent lookup sees the old or the new tool, never none. It fails like Register: an
// error wrapping svcerr.ErrInvalid for a declaration that breaks a rule, svcerr.ErrConflict when
// the model-facing name is used by another class. A refused tool leaves the registry unchanged.
func (r *Registry) Replace(t Tool) error {
	if t == nil {
		return svcerr.New(svcerr.ErrInvalid, "register tool: nil tool")
	}
	spec := t.Spec()
	if err := Validate(spec); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	name := ModelName(spec)
	if other, ok := r.byModel[name]; ok && other != spec.Class {
		return svcerr.New(svcerr.ErrConflict, "register tool %s: model-facing name %q already used by %s", spec.Class, name, other)
	}
	if old, ok := r.byClass[spec.Class]; ok {
		delete(r.byModel, ModelName(old.spec))
	}
	r.byClass[spec.Class] = entry{tool: t, spec: spec}
	r.byModel[name] = spec.Class
	r.offered = nil
	return nil
}

// Unregister removes the tool registered under class and reports whether there was one. It is
// for tools that disappear while the service runs (a tool an MCP server no longer lists); calls
// already recorded for the class then fail as calls of an unknown tool.
func (r *Registry) Unregister(class string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byClass[class]
	if !ok {
		return false
	}
	delete(r.byClass, class)
	delete(r.byModel, ModelName(e.spec))
	r.offered = nil
	return true
}

// ModelTool is a registered tool as models are offered it.
type ModelTool struct {
	Class       string
	Name        string // ModelName
	Description string
	Parameters  json.RawMessage // Schema
}

// ModelTools returns every registered tool as models are offered it, ordered by class. The
// slice is built once per change of the registry and shared: callers must not modify it.
// Every step of every task offers its agent's tools, and building them (the specs' copy, each
// JSON schema) was 5 kB of garbage per step.
func (r *Registry) ModelTools() []ModelTool {
	r.mu.RLock()
	out := r.offered
	r.mu.RUnlock()
	if out != nil {
		return out
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.offered == nil {
		specs := make([]Spec, 0, len(r.byClass))
		for _, e := range r.byClass {
			specs = append(specs, e.spec)
		}
		sort.Slice(specs, func(i, j int) bool { return specs[i].Class < specs[j].Class })
		r.offered = make([]ModelTool, len(specs))
		for i, spec := range specs {
			r.offered[i] = ModelTool{Class: spec.Class, Name: ModelName(spec), Description: spec.Description, Parameters: Schema(spec)}
		}
	}
	return r.offered
}

// Lookup returns the tool registered under class.
func (r *Registry) Lookup(class string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byClass[class]
	return e.tool, ok
}

// LookupModelName returns the tool the model calls by name (`read_url`, `weather:forecast`).
func (r *Registry) LookupModelName(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	class, ok := r.byModel[name]
	if !ok {
		return nil, false
	}
	return r.byClass[class].tool, true
}

// Spec returns the declaration registered under class, as it was validated at registration.
func (r *Registry) Spec(class string) (Spec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byClass[class]
	return e.spec, ok
}

// All returns every registered tool ordered by class.
func (r *Registry) All() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	classes := make([]string, 0, len(r.byClass))
	for c := range r.byClass {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	out := make([]Tool, len(classes))
	for i, c := range classes {
		out[i] = r.byClass[c].tool
	}
	return out
}

// Specs returns the registered declarations ordered by class.
func (r *Registry) Specs() []Spec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Spec, 0, len(r.byClass))
	for _, e := range r.byClass {
		out = append(out, e.spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}

// Validate checks a declaration against every rule of document 2 and the framework's own
// consistency rules. It returns nil or an error wrapping svcerr.ErrInvalid whose message names
// the tool and the broken rule. Register calls it; it is exported for checking plugin
// declarations before anything is registered.
func Validate(spec Spec) error {
	if msg := validate(spec); msg != "" {
		label := spec.Class
		if label == "" {
			label = fmt.Sprintf("%q", spec.Name)
		}
		return svcerr.New(svcerr.ErrInvalid, "register tool %s: %s", label, msg)
	}
	return nil
}

// maxNameLen keeps model-facing names within what every provider accepts for function names.
const maxNameLen = 64

func validate(spec Spec) string {
	if !namePattern.MatchString(spec.Name) || len(spec.Name) > maxNameLen {
		return fmt.Sprintf("invalid name %q (must match %s, at most %d characters)", spec.Name, namePattern, maxNameLen)
	}
	if !classPattern.MatchString(spec.Class) {
		return fmt.Sprintf("invalid class %q (must be <source>.<TypeName>, matching %s)", spec.Class, classPattern)
	}
	source := spec.Class[:strings.IndexByte(spec.Class, '.')]
	if spec.PluginSlug == "" {
		if source != CoreSource {
			return fmt.Sprintf("class %q of a core tool must start with %q", spec.Class, CoreSource+".")
		}
	} else {
		if !pluginSlugPattern.MatchString(spec.PluginSlug) || spec.PluginSlug == CoreSource {
			return fmt.Sprintf("invalid plugin slug %q", spec.PluginSlug)
		}
		if source != spec.PluginSlug {
			return fmt.Sprintf("class %q of a plugin tool must start with its plugin slug %q", spec.Class, spec.PluginSlug+".")
		}
	}
	if spec.Category != "" && !slices.Contains(categories, spec.Category) {
		return fmt.Sprintf("unknown category %q (one of %s)", spec.Category, strings.Join(categories, ", "))
	}
	seenSkill := map[string]bool{}
	for _, s := range spec.RecommendsSkills {
		if !skill.ValidName(s) {
			return fmt.Sprintf("invalid recommended skill slug %q", s)
		}
		if seenSkill[s] {
			return fmt.Sprintf("skill %q recommended twice", s)
		}
		seenSkill[s] = true
	}
	if msg := validateOperations(spec); msg != "" {
		return msg
	}
	if msg := validateParams(spec); msg != "" {
		return msg
	}
	if msg := validateInputSchema(spec); msg != "" {
		return msg
	}
	if msg := validateSettingDecls(spec.Settings); msg != "" {
		return msg
	}
	if _, err := schema(spec); err != nil {
		return fmt.Sprintf("schema cannot be generated: %v", err)
	}
	return ""
}

func validateOperations(spec Spec) string {
	if len(spec.Operations) == 0 {
		return "no operations declared"
	}
	seen := map[string]bool{}
	key := discriminatorKey(spec.Operations[0])
	for _, op := range spec.Operations {
		if !namePattern.MatchString(op.Name) || len(op.Name) > maxNameLen {
			return fmt.Sprintf("invalid operation name %q (must match %s)", op.Name, namePattern)
		}
		if seen[op.Name] {
			return fmt.Sprintf("duplicate operation %q", op.Name)
		}
		seen[op.Name] = true
		if op.DiscriminatorKey != "" && !paramNamePattern.MatchString(op.DiscriminatorKey) {
			return fmt.Sprintf("operation %q: invalid discriminator key %q", op.Name, op.DiscriminatorKey)
		}
		if k := discriminatorKey(op); k != key {
			return fmt.Sprintf("operations disagree on the discriminator key (%q and %q)", key, k)
		}
	}
	return ""
}

func validateParams(spec Spec) string {
	seenBase := map[*Spec]bool{}
	for b := spec.Base; b != nil; b = b.Base {
		if seenBase[b] {
			return "the Base chain loops"
		}
		seenBase[b] = true
	}
	disc, hasDisc := Discriminator(spec)
	seen := map[string]bool{}
	for _, p := range AllParams(spec) {
		if !paramNamePattern.MatchString(p.Name) {
			return fmt.Sprintf("invalid parameter name %q (must match %s)", p.Name, paramNamePattern)
		}
		if seen[p.Name] {
			return fmt.Sprintf("duplicate parameter %q", p.Name)
		}
		seen[p.Name] = true
		if hasDisc && p.Name == disc {
			return fmt.Sprintf("parameter %q is the discriminator of a tool with several operations and must not be declared", p.Name)
		}
		if msg := validateParam(spec, p); msg != "" {
			return fmt.Sprintf("parameter %q: %s", p.Name, msg)
		}
	}
	return ""
}

func validateParam(spec Spec, p Param) string {
	if !slices.Contains(paramTypes, p.Type) {
		return fmt.Sprintf("unknown type %q (one of %s)", p.Type, strings.Join(paramTypes, ", "))
	}
	if r := p.Required; r != nil {
		if r.Optional && len(r.Operations) > 0 {
			return "a requirement cannot be both optional and bound to operations"
		}
		seen := map[string]bool{}
		for _, name := range r.Operations {
			if _, ok := spec.Operation(name); !ok {
				return fmt.Sprintf("required for unknown operation %q", name)
			}
			if seen[name] {
				return fmt.Sprintf("operation %q listed twice in the requirement", name)
			}
			seen[name] = true
		}
	}
	numeric := p.Type == TypeNumber || p.Type == TypeInteger
	if len(p.Enum) > 0 {
		if p.Type != TypeString {
			return "enum is allowed on string parameters only"
		}
		seen := map[string]bool{}
		for _, v := range p.Enum {
			if seen[v] {
				return fmt.Sprintf("duplicate enum value %q", v)
			}
			seen[v] = true
		}
	}
	if (p.Minimum != nil || p.Maximum != nil) && !numeric {
		return "minimum and maximum are allowed on number and integer parameters only"
	}
	if p.Minimum != nil && p.Maximum != nil && *p.Minimum > *p.Maximum {
		return "minimum is greater than maximum"
	}
	if p.Items != nil && p.Type != TypeArray {
		return "items is allowed on array parameters only"
	}
	if p.Default != nil {
		if !valueHasType(p.Default, p.Type) {
			return fmt.Sprintf("default %v is not of type %s", p.Default, p.Type)
		}
		if s, ok := p.Default.(string); ok && len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
			return fmt.Sprintf("default %q is not one of the enum values", s)
		}
		if f, ok := toFloat(p.Default); ok && numeric {
			if (p.Minimum != nil && f < *p.Minimum) || (p.Maximum != nil && f > *p.Maximum) {
				return fmt.Sprintf("default %v is out of bounds", p.Default)
			}
		}
	}
	return ""
}

// validateInputSchema checks the raw schema escape hatch: it replaces the generated schema
// entirely, so nothing that would feed the generated one may be declared with it.
func validateInputSchema(spec Spec) string {
	if spec.InputSchema == nil {
		return ""
	}
	if len(AllParams(spec)) > 0 {
		return "a tool with an input schema cannot declare parameters"
	}
	if len(spec.Operations) != 1 {
		return "a tool with an input schema must have exactly one operation"
	}
	if t, _ := spec.InputSchema["type"].(string); t != TypeObject {
		return `the input schema must have "type": "object"`
	}
	return ""
}

func validateSettingDecls(settings []Setting) string {
	seen := map[string]bool{}
	for _, s := range settings {
		if !namePattern.MatchString(s.Key) || len(s.Key) > maxNameLen {
			return fmt.Sprintf("invalid setting key %q (must match %s)", s.Key, namePattern)
		}
		if seen[s.Key] {
			return fmt.Sprintf("duplicate setting %q", s.Key)
		}
		seen[s.Key] = true
		if !slices.Contains(settingTypes, s.Type) {
			return fmt.Sprintf("setting %q: unknown type %q (one of %s)", s.Key, s.Type, strings.Join(settingTypes, ", "))
		}
		if s.Type == SettingSelect {
			if len(s.Options) == 0 {
				return fmt.Sprintf("setting %q: a select setting needs options", s.Key)
			}
			opts := map[string]bool{}
			for _, o := range s.Options {
				if o == "" || opts[o] {
					return fmt.Sprintf("setting %q: empty or duplicate option %q", s.Key, o)
				}
				opts[o] = true
			}
		} else if len(s.Options) > 0 {
			return fmt.Sprintf("setting %q: options are allowed on select settings only", s.Key)
		}
		if s.Default != nil {
			if s.Type == SettingPassword {
				return fmt.Sprintf("setting %q: a password setting cannot have a default", s.Key)
			}
			if msg := checkSettingValue(s, s.Default); msg != "" {
				return fmt.Sprintf("setting %q: default %s", s.Key, msg)
			}
		}
	}
	return ""
}

// CheckRecommendedSkills verifies that every skill a registered tool recommends exists. It
// returns nil, or an error wrapping svcerr.ErrSkillsMissing whose message names the first tool
// (by class) and skill that fail.
func CheckRecommendedSkills(reg *Registry, skillExists func(string) bool) error {
	for _, spec := range reg.Specs() {
		for _, s := range spec.RecommendsSkills {
			if !skillExists(s) {
				return svcerr.New(svcerr.ErrSkillsMissing, "tool %s recommends skill %q, which does not exist", spec.Class, s)
			}
		}
	}
	return nil
}
