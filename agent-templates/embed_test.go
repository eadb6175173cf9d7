package agenttemplates_test

import (
	"path"
	"slices"
	"strings"
	"testing"

	agenttemplates "github.com/agentsvc/svc/agent-templates"
	"github.com/agentsvc/svc/internal/domain/agenttemplate"
)

// coreCatalog knows the core tools the shipped templates use, with their operations
// (docs/design.md "Tools").
type coreCatalog struct{}

var _ agenttemplate.Catalog = coreCatalog{}

func (coreCatalog) Tool(class string) (agenttemplate.ToolInfo, bool) {
	ops, ok := map[string][]string{
		"core.TimeTool":            {"now", "format"},
		"core.CalculatorTool":      {"calculate"},
		"core.ReadURLTool":         {"fetch"},
		"core.AskUserQuestionTool": {"ask"},
		"core.SkillTool":           {"read", "files"},
	}[class]
	info := agenttemplate.ToolInfo{Operations: ops}
	if class == "core.SkillTool" {
		info.Settings = map[string]agenttemplate.SettingInfo{"allowed_skills": {Type: "string_list"}}
		info.SkillSettingKeys = []string{"allowed_skills"}
	}
	return info, ok
}
func (coreCatalog) SkillExists(string) bool     { return false }
func (coreCatalog) PluginInstalled(string) bool { return false }

// TestCoreTemplates: every shipped template is valid, warning-free against the core tools,
// named after its id, and importable.
func TestCoreTemplates(t *testing.T) {
	t.Parallel()
	entries, err := agenttemplate.LoadDir(agenttemplates.FS, agenttemplate.SourceCore)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 3 {
		t.Fatalf("only %d core templates", len(entries))
	}
	var ids []string
	for _, e := range entries {
		t.Run(e.Path, func(t *testing.T) {
			if !e.Report.Valid || len(e.Report.Warnings) > 0 {
				t.Fatalf("%+v", e.Report)
			}
			raw, err := agenttemplates.FS.ReadFile(e.Path)
			if err != nil {
				t.Fatal(err)
			}
			rep := agenttemplate.Validate(agenttemplate.Input{Raw: raw, ContentType: "application/json", Source: agenttemplate.SourceCore}, coreCatalog{})
			if !rep.Valid || len(rep.Warnings) > 0 {
				t.Fatalf("with the core catalog: %+v", rep)
			}
			tpl := e.Template
			if want := "core/" + strings.TrimSuffix(path.Base(e.Path), ".json"); tpl.ID != want {
				t.Errorf("id %q in file %s, want %q", tpl.ID, e.Path, want)
			}
			if tpl.Metadata == nil || tpl.Metadata.Category == "" || tpl.Metadata.Archetype == "" || tpl.Description == "" {
				t.Errorf("catalog fields missing: %+v", tpl)
			}
			plan, findings := agenttemplate.Plan(tpl, coreCatalog{})
			if len(findings) > 0 || len(plan.Tools) != len(tpl.Tools) {
				t.Errorf("plan: %+v %v", plan, findings)
			}
			ids = append(ids, tpl.ID)
		})
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("ids not unique: %v", ids)
	}
}
