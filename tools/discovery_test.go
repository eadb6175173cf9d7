package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/agentsvc/svc/tools"
)

func TestDiscoveryJSON(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	weather := settingsSpec()
	weather.Description = "Weather forecasts."
	weather.Operations = []tools.Operation{
		{Name: "forecast", Description: "Forecast.", EnabledByDefault: true},
		{Name: "alerts", Description: "Alerts.", RequiresApprovalByDefault: true},
	}
	clock := tools.Spec{
		Class: "core.TimeTool", Name: "time", Description: "Time.", DisplayName: "Time",
		Operations: []tools.Operation{{Name: "now", Description: "Now.", EnabledByDefault: true}},
	}
	for _, s := range []tools.Spec{weather, clock} {
		if err := reg.Register(fake{s}); err != nil {
			t.Fatal(err)
		}
	}
	yes, no := true, false
	states := map[string]tools.ToolState{
		"weather.ForecastTool": {
			Enabled: true,
			Layers:  []map[string]any{{"city": "Oslo"}, nil, nil, {"units": "imperial"}},
			Overrides: map[string]tools.OperationOverride{
				"forecast": {Enabled: &no},
				"alerts":   {Enabled: &yes, AutoApprove: &yes},
			},
		},
	}
	d := tools.NewDiscovery(reg, states, []string{"web-research", "gone", "web-research"}, []tools.SkillSummary{
		{Name: "scheduling", Description: "Plan runs."},
		{Name: "web-research", Description: "Research."},
	})
	got, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":2,"count":2,"tools":[` +
		`{"tool_class":"core.TimeTool","display_name":"Time","description":"Time.","plugin_slug":null,` +
		`"enabled":false,"ready_to_enable":true,"missing_required":[],` +
		`"operations":[{"name":"now","description":"Now.","enabled":true,"requires_approval":false}]},` +
		`{"tool_class":"weather.ForecastTool","display_name":"ForecastTool","description":"Weather forecasts.","plugin_slug":"weather",` +
		`"enabled":true,"ready_to_enable":false,"missing_required":["api_key"],` +
		`"operations":[{"name":"forecast","description":"Forecast.","enabled":false,"requires_approval":false},` +
		`{"name":"alerts","description":"Alerts.","enabled":true,"requires_approval":false}]}],` +
		`"skills":{"allowed":["web-research"],"visible":[` +
		`{"name":"scheduling","description":"Plan runs.","active":false},` +
		`{"name":"web-research","description":"Research.","active":true}]}}`
	if string(got) != want {
		t.Errorf("discovery\n got %s\nwant %s", got, want)
	}
}

func TestDiscoveryEmpty(t *testing.T) {
	t.Parallel()
	got, err := json.Marshal(tools.NewDiscovery(tools.NewRegistry(), nil, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":2,"count":0,"tools":[],"skills":{"allowed":[],"visible":[]}}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestOperationOverrideEffective(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	op := tools.Operation{Name: "x", EnabledByDefault: true, RequiresApprovalByDefault: true}
	tests := []struct {
		o                    tools.OperationOverride
		enabled, needsApprov bool
	}{
		{tools.OperationOverride{}, true, true},
		{tools.OperationOverride{Enabled: &no}, false, true},
		{tools.OperationOverride{AutoApprove: &yes}, true, false},
		{tools.OperationOverride{AutoApprove: &no}, true, true},
		{tools.OperationOverride{Enabled: &yes, AutoApprove: &no}, true, true},
	}
	for i, tt := range tests {
		e, a := tt.o.Effective(op)
		if e != tt.enabled || a != tt.needsApprov {
			t.Errorf("%d: got %v %v, want %v %v", i, e, a, tt.enabled, tt.needsApprov)
		}
	}
	e, a := (tools.OperationOverride{AutoApprove: &no}).Effective(tools.Operation{})
	if e || !a {
		t.Errorf("auto_approve false on an unapproved op: %v %v", e, a)
	}
}
