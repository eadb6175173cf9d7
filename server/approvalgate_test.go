package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// TestApprovalGatePolicies is issue 26 items 4 and 5 over the API: a group's approval policy
// allows and denies calls by argument, the approval flag asks the rest, an unresolvable call
// (the time tool called with {}) is refused before approval, the event log says which rule or
// refusal decided, an approval with allow_for_task is recorded, and bad policies are refused
// naming the field path.
func TestApprovalGatePolicies(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	script := `[
	  {"tool_calls": [
	    {"id": "c1", "name": "calculator", "arguments": {"expression": "1+1"}},
	    {"id": "c2", "name": "calculator", "arguments": {"expression": "9/0"}},
	    {"id": "c3", "name": "calculator", "arguments": {"expression": "2*2"}},
	    {"id": "c4", "name": "time", "arguments": {}}
	  ]},
	  {"text": "Done."}
	]`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t)
	c, _ := env.UserClient("ada@example.com")
	var g struct {
		Data struct{ Group gen.Group } `json:"data"`
	}
	c.Post("/groups", map[string]any{"name": "Policies"}).Expect(t, 201).Decode(t, &g)
	gid := g.Data.Group.Id
	c.Post(fmt.Sprintf("/groups/%d/llm-configs", gid), map[string]any{
		"name": "script", "driver": "scripted", "model": "script", "base_url": "script.json", "is_default": true,
	}).Expect(t, 201)
	a := mkAgent(t, c, map[string]any{"name": "Policy bot", "system_prompt": "Work.", "principal_id": g.Data.Group.PrincipalId})
	tools := fmt.Sprintf("/agents/%d/tools/", a.Id)
	c.Post(tools+"core.CalculatorTool/enable", nil).Expect(t, 200)
	c.Patch(tools+"core.CalculatorTool/operations/calculate", map[string]any{"enabled": true, "auto_approve": false}).Expect(t, 200)
	c.Post(tools+"core.TimeTool/enable", nil).Expect(t, 200)

	// Refused writes name the field path and write nothing.
	for _, bad := range []struct {
		policy any
		want   string
	}{
		{map[string]any{"calculate": []any{map[string]any{"action": "allow", "when": map[string]any{"expression": map[string]any{"pattern": "("}}}}}, "approval_policy.calculate[0].when.expression.pattern"},
		{map[string]any{"explode": []any{}}, "approval_policy.explode: the tool has no operation"},
		{map[string]any{"calculate": []any{map[string]any{"action": "maybe"}}}, "/settings/approval_policy/calculate/0/action"},
	} {
		for _, path := range []string{tools + "core.CalculatorTool/override", fmt.Sprintf("/groups/%d/tools/core.CalculatorTool", gid)} {
			var r *apitest.Response
			if strings.HasPrefix(path, "/groups") {
				r = c.Post(path, map[string]any{"settings": map[string]any{"approval_policy": bad.policy}})
			} else {
				r = c.Put(path, map[string]any{"settings": map[string]any{"approval_policy": bad.policy}})
			}
			r.Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
			if !strings.Contains(string(r.Body), bad.want) {
				t.Errorf("%s: %s does not name %q", path, r.Body, bad.want)
			}
		}
	}
	c.Get(fmt.Sprintf("/groups/%d/tools", gid)).Expect(t, 200)
	c.Put("/tools/core.CalculatorTool/settings", map[string]any{"settings": map[string]any{"approval_policy": map[string]any{}}}).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")

	// The group's policy applies to its agents.
	policy := map[string]any{"calculate": []any{
		map[string]any{"when": map[string]any{"expression": map[string]any{"prefix": "1+"}}, "action": "allow"},
		map[string]any{"when": map[string]any{"expression": map[string]any{"pattern": "/0$"}}, "action": "deny", "reason": "No division by zero."},
	}}
	var gt struct {
		Data struct{ Tool gen.GroupTool } `json:"data"`
	}
	c.Post(fmt.Sprintf("/groups/%d/tools/core.CalculatorTool", gid), map[string]any{"enabled": false, "settings": map[string]any{"approval_policy": policy}}).
		Expect(t, 200).Decode(t, &gt)

	var created gen.TaskResponse
	c.Post("/tasks", map[string]any{"agent_id": a.Id, "prompt": "compute"}).Expect(t, 201).Decode(t, &created)
	id := created.Data.Task.Id
	if tk := runQueued(t, env.App); tk.Status != taskstate.PendingApproval {
		t.Fatalf("first step: %s", tk.Status)
	}
	if tk := getTask(t, c, id); tk.Pending == nil || len(tk.Pending.ToolCalls) != 1 || tk.Pending.ToolCalls[0].ProviderCallId != "c3" {
		t.Fatalf("pending: %+v (only c3 is asked)", tk.Pending)
	}
	// allow_for_task is for approvals only; with one it is recorded on the call.
	c.Post(taskPath(id, "approve"), map[string]any{"decisions": []map[string]any{{"provider_call_id": "c3", "decision": "reject", "allow_for_task": true}}}).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	c.Post(taskPath(id, "approve"), map[string]any{"decisions": []map[string]any{{"provider_call_id": "c3", "decision": "approve", "allow_for_task": true}}}).
		Expect(t, http.StatusOK)
	if tk := runQueued(t, env.App); tk.Status != taskstate.Completed {
		t.Fatalf("after approval: %s", tk.Status)
	}
	// The event log (complete now that the run ended) says who or what decided each call.
	calls := lastToolCalls(t, c, id)
	want := map[string]struct {
		status gen.TaskToolCallStatus
		by     string
		rule   int64
	}{
		"c1": {gen.TaskToolCallStatusEXECUTED, "policy", 1},
		"c2": {gen.TaskToolCallStatusREJECTED, "policy", 2},
		"c3": {gen.TaskToolCallStatusEXECUTED, "user:", 0},
		"c4": {gen.TaskToolCallStatusREJECTED, "refused", 0},
	}
	for pid, w := range want {
		tc, ok := calls[pid]
		if !ok {
			t.Fatalf("no event of %s", pid)
		}
		by := ""
		if tc.DecidedBy != nil {
			by = *tc.DecidedBy
		}
		var rule int64
		if tc.PolicyRule != nil {
			rule = *tc.PolicyRule
		}
		if tc.Status != w.status || !strings.HasPrefix(by, w.by) || (w.by == "") != (by == "") || rule != w.rule {
			t.Errorf("%s: %s by %q rule %d, want %s by %q rule %d", pid, tc.Status, by, rule, w.status, w.by, w.rule)
		}
	}
	if r := calls["c2"].Reason; r == nil || *r != "No division by zero." {
		t.Errorf("c2 reason %v", r)
	}
	if r := calls["c4"].Result; r == nil || !strings.Contains(*r, `missing argument \"action\"`) {
		t.Errorf("c4 result %v", calls["c4"].Result)
	}

	if tc := calls["c3"]; !tc.AllowForTask {
		t.Fatalf("c3 after approval: %+v", tc)
	}
}

// lastToolCalls reads task id's event log and returns each call as its last event shows it.
func lastToolCalls(t *testing.T, c *apitest.Client, id int64) map[string]gen.TranscriptToolCall {
	t.Helper()
	out := map[string]gen.TranscriptToolCall{}
	for _, ev := range parseSSE(t, string(c.Get(fmt.Sprintf("/tasks/%d/events", id)).Expect(t, http.StatusOK).Body)) {
		if ev.Data.ToolCall != nil {
			out[ev.Data.ToolCall.ProviderCallId] = *ev.Data.ToolCall
		}
	}
	return out
}

// TestApprovalPolicyTemplateRoundTrip: an agent's approval policy travels in its template
// (with or without settings), comes back at the imported agent's layer, and a template whose
// policy names an unknown operation is refused with APPROVAL_POLICY_INVALID.
func TestApprovalPolicyTemplateRoundTrip(t *testing.T) {
	env := apitest.New(t)
	c, _ := env.UserClient("ada@example.com")
	a := mkAgent(t, c, map[string]any{"name": "Exporter", "system_prompt": "Work."})
	path := fmt.Sprintf("/agents/%d", a.Id)
	c.Post(path+"/tools/core.TimeTool/enable", nil).Expect(t, 200)
	policy := map[string]any{"format": []any{
		map[string]any{"when": map[string]any{"layout": map[string]any{"in": []any{"unix", "date"}}}, "action": "allow"},
		map[string]any{"action": "deny", "reason": "Only unix and date."},
	}}
	c.Put(path+"/tools/core.TimeTool/override", map[string]any{"settings": map[string]any{"approval_policy": policy}}).Expect(t, 200)

	res := c.Get(path+"/export").Expect(t, 200)
	var raw struct {
		Data struct {
			Template map[string]any `json:"template"`
		} `json:"data"`
	}
	res.Decode(t, &raw)
	tl := raw.Data.Template["tools"].([]any)[0].(map[string]any)
	if got, want := tplJSON(t, tl["approval_policy"]), tplJSON(t, policy); got != want {
		t.Fatalf("exported policy %s, want %s", got, want)
	}
	raw.Data.Template["id"], raw.Data.Template["name"] = "imported", "Imported"
	doc := tplJSON(t, raw.Data.Template)
	imp := tplImport(t, c, "", "application/json", doc)
	var layer struct {
		Data struct {
			Override struct {
				Settings map[string]any `json:"settings"`
			} `json:"override"`
		} `json:"data"`
	}
	c.Get(fmt.Sprintf("/agents/%d/tools/core.TimeTool/override", imp.Data.Agent.Id)).Expect(t, 200).Decode(t, &layer)
	if got, want := tplJSON(t, layer.Data.Override.Settings["approval_policy"]), tplJSON(t, policy); got != want {
		t.Fatalf("imported policy %s, want %s", got, want)
	}

	tl["approval_policy"] = map[string]any{"explode": []any{map[string]any{"action": "ask"}}}
	v := tplValidate(t, c, "application/json", tplJSON(t, raw.Data.Template))
	if v.Data.Valid || len(v.Data.Errors) != 1 || v.Data.Errors[0].Code != "APPROVAL_POLICY_INVALID" || v.Data.Errors[0].Path != "/tools/0/approval_policy" {
		t.Fatalf("findings %+v", v.Data.Errors)
	}
}
