package core_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/skills"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

func registry(t *testing.T) *tools.Registry {
	t.Helper()
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatalf("core.Register: %v", err)
	}
	return reg
}

func TestRegisterAll(t *testing.T) {
	t.Parallel()
	reg := registry(t)
	if got, want := len(reg.All()), len(core.All()); got != want {
		t.Fatalf("registered %d tools, want %d", got, want)
	}
	// Registering twice is refused: classes are taken.
	if err := core.Register(reg); !errors.Is(err, svcerr.ErrConflict) {
		t.Errorf("second Register: %v", err)
	}
	var classes []string
	for _, tool := range core.All() {
		classes = append(classes, tool.Spec().Class)
	}
	if !slices.IsSorted(classes) {
		t.Errorf("core.All is not in class order: %v", classes)
	}
}

// TestDeclarations pins the names and operations docs/design.md ("Tools") gives each core tool, which
// operations need approval by default, and which are repeatable after a crash (those that only
// read or compute; nothing that writes, sends, spawns, schedules or asks).
func TestDeclarations(t *testing.T) {
	t.Parallel()
	reg := registry(t)
	tests := []struct {
		class, name string
		ops         []string
		approval    []string
		settings    []string
		repeatable  []string
	}{
		{"core.TimeTool", "time", []string{"now", "format"}, nil, nil, []string{"now", "format"}},
		{"core.CalculatorTool", "calculator", []string{"calculate"}, nil, nil, []string{"calculate"}},
		{"core.ReadURLTool", "read_url", []string{"fetch"}, nil, []string{"allowed_domains", "blocked_domains", "max_bytes", "user_agent", "result_max_chars"}, []string{"fetch"}},
		{"core.UserInfoTool", "user_info", []string{"get_base_data", "get_locations"}, nil, nil, []string{"get_base_data", "get_locations"}},
		{"core.SubAgentTool", "sub_agent", []string{"sub_agent", "handover"}, []string{"sub_agent", "handover"}, []string{"allowed_target_agents"}, nil},
		{
			"core.AgentTool", "agent",
			[]string{"get_available_tools", "configure_tools", "create_agent", "read_agent", "list_agents", "update_agent", "read_notes", "write_notes"},
			[]string{"configure_tools", "create_agent", "update_agent", "write_notes"}, nil,
			[]string{"get_available_tools", "read_agent", "list_agents", "read_notes"},
		},
		{"core.SkillTool", "skill", []string{"read", "files"}, nil, []string{"allowed_skills"}, []string{"read", "files"}},
		{"core.MediaTool", "media", []string{"search", "get_media"}, nil, nil, []string{"search", "get_media"}},
		{"core.MemoryTool", "memory", []string{"remember", "recall", "forget"}, []string{"forget"}, []string{"scope"}, []string{"recall"}},
		{"core.TodoTool", "todo", []string{"write", "add", "set_status", "read"}, nil, nil, []string{"read"}},
		{"core.AskUserQuestionTool", "ask_user_question", []string{"ask"}, nil, nil, nil},
		{
			"core.ScheduleTool", "schedule",
			[]string{
				"list_schedules", "read_schedule", "create_schedule", "update_schedule", "delete_schedule",
				"list_prompt_templates", "read_prompt_template", "create_prompt_template", "update_prompt_template",
				"delete_prompt_template", "trigger",
			},
			[]string{
				"create_schedule", "update_schedule", "delete_schedule", "create_prompt_template",
				"update_prompt_template", "delete_prompt_template", "trigger",
			}, nil,
			[]string{"list_schedules", "read_schedule", "list_prompt_templates", "read_prompt_template"},
		},
	}
	if len(tests) != len(core.All()) {
		t.Errorf("the table covers %d tools, core has %d", len(tests), len(core.All()))
	}
	for _, tt := range tests {
		spec, ok := reg.Spec(tt.class)
		if !ok {
			t.Errorf("%s not registered", tt.class)
			continue
		}
		if tools.ModelName(spec) != tt.name {
			t.Errorf("%s: model name %q, want %q", tt.class, tools.ModelName(spec), tt.name)
		}
		var ops, approval, settings, repeatable []string
		for _, op := range spec.Operations {
			ops = append(ops, op.Name)
			if op.RequiresApprovalByDefault {
				approval = append(approval, op.Name)
			}
			if op.Repeatable {
				repeatable = append(repeatable, op.Name)
			}
			if !op.EnabledByDefault {
				t.Errorf("%s: operation %s is off by default", tt.class, op.Name)
			}
			if op.Description == "" {
				t.Errorf("%s: operation %s has no description", tt.class, op.Name)
			}
		}
		for _, s := range spec.Settings {
			settings = append(settings, s.Key)
			if s.Label == "" || s.Description == "" {
				t.Errorf("%s: setting %s lacks a label or description", tt.class, s.Key)
			}
		}
		if !reflect.DeepEqual(ops, tt.ops) {
			t.Errorf("%s: operations %v, want %v", tt.class, ops, tt.ops)
		}
		if !reflect.DeepEqual(approval, tt.approval) {
			t.Errorf("%s: approval by default %v, want %v", tt.class, approval, tt.approval)
		}
		if !reflect.DeepEqual(repeatable, tt.repeatable) {
			t.Errorf("%s: repeatable %v, want %v", tt.class, repeatable, tt.repeatable)
		}
		if !reflect.DeepEqual(settings, tt.settings) {
			t.Errorf("%s: settings %v, want %v", tt.class, settings, tt.settings)
		}
		if spec.Description == "" || spec.Icon == "" || spec.PluginSlug != "" {
			t.Errorf("%s: description %q, icon %q, plugin %q", tt.class, spec.Description, spec.Icon, spec.PluginSlug)
		}
		if !json.Valid(tools.Schema(spec)) {
			t.Errorf("%s: schema is not JSON", tt.class)
		}
	}
}

func TestSettingTypes(t *testing.T) {
	t.Parallel()
	reg := registry(t)
	sub, _ := reg.Spec("core.SubAgentTool")
	sk, _ := reg.Spec("core.SkillTool")
	if err := tools.ValidateSettings(sub, map[string]any{"allowed_target_agents": []any{43.0, 44.0}}); err != nil {
		t.Errorf("allowed_target_agents ids: %v", err)
	}
	if err := tools.ValidateSettings(sub, map[string]any{"allowed_target_agents": []any{"43"}}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("allowed_target_agents strings: %v", err)
	}
	if err := tools.ValidateSettings(sk, map[string]any{"allowed_skills": []any{"web-research"}}); err != nil {
		t.Errorf("allowed_skills names: %v", err)
	}
	if err := tools.ValidateSettings(sk, map[string]any{"allowed_skills": []any{1}}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("allowed_skills numbers: %v", err)
	}
	// The sub-agent tool is not ready until its targets are configured.
	if _, missing := tools.Cascade(sub); !reflect.DeepEqual(missing, []string{"allowed_target_agents"}) {
		t.Errorf("sub_agent missing %v", missing)
	}
}

// TestInheritance checks that a core tool inherits the parameters of its base, first.
func TestInheritance(t *testing.T) {
	t.Parallel()
	spec := core.TimeTool{}.Spec()
	if spec.Base == nil {
		t.Fatal("TimeTool has no base")
	}
	params := tools.AllParams(spec)
	if len(params) == 0 || params[0].Name != "timezone" {
		t.Errorf("first parameter %v, want the inherited timezone", params)
	}
	want := `{"type":"object","properties":{` +
		`"action":{"type":"string","description":"The operation to perform:\n- now: Return the current date and time in the time zone.\n- format: Format a timestamp in the time zone and layout.","enum":["now","format"]},` +
		`"timezone":{"type":"string","description":"IANA time zone such as Europe/Berlin or America/New_York. Defaults to the user's time zone, else UTC."},` +
		`"timestamp":{"type":"string","description":"RFC 3339 timestamp (2025-03-02T16:05:12Z) or Unix seconds as a string."},` +
		`"layout":{"type":"string","description":"Output layout.","enum":["rfc3339","date","time","datetime","human","unix"],"default":"rfc3339"}},` +
		`"required":["action"],` +
		`"allOf":[{"if":{"properties":{"action":{"const":"format"}}},"then":{"required":["timestamp"]}}]}`
	if got := string(tools.Schema(spec)); got != want {
		t.Errorf("TimeTool schema\n got %s\nwant %s", got, want)
	}
}

// TestRecommendedSkillsShipped checks that every skill a core tool recommends is a valid
// shipped skill, and that the shipped skills load without problems.
func TestRecommendedSkillsShipped(t *testing.T) {
	t.Parallel()
	reg := registry(t)
	idx, problems := skill.NewIndex(skills.Provider())
	if len(problems) > 0 {
		t.Fatalf("shipped skills have problems: %v", problems)
	}
	if err := tools.CheckRecommendedSkills(reg, idx.Exists); err != nil {
		t.Fatal(err)
	}
	recommended := 0
	for _, spec := range reg.Specs() {
		recommended += len(spec.RecommendsSkills)
	}
	if recommended == 0 {
		t.Errorf("no core tool recommends a skill")
	}
}
