// Package tools is the declaration framework of agent tools: a tool declares its identity,
// operations, parameters and settings as data (a Spec), and everything else is derived from that
// declaration — the JSON schema sent to the model, the settings cascade and its validation, the
// masking of secrets and the discovery payload of `get_available_tools`. The package does no I/O:
// it knows nothing about HTTP or the database, so the API, the agent loop and the template importer
// share one set of rules.
package tools

import "strings"

// Parameter types (the JSON Schema types a parameter may have).
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeArray   = "array"
	TypeObject  = "object"
)

// Setting types. SettingPassword values are encrypted at rest and never returned (see Mask);
// SettingSelect takes one of the declared Options; the list types are JSON arrays.
const (
	SettingString      = "string"
	SettingText        = "text"
	SettingPassword    = "password"
	SettingURL         = "url"
	SettingInteger     = "integer"
	SettingNumber      = "number"
	SettingBoolean     = "boolean"
	SettingSelect      = "select"
	SettingStringList  = "string_list"
	SettingIntegerList = "integer_list"
)

// Categories a tool may declare. An empty Category means CategoryGeneral.
const (
	CategoryGeneral       = "general"
	CategoryResearch      = "research"
	CategoryCommunication = "communication"
	CategoryProductivity  = "productivity"
	CategoryData          = "data"
	CategorySystem        = "system"
)

// DefaultDiscriminator is the argument that names the operation of a tool with two or more
// operations, unless the operations declare another key.
const DefaultDiscriminator = "action"

// DefaultIcon is the icon of a tool that declares none and whose plugin declares none.
const DefaultIcon = "puzzle"

// CoreSource is the source part of the class of every core tool (`core.ReadURLTool`).
const CoreSource = "core"

// Spec is the declaration of a tool. It is plain data so that it can be validated once, at
// registration, and turned into every derived form (model schema, operator listing, discovery)
// without reflection.
type Spec struct {
	// Class is the stable registered identifier `<source>.<TypeName>`: `core.ReadURLTool` for a
	// core tool, `<plugin-slug>.<TypeName>` for a plugin tool. It is what the database stores.
	Class string
	// Name is the model-facing name, `^[a-z][a-z0-9_]*$`. Plugin tools reach the model as
	// `<plugin-slug>:<name>` (see ModelName).
	Name string
	// Description is sent to the model.
	Description string
	// DisplayName is the operator label; empty means the short type name of the class.
	DisplayName string
	// Category is one of the Category constants; empty means general.
	Category string
	// Icon is a bundled icon key; empty falls back to the plugin's icon, then DefaultIcon.
	Icon string
	// RecommendsSkills lists skill slugs offered when the tool is enabled.
	RecommendsSkills []string
	// Base is a parent declaration whose parameters (and its own Base's, recursively) are
	// inherited for schema generation, before the tool's own. Nothing else of Base is used:
	// operations and settings are never inherited.
	Base *Spec
	// Operations are declared in order; at least one.
	Operations []Operation
	// Params are the tool's own parameters in declaration order (property order of the schema).
	Params []Param
	// InputSchema, when not nil, is the whole JSON schema of the arguments, sent to the model as
	// given instead of one generated from Params. It is the escape hatch of tools whose schema is
	// declared elsewhere (an MCP server's inputSchema) and cannot be expressed as Params. A tool
	// with an InputSchema declares no Params (own or inherited) and exactly one operation (there
	// is no discriminator to inject); its "type" must be "object".
	InputSchema map[string]any
	// Settings are declared in order (the order of the operator's form).
	Settings []Setting
	// PluginSlug names the contributing plugin; empty for core tools.
	PluginSlug string
}

// Operation is one named action of a tool.
type Operation struct {
	Name                      string
	Description               string
	EnabledByDefault          bool
	RequiresApprovalByDefault bool
	// DiscriminatorKey is the argument naming the operation (default "action"); every operation
	// of a tool must agree on it.
	DiscriminatorKey string
	// Repeatable declares a call safe to run again when a crash interrupted it: the operation
	// only reads, or running it twice with the same arguments has no further effect. Such a
	// call, found started but unfinished after a crash, is run again (at least once); any other
	// is never run twice (at most once: it may have had effects) and fails "interrupted".
	// Anything that writes, sends, spawns, schedules or asks is not repeatable.
	Repeatable bool
}

// Param is one argument of a tool call.
type Param struct {
	Name        string
	Type        string // one of the Type constants
	Description string
	// Required is nil for "required" (the default); see RequiredRule.
	Required *RequiredRule
	// Default, when not nil, is the value used when the argument is absent; a parameter with a
	// default is never in the required list.
	Default any
	Enum    []string // allowed values (string parameters only)
	Minimum *float64 // numeric parameters only
	Maximum *float64 // numeric parameters only
	Format  string   // a hint such as date, date-time, email or uri
	Items   map[string]any
}

// RequiredRule is the `required` field of a parameter declaration, which document 2 defines as
// a boolean or a list of operation names. Param.Required == nil and &RequiredRule{} both mean
// true (an empty list counts as true).
type RequiredRule struct {
	// Operations, when non-empty, binds the requirement to these operations only.
	Operations []string
	// Optional declares `required: false`. It cannot be combined with Operations.
	Optional bool
}

// Optional returns the rule of a parameter that is never required.
func Optional() *RequiredRule { return &RequiredRule{Optional: true} }

// RequiredFor returns the rule of a parameter required only by the named operations. With no
// names it means required, as document 2 says of an empty list.
func RequiredFor(operations ...string) *RequiredRule {
	return &RequiredRule{Operations: operations}
}

// Setting is one configuration value of a tool, resolved through the cascade tool default <
// global < user < group < agent.
type Setting struct {
	Key         string
	Label       string
	Description string
	Type        string // one of the Setting constants
	// Required settings must have a value in the cascade before the tool is ready to enable.
	Required bool
	// Default is the value of the tool-default layer; never set for password settings.
	Default any
	// Options are the allowed values of a select setting (and only of one).
	Options []string
}

// Float returns a pointer to v, for Param.Minimum and Param.Maximum.
func Float(v float64) *float64 { return &v }

// ModelName is the function name the model sees: the plain name for a core tool,
// `<plugin-slug>:<name>` for a plugin tool. Drivers whose providers forbid `:` encode it
// reversibly; the stored name never changes.
func ModelName(spec Spec) string {
	if spec.PluginSlug == "" {
		return spec.Name
	}
	return spec.PluginSlug + ":" + spec.Name
}

// DisplayName is the operator label: the declared one, else the short type name of the class
// (`core.ReadURLTool` gives `ReadURLTool`).
func DisplayName(spec Spec) string {
	if spec.DisplayName != "" {
		return spec.DisplayName
	}
	if i := strings.LastIndexByte(spec.Class, '.'); i >= 0 {
		return spec.Class[i+1:]
	}
	return spec.Class
}

// Category returns the declared category, or general when none is declared.
func Category(spec Spec) string {
	if spec.Category == "" {
		return CategoryGeneral
	}
	return spec.Category
}

// Icon returns the tool's icon key: its own, else pluginIcon (the icon of the contributing
// plugin's manifest, empty for none), else DefaultIcon.
func Icon(spec Spec, pluginIcon string) string {
	switch {
	case spec.Icon != "":
		return spec.Icon
	case pluginIcon != "":
		return pluginIcon
	}
	return DefaultIcon
}

// Discriminator returns the argument naming the operation, and false when the tool has a single
// operation (no discriminator is generated then).
func Discriminator(spec Spec) (string, bool) {
	if len(spec.Operations) < 2 {
		return "", false
	}
	return discriminatorKey(spec.Operations[0]), true
}

func discriminatorKey(op Operation) string {
	if op.DiscriminatorKey == "" {
		return DefaultDiscriminator
	}
	return op.DiscriminatorKey
}

// AllParams returns the parameters used for schema generation: those inherited through Base
// (the farthest ancestor first), then the tool's own, each group in declaration order. A Base
// chain that loops is cut where it repeats (Register refuses such a spec).
func AllParams(spec Spec) []Param {
	var chain []*Spec
	seen := map[*Spec]bool{}
	for b := spec.Base; b != nil && !seen[b]; b = b.Base {
		seen[b] = true
		chain = append(chain, b)
	}
	var out []Param
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, chain[i].Params...)
	}
	return append(out, spec.Params...)
}

// Operation returns the declared operation called name.
func (s Spec) Operation(name string) (Operation, bool) {
	for _, op := range s.Operations {
		if op.Name == name {
			return op, true
		}
	}
	return Operation{}, false
}

// Setting returns the declared setting called key.
func (s Spec) Setting(key string) (Setting, bool) {
	for _, st := range s.Settings {
		if st.Key == key {
			return st, true
		}
	}
	return Setting{}, false
}
