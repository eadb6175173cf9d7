package core_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

func skillIndex(t *testing.T) *skill.Index {
	t.Helper()
	manifest := func(name string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: The " + name + " skill.\n---\n# " + name + "\n\nDo it well.\n")}
	}
	idx, problems := skill.NewIndex(skill.Provider{Source: skill.CoreSource, FS: fstest.MapFS{
		"web-research/SKILL.md":            manifest("web-research"),
		"web-research/reference/guide.md":  {Data: []byte("Guide text")},
		"web-research/reference/logo.png":  {Data: []byte{0x89, 'P', 'N', 'G', 0, 0xff}},
		"scheduling/SKILL.md":              manifest("scheduling"),
		"secret-skill/SKILL.md":            manifest("secret-skill"),
		"secret-skill/reference/secret.md": {Data: []byte("hidden")},
	}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return idx
}

func TestSkill(t *testing.T) {
	t.Parallel()
	deps := core.Deps{Skills: skillIndex(t)}
	allowed := map[string]any{"allowed_skills": []any{"web-research", "scheduling", "not-installed"}}
	tests := []struct {
		name     string
		deps     core.Deps
		op       string
		args     map[string]any
		settings map[string]any
		want     string
		wantErr  string
	}{
		{"read", deps, "read", map[string]any{"name": "web-research"}, allowed, "# Skill: web-research\n\n# web-research\n\nDo it well.", ""},
		{"list files", deps, "files", map[string]any{"name": "web-research"}, allowed, "Files of skill web-research:\n- reference/guide.md\n- reference/logo.png", ""},
		{"no files", deps, "files", map[string]any{"name": "scheduling"}, allowed, "Skill scheduling has no files", ""},
		{"read file", deps, "files", map[string]any{"name": "web-research", "path": "reference/guide.md"}, allowed, "Guide text", ""},
		{"string list setting", deps, "read", map[string]any{"name": "scheduling"}, map[string]any{"allowed_skills": []string{"scheduling"}}, "# Skill: scheduling", ""},
		{"binary file", deps, "files", map[string]any{"name": "web-research", "path": "reference/logo.png"}, allowed, "", "binary"},
		{"missing file", deps, "files", map[string]any{"name": "web-research", "path": "reference/none.md"}, allowed, "", "has no file"},
		{"dot dot", deps, "files", map[string]any{"name": "web-research", "path": "../secret-skill/reference/secret.md"}, allowed, "", "invalid file path"},
		{"manifest as file", deps, "files", map[string]any{"name": "web-research", "path": "SKILL.md"}, allowed, "", "has no file"},
		{"not allowed", deps, "read", map[string]any{"name": "secret-skill"}, allowed, "", "not allowed"},
		{"not allowed files", deps, "files", map[string]any{"name": "secret-skill", "path": "reference/secret.md"}, allowed, "", "not allowed"},
		{"nothing allowed", deps, "read", map[string]any{"name": "web-research"}, nil, "", "no skills are allowed"},
		{"not installed", deps, "read", map[string]any{"name": "not-installed"}, allowed, "", "not installed"},
		{"no index", core.Deps{}, "read", map[string]any{"name": "web-research"}, allowed, "", "not installed"},
		{"missing name", deps, "read", map[string]any{}, allowed, "", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := exec(t, tt.deps, "core.SkillTool", tools.Call{Operation: tt.op, Args: tt.args, Settings: tt.settings})
			if tt.wantErr != "" {
				wantToolErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Content, tt.want) {
				t.Errorf("content %q, want prefix %q", res.Content, tt.want)
			}
		})
	}
}
