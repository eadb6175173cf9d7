package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// storedSettingValues reads the raw JSON of an agent layer, by "class.key".
func storedSettingValues(t *testing.T, s *store.Store, agentID int64) map[string]string {
	t.Helper()
	var rows []struct {
		ToolClass  string
		SettingKey string
		Value      string
		Scope      string
	}
	err := s.GormDBForTest().Table("tool_settings").Select("tool_class, setting_key, value, scope").
		Where("agent_id = ?", agentID).Scan(&rows).Error
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		if r.Scope != store.ToolScopeAgent {
			t.Errorf("setting %s.%s stored at scope %q", r.ToolClass, r.SettingKey, r.Scope)
		}
		out[r.ToolClass+"."+r.SettingKey] = r.Value
	}
	return out
}

func TestImportAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewWithClock(t, testkit.NewClock(t0).Now)
	owner := storetest.User(t, s)

	settings := map[string]any{
		"allowed_domains": []any{"a.example", "<b>.example"},
		"max_bytes":       int64(4096),
		"ratio":           2.5,
		"flag":            true,
		"user_agent":      "bot & co",
		"gone":            nil,
	}
	a, err := s.ImportAgent(ctx, owner.PrincipalID, store.AgentFields{
		Name: ptr("Imported"), Description: ptr("desc"), SystemPrompt: ptr("prompt"), Notes: ptr("notes"),
		MaxSteps: ptr(20), AllowFollowup: ptr(false), RetryAfterMinutes: ptr(5), MaxRetries: ptr(2),
		Metadata: &map[string]any{"category": "research", "variant_key": "v1"},
	}, []store.ImportedTool{
		{ToolClass: "core.TimeTool", Operations: map[string]store.ToolOperationOverride{
			"now":    {AutoApprove: ptr(true)},
			"format": {Enabled: ptr(false), AutoApprove: ptr(false)},
			"noop":   {},
		}},
		{ToolClass: "core.ReadURLTool", Settings: settings},
	}, []string{"The team meets on Mondays.", "Reports go out on Fridays."})
	wantErr(t, err, nil)
	if a.ID == 0 || a.PrincipalID != owner.PrincipalID || a.Name != "Imported" || a.Description != "desc" || a.SystemPrompt != "prompt" ||
		a.Notes != "notes" || a.MaxSteps != 20 || a.AllowFollowup || a.RetryAfterMinutes != 5 || a.MaxRetries != 2 ||
		!reflect.DeepEqual(a.Metadata, map[string]any{"category": "research", "variant_key": "v1"}) || !a.CreatedAt.Equal(t0.Truncate(time.Microsecond)) {
		t.Fatalf("agent = %+v", a)
	}
	got, err := s.Agent(ctx, a.ID, owner.ID)
	wantErr(t, err, nil)
	if !reflect.DeepEqual(got, a) {
		t.Fatalf("stored agent %+v, returned %+v", got, a)
	}
	mems, _, err := s.RecallMemories(ctx, store.MemoryQuery{AgentID: a.ID, Text: "mondays", Limit: 5})
	if err != nil || len(mems) != 1 || mems[0].UserID != nil || mems[0].TaskID != nil {
		t.Fatalf("imported memories = %+v, %v", mems, err)
	}

	cfg, err := s.AgentToolConfig(ctx, a.ID)
	wantErr(t, err, nil)
	if !reflect.DeepEqual(cfg.Enabled, map[string]bool{"core.TimeTool": true, "core.ReadURLTool": true}) {
		t.Fatalf("enabled = %v", cfg.Enabled)
	}
	wantOps := map[string]map[string]store.ToolOperationOverride{"core.TimeTool": {
		"now": {AutoApprove: ptr(true)}, "format": {Enabled: ptr(false), AutoApprove: ptr(false)},
	}}
	if !reflect.DeepEqual(cfg.Operations, wantOps) {
		t.Fatalf("operations = %#v", cfg.Operations)
	}
	if _, ok := cfg.Agent["core.TimeTool"]; ok || len(cfg.Agent) != 1 {
		t.Fatalf("agent layers = %v", cfg.Agent)
	}
	wantLayer := map[string]any{
		"allowed_domains": []any{"a.example", "<b>.example"}, "max_bytes": json.Number("4096"),
		"ratio": json.Number("2.5"), "flag": true, "user_agent": "bot & co",
	}
	if !reflect.DeepEqual(cfg.Agent["core.ReadURLTool"].Values, wantLayer) {
		t.Fatalf("agent layer = %#v", cfg.Agent["core.ReadURLTool"].Values)
	}

	// The values are encoded exactly as the tool configuration stores them.
	twin := storetest.Agent(t, s, owner.PrincipalID, storetest.AgentNamed("Twin"))
	_, err = s.ReplaceAgentToolSettings(ctx, twin.ID, "core.ReadURLTool", nil, func(map[string]any) (map[string]any, error) {
		return settings, nil
	})
	wantErr(t, err, nil)
	if imported, configured := storedSettingValues(t, s, a.ID), storedSettingValues(t, s, twin.ID); !reflect.DeepEqual(imported, configured) {
		t.Fatalf("imported values %v, configured %v", imported, configured)
	}

	// An agent without tools.
	bare, err := s.ImportAgent(ctx, owner.PrincipalID, store.AgentFields{Name: ptr("Bare")}, nil, nil)
	wantErr(t, err, nil)
	if bare.MaxSteps != limits.DefaultSteps || !bare.AllowFollowup || len(bare.Metadata) != 0 {
		t.Fatalf("bare = %+v", bare)
	}
	if n := countRows(t, s, "agent_tools", "agent_id = ?", bare.ID); n != 0 {
		t.Fatalf("bare agent has %d tools", n)
	}
}

func TestImportAgentRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	owner := storetest.User(t, s)
	name := ptr("Agent")
	tool := func(class string) store.ImportedTool { return store.ImportedTool{ToolClass: class} }

	tests := []struct {
		name      string
		principal int64
		fields    store.AgentFields
		tools     []store.ImportedTool
	}{
		// The field and tool rules are checked before the store (agent.CheckFields,
		// toolconfig.CheckImportedTools, tested there); the store refuses an unknown principal and
		// keeps the settings encoder's size guard.
		{name: "unknown principal", principal: 999999, fields: store.AgentFields{Name: name}, tools: []store.ImportedTool{tool("core.TimeTool")}},
		{name: "bad setting key", fields: store.AgentFields{Name: name}, tools: []store.ImportedTool{{ToolClass: "core.ReadURLTool",
			Settings: map[string]any{"has space": "x"}}}},
		{name: "oversize setting", fields: store.AgentFields{Name: name}, tools: []store.ImportedTool{{ToolClass: "core.ReadURLTool",
			Settings: map[string]any{"user_agent": strings.Repeat("u", store.MaxToolSettingValueLen)}}}},
		{name: "unencodable setting", fields: store.AgentFields{Name: name}, tools: []store.ImportedTool{{ToolClass: "core.ReadURLTool",
			Settings: map[string]any{"user_agent": func() {}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.principal
			if p == 0 {
				p = owner.PrincipalID
			}
			_, err := s.ImportAgent(ctx, p, tc.fields, tc.tools, nil)
			wantErr(t, err, svcerr.ErrInvalid)
		})
	}
	for _, table := range []string{"agents", "agent_tools", "agent_tool_operations", "tool_settings"} {
		if n := countRows(t, s, table, "1 = 1"); n != 0 {
			t.Errorf("refused imports left %d rows in %s", n, table)
		}
	}
}

func TestInheritedToolSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	owner := storetest.User(t, s, storetest.Email("owner@example.com"))
	other := storetest.User(t, s, storetest.Email("other@example.com"))
	gid, gp := mustGroup(t, s, "Team", map[int64]string{owner.ID: store.GroupRoleOwner})
	const class = "core.ReadURLTool"
	set := func(v map[string]any) store.SettingsEdit {
		return func(map[string]any) (map[string]any, error) { return v, nil }
	}
	_, err := s.EditToolSettings(ctx, store.GlobalToolScope(), class, set(map[string]any{"max_bytes": 10}))
	wantErr(t, err, nil)
	_, err = s.EditToolSettings(ctx, store.UserToolScope(owner.ID), class, set(map[string]any{"user_agent": "owner"}))
	wantErr(t, err, nil)
	_, err = s.EditToolSettings(ctx, store.UserToolScope(other.ID), class, set(map[string]any{"user_agent": "other"}))
	wantErr(t, err, nil)
	_, err = s.UpsertGroupTool(ctx, gid, class, nil, nil, set(map[string]any{"user_agent": "group"}))
	wantErr(t, err, nil)
	agent := storetest.Agent(t, s, owner.PrincipalID)
	_, err = s.ReplaceAgentToolSettings(ctx, agent.ID, class, nil, set(map[string]any{"user_agent": "agent"}))
	wantErr(t, err, nil)

	values := func(layers []map[string]*store.ToolSettings) []map[string]any {
		var out []map[string]any
		for _, l := range layers {
			var v map[string]any
			if ts := l[class]; ts != nil {
				v = ts.Values
			}
			out = append(out, v)
		}
		return out
	}
	global := map[string]any{"max_bytes": json.Number("10")}
	tests := []struct {
		name      string
		principal int64
		want      []map[string]any
	}{
		{"personal", owner.PrincipalID, []map[string]any{global, {"user_agent": "owner"}}},
		{"group", gp, []map[string]any{global, {"user_agent": "group"}}},
		{"unknown", 999999, []map[string]any{global}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layers, err := s.InheritedToolSettings(ctx, tc.principal)
			wantErr(t, err, nil)
			if got := values(layers); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("layers = %v, want %v", got, tc.want)
			}
		})
	}
}
