package agenttemplate_test

import (
	"testing"

	agenttemplates "github.com/agentsvc/svc/agent-templates"
	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/skills"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// TestShippedTemplatesAgainstCoreTools validates the shipped templates against the real core
// tool registry and shipped skills: no errors, and every tool class they name is registered.
func TestShippedTemplatesAgainstCoreTools(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatal(err)
	}
	idx, _ := skill.NewIndex(skills.Provider())
	cat := agenttemplate.ToolCatalog{Registry: reg, Skill: idx.Exists}
	entries, err := agenttemplate.LoadDir(agenttemplates.FS, agenttemplate.SourceCore)
	if err != nil || len(entries) == 0 {
		t.Fatalf("LoadDir: %d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		rep := agenttemplate.Validate(agenttemplate.Input{Raw: mustRaw(t, e.Path), ContentType: "application/json", Source: agenttemplate.SourceCore}, cat)
		if !rep.Valid {
			t.Errorf("%s: errors %+v", e.Path, rep.Errors)
		}
		for _, w := range rep.Warnings {
			if w.Code == agenttemplate.CodeToolPluginMissing || w.Code == agenttemplate.CodeOperationUnknown {
				t.Errorf("%s: %s at %s: %s", e.Path, w.Code, w.Path, w.Message)
			}
		}
	}
	info, ok := cat.Tool("core.SkillTool")
	if !ok || len(info.SkillSettingKeys) != 1 || info.SkillSettingKeys[0] != agenttemplate.SkillListSetting {
		t.Fatalf("core.SkillTool catalog entry = %+v, %v", info, ok)
	}
	if _, ok := cat.Tool("core.NoSuchTool"); ok {
		t.Fatal("unknown class reported as registered")
	}
}

func mustRaw(t *testing.T, path string) []byte {
	t.Helper()
	b, err := agenttemplates.FS.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
