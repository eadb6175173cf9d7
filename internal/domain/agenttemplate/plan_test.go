package agenttemplate_test

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	doc := `{
		"id": "helper", "name": "Helper", "description": "Template description.", "version": "1.0.0",
		"agent": {"system_prompt": "", "max_steps": 30},
		"tools": [
			{"tool_class": "core.TimeTool", "enabled": true, "operations": [{"name": "now", "auto_approve": true}, {"name": "yesterday"}]},
			{"tool_class": "ghost.Tool", "enabled": true, "operations": []},
			{"tool_class": "core.CalculatorTool", "enabled": false, "operations": [{"name": "calculate"}]},
			{"tool_class": "acme.WeatherTool", "enabled": true, "operations": [{"name": "forecast", "enabled": false}],
			 "settings": {"days": 4, "units": "", "cities": null, "region": "eu"}},
			{"tool_class": "core.SkillTool", "enabled": true, "operations": [],
			 "settings": {"allowed_skills": ["pdf", "ghost", "summarize"]}}
		],
		"required_plugins": ["acme/weather", "acme/news"],
		"metadata": {"category": "fun", "palette_key": "red"}
	}`
	cat := testCatalog()
	in := agenttemplate.Input{Raw: []byte(doc), ContentType: "application/json"}
	tpl, rep := agenttemplate.Parse(in)
	if !rep.Valid {
		t.Fatal(rep.Errors)
	}
	plan, findings := agenttemplate.Plan(tpl, cat)
	want := agenttemplate.ImportPlan{
		Agent: agenttemplate.AgentPlan{
			Name: "Helper", Description: "Template description.", MaxSteps: 30, AllowFollowup: true,
		},
		Metadata: agenttemplate.Metadata{Category: "fun", Icon: "puzzle", VariantKey: agenttemplate.VariantKey("helper"), PaletteKey: "red"},
		Tools: []agenttemplate.ToolPlan{
			{ToolClass: "core.TimeTool", Operations: []agenttemplate.Operation{{Name: "now", AutoApprove: ptr(true)}}},
			{
				ToolClass: "acme.WeatherTool", Operations: []agenttemplate.Operation{{Name: "forecast", Enabled: ptr(false)}},
				Settings: map[string]any{"days": int64(4), "region": "eu"}, MissingRequired: []string{"endpoint"},
			},
			{ToolClass: "core.SkillTool", Operations: []agenttemplate.Operation{}, Settings: map[string]any{"allowed_skills": []any{"pdf", "summarize"}}},
		},
		MissingPlugins: []string{"acme/news"},
	}
	if diff := cmp.Diff(want, plan); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	wantFindings := []string{
		"SYSTEM_PROMPT_MISSING /agent/system_prompt",
		"OPERATION_UNKNOWN /tools/0/operations/1/name",
		"TOOL_PLUGIN_MISSING /tools/1/tool_class",
		"TOOL_NEEDS_CONFIGURATION /tools/3",
		"SKILL_MISSING /tools/4/settings/allowed_skills/1",
		"PLUGIN_MISSING /required_plugins/1",
		"METADATA_CATEGORY_UNKNOWN /metadata/category",
	}
	if diff := cmp.Diff(wantFindings, summarize(findings)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	// The import's warnings are exactly the validation warnings.
	if diff := cmp.Diff(agenttemplate.Validate(in, cat).Warnings, findings); diff != "" {
		t.Errorf("Plan and Validate warnings differ (-validate +plan):\n%s", diff)
	}
	// Plan leaves the template alone.
	if tpl.Metadata.Icon != "" || tpl.Agent.MaxSteps == nil || tpl.Agent.AllowFollowup != nil {
		t.Errorf("Plan changed the template: %+v %+v", tpl.Agent, tpl.Metadata)
	}

	// Without a catalog everything enabled is kept as written.
	plan, findings = agenttemplate.Plan(tpl, nil)
	if len(plan.Tools) != 4 || len(plan.Tools[0].Operations) != 2 || len(findings) != 2 || plan.MissingPlugins != nil {
		t.Errorf("nil catalog: %+v %v", plan, findings)
	}
}

// TestPlanOnHandBuiltTemplate: a template that skipped Parse still cannot smuggle secrets or
// undeclared settings into the plan.
func TestPlanOnHandBuiltTemplate(t *testing.T) {
	t.Parallel()
	tpl := &agenttemplate.Template{ID: "x", Name: "X", Version: "1.0.0", Agent: agenttemplate.Agent{SystemPrompt: "p"},
		Tools: []agenttemplate.Tool{{ToolClass: "acme.WeatherTool", Enabled: true, Settings: map[string]any{
			"api_key": "secret", "bogus": 1, "days": "three", "endpoint": "https://x",
		}}}}
	plan, findings := agenttemplate.Plan(tpl, testCatalog())
	if diff := cmp.Diff(map[string]any{"endpoint": "https://x"}, plan.Tools[0].Settings); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	want := []string{
		"SETTINGS_PASSWORD_KEY_FORBIDDEN /tools/0/settings/api_key",
		"SETTINGS_UNKNOWN_KEY /tools/0/settings/bogus",
		"SETTINGS_INVALID_VALUE_TYPE /tools/0/settings/days",
	}
	if diff := cmp.Diff(want, summarize(findings)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestPlanWarningsMatchValidate over generated templates: whatever a valid template looks
// like, the import reports the warnings validation reported.
func TestPlanWarningsMatchValidate(t *testing.T) {
	t.Parallel()
	cat := testCatalog()
	cat.skills = []string{"summarize"}
	g := &generator{r: rand.New(rand.NewPCG(7, 7))}
	checked := 0
	for range 3000 {
		doc := g.template()
		if g.chance(0.5) {
			g.mutate(doc)
		}
		in := agenttemplate.Input{Raw: mustJSON(t, doc), ContentType: "application/json", Source: "uploaded"}
		rep := agenttemplate.Validate(in, cat)
		tpl, prep := agenttemplate.Parse(in)
		if (tpl != nil) != prep.Valid {
			t.Fatalf("Parse returned %v with report %+v", tpl, prep)
		}
		if !rep.Valid {
			continue
		}
		_, findings := agenttemplate.Plan(tpl, cat)
		if diff := cmp.Diff(rep.Warnings, findings); diff != "" {
			t.Fatalf("warnings differ (-validate +plan):\n%s\n%s", diff, in.Raw)
		}
		checked++
	}
	if checked < 1000 {
		t.Errorf("only %d valid templates", checked)
	}
}
