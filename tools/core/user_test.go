package core_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

func TestUserInfo(t *testing.T) {
	t.Parallel()
	deps := core.Deps{Users: fakeUsers{tz: "Europe/London"}}
	res, err := exec(t, deps, "core.UserInfoTool", tools.Call{Operation: "get_base_data", OwnerUserID: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := "Name: Ada Lovelace\nEmail: ada@example.com\nLocale: en-GB\nTime zone: Europe/London\nAbout: Mathematician"
	if res.Content != want {
		t.Errorf("content %q", res.Content)
	}
	res, err = exec(t, deps, "core.UserInfoTool", tools.Call{Operation: "get_locations", OwnerUserID: 3})
	if err != nil || res.Content != "- Home (default): 12 St James's Square, London [51.5074, -0.1278]\n- Office" {
		t.Errorf("locations %q, %v", res.Content, err)
	}
	res, err = exec(t, deps, "core.UserInfoTool", tools.Call{Operation: "get_locations", OwnerUserID: 3, Args: map[string]any{"default_only": true}})
	var data struct{ Locations []map[string]any }
	if err != nil || json.Unmarshal(res.Data, &data) != nil || len(data.Locations) != 1 || data.Locations[0]["name"] != "Home" {
		t.Errorf("default only %s, %v", res.Data, err)
	}

	tests := []struct {
		name    string
		deps    core.Deps
		call    tools.Call
		wantErr string
	}{
		{"no owner", deps, tools.Call{Operation: "get_base_data"}, "no user owns this agent"},
		{"no owner locations", deps, tools.Call{Operation: "get_locations"}, "no user owns this agent"},
		{"owner gone", core.Deps{Users: fakeUsers{missing: true}}, tools.Call{Operation: "get_base_data", OwnerUserID: 3}, "no longer exists"},
		{"owner gone locations", core.Deps{Users: fakeUsers{missing: true}}, tools.Call{Operation: "get_locations", OwnerUserID: 3}, "no longer exists"},
		{"no source", core.Deps{}, tools.Call{Operation: "get_base_data", OwnerUserID: 3}, "not available"},
		{"bad default_only", deps, tools.Call{Operation: "get_locations", OwnerUserID: 3, Args: map[string]any{"default_only": "yes"}}, "boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := exec(t, tt.deps, "core.UserInfoTool", tt.call)
			wantToolErr(t, err, tt.wantErr)
		})
	}
	// A store failure is not the model's business: it fails the task.
	_, err = exec(t, core.Deps{Users: fakeUsers{fail: true}}, "core.UserInfoTool", tools.Call{Operation: "get_base_data", OwnerUserID: 3})
	var te *tools.ToolError
	if err == nil || errors.As(err, &te) {
		t.Errorf("store failure: %v", err)
	}
}
