package toolconfig_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools/toolconfig"
)

// TestCheckImportedTools holds the tool rules of an agent import, which the store applied
// before they moved here.
func TestCheckImportedTools(t *testing.T) {
	t.Parallel()
	yes := true
	tool := func(class string) store.ImportedTool { return store.ImportedTool{ToolClass: class} }
	tests := []struct {
		name  string
		tools []store.ImportedTool
		ok    bool
	}{
		{name: "none", ok: true},
		{name: "two tools", tools: []store.ImportedTool{tool("core.TimeTool"), {ToolClass: "core.ReadURLTool",
			Operations: map[string]store.ToolOperationOverride{"read": {Enabled: &yes}}, Settings: map[string]any{"user_agent": "x", "unset": nil}}}, ok: true},
		{name: "empty class", tools: []store.ImportedTool{tool("")}},
		{name: "long class", tools: []store.ImportedTool{tool("core." + strings.Repeat("x", store.MaxToolClassLen))}},
		{name: "class twice", tools: []store.ImportedTool{tool("core.TimeTool"), tool("core.TimeTool")}},
		{name: "long operation", tools: []store.ImportedTool{{ToolClass: "core.TimeTool",
			Operations: map[string]store.ToolOperationOverride{strings.Repeat("o", store.MaxToolOperationLen+1): {Enabled: &yes}}}}},
		{name: "bad setting key", tools: []store.ImportedTool{{ToolClass: "core.ReadURLTool", Settings: map[string]any{"has space": "x"}}}},
		{name: "oversize setting", tools: []store.ImportedTool{{ToolClass: "core.ReadURLTool",
			Settings: map[string]any{"user_agent": strings.Repeat("u", store.MaxToolSettingValueLen)}}}},
		{name: "unencodable setting", tools: []store.ImportedTool{{ToolClass: "core.ReadURLTool", Settings: map[string]any{"user_agent": func() {}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := toolconfig.CheckImportedTools(tc.tools)
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, svcerr.ErrInvalid)) {
				t.Fatalf("CheckImportedTools = %v, want ok %v or ErrInvalid", err, tc.ok)
			}
		})
	}
}
