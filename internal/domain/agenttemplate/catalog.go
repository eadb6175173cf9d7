package agenttemplate

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentsvc/svc/internal/domain/toolpolicy"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Catalog is what validation and import planning need to know about the installation. The
// service implements it over the tool registry, the skill providers and the plugin registry;
// an implementation may answer per importing user (SettingInfo.Provided).
type Catalog interface {
	// Tool describes a registered tool class; false when the class is not registered.
	Tool(class string) (ToolInfo, bool)
	// SkillExists reports whether a skill of that name is available locally.
	SkillExists(name string) bool
	// PluginInstalled reports whether the plugin package vendor/name is installed.
	PluginInstalled(pkg string) bool
}

// ToolInfo is the part of a tool declaration a template is checked against.
type ToolInfo struct {
	// Operations are the names of the operations the tool declares.
	Operations []string
	// Settings are the declared settings by key.
	Settings map[string]SettingInfo
	// SkillSettingKeys name the settings whose values are skill names (e.g. "allowed_skills");
	// names of skills that are not available are dropped with SKILL_MISSING.
	SkillSettingKeys []string
}

// SettingInfo describes one declared setting of a tool.
type SettingInfo struct {
	// Type is the setting type: string, text, password, url, select (string values); integer;
	// number; boolean; string_list; integer_list. Values of other types are not checked.
	Type string
	// Required means the tool cannot work without a value.
	Required bool
	// Provided means a value already reaches the agent from the cascade (tool default, global,
	// user or group setting), so a template that leaves the setting out does not make the tool
	// need configuration.
	Provided bool
}

// Setting types with a value check.
const (
	SettingString      = "string"
	SettingText        = "text"
	SettingPassword    = "password"
	SettingURL         = "url"
	SettingSelect      = "select"
	SettingInteger     = "integer"
	SettingNumber      = "number"
	SettingBoolean     = "boolean"
	SettingStringList  = "string_list"
	SettingIntegerList = "integer_list"
)

// collector gathers findings by severity, in the order they are found.
type collector struct {
	errs, warns []Finding
}

// maxFindings bounds each list so a hostile document cannot blow up a response.
const maxFindings = 500

func (c *collector) add(code, path, format string, args ...any) {
	list := &c.warns
	if IsError(code) {
		list = &c.errs
	}
	if len(*list) < maxFindings {
		*list = append(*list, Finding{Code: code, Message: fmt.Sprintf(format, args...), Path: path})
	}
}

func (c *collector) report() Report {
	r := Report{Valid: len(c.errs) == 0, Errors: c.errs, Warnings: c.warns}
	if r.Errors == nil {
		r.Errors = []Finding{}
	}
	if r.Warnings == nil {
		r.Warnings = []Finding{}
	}
	return r
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer joins JSON Pointer reference tokens, escaping "~" and "/" (RFC 6901).
func pointer(base string, tokens ...any) string {
	var b strings.Builder
	b.WriteString(base)
	for _, t := range tokens {
		b.WriteByte('/')
		switch v := t.(type) {
		case int:
			b.WriteString(strconv.Itoa(v))
		case string:
			b.WriteString(pointerEscaper.Replace(v))
		}
	}
	return b.String()
}

// catalogTool is one tool entry as far as it is well-formed, for the catalog rules shared by
// Validate and Plan. Operation indexes are kept so paths point into the document.
type catalogTool struct {
	index    int
	class    string
	enabled  bool
	ops      []indexedOp
	settings map[string]any // nil when absent; values are plain
	policy   map[string]any // the approval policy; nil when absent or malformed
}

type indexedOp struct {
	index int
	op    Operation
}

// applyCatalog checks one tool entry against the catalog and returns what an import writes for
// it. known is false when the class is not registered (TOOL_PLUGIN_MISSING); the entry is then
// skipped entirely. Unknown operations are skipped (OPERATION_UNKNOWN); settings keep only
// declared, non-password keys with values of the right type (errors otherwise), minus skills
// that are not available (SKILL_MISSING); null and "" values are dropped (they mean "no
// agent-level value"). An enabled tool whose required settings stay unset is still planned,
// with TOOL_NEEDS_CONFIGURATION.
func applyCatalog(t catalogTool, cat Catalog, c *collector) (tp ToolPlan, known bool) {
	base := pointer("", "tools", t.index)
	info, ok := cat.Tool(t.class)
	if !ok {
		c.add(CodeToolPluginMissing, pointer(base, "tool_class"),
			"tool class %s is not registered (is its plugin installed?); the tool is skipped", quote(t.class))
		return ToolPlan{}, false
	}
	tp = ToolPlan{ToolClass: t.class, Operations: []Operation{}}
	for _, o := range t.ops {
		if !slices.Contains(info.Operations, o.op.Name) {
			c.add(CodeOperationUnknown, pointer(base, "operations", o.index, "name"),
				"tool %s has no operation %s; it is skipped", quote(t.class), quote(o.op.Name))
			continue
		}
		tp.Operations = append(tp.Operations, o.op)
	}
	if t.policy != nil {
		if _, err := toolpolicy.Parse(t.policy, func(op string) bool { return slices.Contains(info.Operations, op) }); err != nil {
			msg, _, _ := svcerr.Public(err)
			c.add(CodeApprovalPolicyInvalid, pointer(base, "approval_policy"), "tool %s: %s", quote(t.class), msg)
		} else if len(t.policy) > 0 {
			tp.ApprovalPolicy = t.policy
		}
	}
	keys := make([]string, 0, len(t.settings))
	for k := range t.settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kept := map[string]any{}
	for _, key := range keys {
		v := t.settings[key]
		path := pointer(base, "settings", key)
		decl, ok := info.Settings[key]
		switch {
		case !ok:
			c.add(CodeSettingsUnknownKey, path, "tool %s declares no setting %s", quote(t.class), quote(key))
			continue
		case decl.Type == SettingPassword:
			c.add(CodeSettingsPasswordKeyForbidden, path,
				"setting %s of tool %s is a password; templates never carry secrets", quote(key), quote(t.class))
			continue
		case v == nil:
			continue
		case !valueMatches(decl.Type, v):
			c.add(CodeSettingsInvalidValueType, path, "setting %s of tool %s must be %s, not %s",
				quote(key), quote(t.class), typeWord(decl.Type), mismatch(decl.Type, v))
			continue
		}
		if s, ok := v.(string); ok && s == "" {
			continue
		}
		if slices.Contains(info.SkillSettingKeys, key) {
			v = filterSkills(v, path, cat, c)
		}
		kept[key] = v
	}
	if len(kept) > 0 {
		tp.Settings = kept
	}
	if t.enabled {
		for _, key := range sortedKeys(info.Settings) {
			d := info.Settings[key]
			if _, set := kept[key]; d.Required && !d.Provided && !set {
				tp.MissingRequired = append(tp.MissingRequired, key)
			}
		}
		if len(tp.MissingRequired) > 0 {
			c.add(CodeToolNeedsConfiguration, base, "tool %s needs configuration: required settings %s are not set",
				quote(t.class), strings.Join(tp.MissingRequired, ", "))
		}
	}
	return tp, true
}

// filterSkills drops unavailable skill names from a skill setting value (a list of names, or
// one name).
func filterSkills(v any, path string, cat Catalog, c *collector) any {
	switch x := v.(type) {
	case string:
		if !cat.SkillExists(x) {
			c.add(CodeSkillMissing, path, "skill %s is not available here; it is dropped", quote(x))
			return nil
		}
		return x
	case []any:
		out := []any{}
		for i, e := range x {
			name, ok := e.(string)
			if ok && !cat.SkillExists(name) {
				c.add(CodeSkillMissing, pointer(path, i), "skill %s is not available here; it is dropped", quote(name))
				continue
			}
			out = append(out, e)
		}
		return out
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// valueMatches checks a plain value against a setting type.
func valueMatches(typ string, v any) bool {
	switch typ {
	case SettingString, SettingText, SettingPassword, SettingURL, SettingSelect:
		_, ok := v.(string)
		return ok
	case SettingInteger:
		_, ok := v.(int64)
		return ok
	case SettingNumber:
		switch v.(type) {
		case int64, float64:
			return true
		}
		return false
	case SettingBoolean:
		_, ok := v.(bool)
		return ok
	case SettingStringList, SettingIntegerList:
		list, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range list {
			var eok bool
			if typ == SettingStringList {
				_, eok = e.(string)
			} else {
				_, eok = e.(int64)
			}
			if !eok {
				return false
			}
		}
		return true
	}
	return true
}

func typeWord(typ string) string {
	switch typ {
	case SettingInteger:
		return "an integer"
	case SettingNumber:
		return "a number"
	case SettingBoolean:
		return "a boolean"
	case SettingStringList:
		return "a list of strings"
	case SettingIntegerList:
		return "a list of integers"
	}
	return "a string"
}

// mismatch describes a value that does not match a setting type.
func mismatch(typ string, v any) string {
	if _, list := v.([]any); list && (typ == SettingStringList || typ == SettingIntegerList) {
		return "a list holding other values"
	}
	if f, ok := v.(float64); ok && typ == SettingInteger {
		return "the number " + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return describe(v)
}

// describe names the JSON type of a plain value for messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case []any:
		return "a list"
	}
	return "an object"
}
