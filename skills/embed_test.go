package skills_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/skills"
)

// TestShippedSkills checks that every shipped skill is valid and substantial.
func TestShippedSkills(t *testing.T) {
	t.Parallel()
	idx, problems := skill.NewIndex(skills.Provider())
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	var names []string
	for _, s := range idx.All() {
		names = append(names, s.Name)
		if s.Source != skill.CoreSource {
			t.Errorf("%s: source %q", s.Name, s.Source)
		}
		if len(strings.Fields(s.Body)) < 200 {
			t.Errorf("%s: body of %d words is too thin to be useful", s.Name, len(strings.Fields(s.Body)))
		}
		if s.License == "" || len(s.AllowedTools) == 0 {
			t.Errorf("%s: license %q, allowed-tools %v", s.Name, s.License, s.AllowedTools)
		}
	}
	if want := []string{"agent-setup", "scheduling", "web-research"}; !reflect.DeepEqual(names, want) {
		t.Errorf("shipped skills %v, want %v", names, want)
	}
	files, err := idx.Files("web-research")
	if err != nil || !reflect.DeepEqual(files, []string{"references/source-evaluation.md"}) {
		t.Errorf("web-research files %v, %v", files, err)
	}
	data, err := idx.ReadFile("web-research", "references/source-evaluation.md")
	if err != nil || !strings.Contains(string(data), "Source evaluation") {
		t.Errorf("ReadFile: %v", err)
	}
}
