package server_test

import (
	"fmt"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// scriptedAgent makes a group named group whose default model configuration is the scripted
// driver reading script (relative to the working directory), and an agent of that group with
// operation op of tool enabled, needing approval unless autoApprove. c must be an administrator:
// scripted configurations are theirs.
func scriptedAgent(t *testing.T, c *apitest.Client, group, script, tool, op string, autoApprove bool) gen.Agent {
	t.Helper()
	var g struct {
		Data struct{ Group gen.Group } `json:"data"`
	}
	c.Post("/groups", map[string]any{"name": group}).Expect(t, 201).Decode(t, &g)
	c.Post(fmt.Sprintf("/groups/%d/llm-configs", g.Data.Group.Id), map[string]any{
		"name": "script", "driver": "scripted", "model": "script", "base_url": script, "is_default": true,
	}).Expect(t, 201)
	a := mkAgent(t, c, map[string]any{"name": group + " bot", "system_prompt": "Work.", "principal_id": g.Data.Group.PrincipalId})
	ap := fmt.Sprintf("/agents/%d/tools/%s", a.Id, tool)
	c.Post(ap+"/enable", nil).Expect(t, 200)
	c.Patch(ap+"/operations/"+op, map[string]any{"enabled": true, "auto_approve": autoApprove}).Expect(t, 200)
	return a
}

// scriptedCalcAgent is scriptedAgent with the calculator needing approval, and a key of the
// agent for the per-agent API.
func scriptedCalcAgent(t *testing.T, owner *apitest.Client, script string) chatKey {
	t.Helper()
	a := scriptedAgent(t, owner, "Calc "+script, script, "core.CalculatorTool", "calculate", false)
	return chatKey{agent: a, key: mintKey(t, owner, a.Id, "calc")}
}
