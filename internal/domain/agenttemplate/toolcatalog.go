package agenttemplate

import (
	"github.com/agentsvc/svc/tools"
)

// SkillListSetting is the setting whose values are skill names (document 2, tool configuration
// rule 4); skill names a template puts there are checked against the skill index.
const SkillListSetting = "allowed_skills"

// ToolCatalog answers the template rules from the tool registry, the skill index and the
// installed plugins.
type ToolCatalog struct {
	Registry *tools.Registry
	// Skill reports whether a skill is available (nil: none is).
	Skill func(name string) bool
	// Plugin reports whether a plugin package is installed (nil: none is).
	Plugin func(pkg string) bool
	// Provided reports whether a setting already has a value outside the template (global,
	// user or group layer) for the importing user; nil means only declared defaults count.
	Provided func(class, key string) bool
}

var _ Catalog = ToolCatalog{}

// Tool describes a registered tool class.
func (c ToolCatalog) Tool(class string) (ToolInfo, bool) {
	spec, ok := c.Registry.Spec(class)
	if !ok {
		return ToolInfo{}, false
	}
	info := ToolInfo{Settings: map[string]SettingInfo{}}
	for _, op := range spec.Operations {
		info.Operations = append(info.Operations, op.Name)
	}
	for _, s := range spec.Settings {
		provided := s.Default != nil
		if !provided && c.Provided != nil {
			provided = c.Provided(class, s.Key)
		}
		info.Settings[s.Key] = SettingInfo{Type: s.Type, Required: s.Required, Provided: provided}
		if s.Key == SkillListSetting {
			info.SkillSettingKeys = append(info.SkillSettingKeys, s.Key)
		}
	}
	return info, true
}

// SkillExists reports whether the skill is available.
func (c ToolCatalog) SkillExists(name string) bool { return c.Skill != nil && c.Skill(name) }

// PluginInstalled reports whether the plugin package is installed.
func (c ToolCatalog) PluginInstalled(pkg string) bool { return c.Plugin != nil && c.Plugin(pkg) }
