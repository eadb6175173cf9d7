package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// TestScheduleToolRuns: an agent with the schedule tool creates a prompt template and a
// scheduled run from it, lists its runs, pauses the run (an update that keeps what it does not
// name), and has refusals (a bad cron expression, an unknown run, another agent's run) reported
// to the model as the service's message; the one run is visible through the API.
func TestScheduleToolRuns(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	script := `[
	  {"tool_calls": [{"id": "t1", "name": "schedule", "arguments": {"action": "create_prompt_template", "name": "Digest",
	     "template": "Summarise {{topic}}.", "variables": [{"key": "topic", "default_value": "the news"}]}}]},
	  {"tool_calls": [{"id": "s1", "name": "schedule", "arguments": {"action": "create_schedule", "name": "Mornings",
	     "template_id": TEMPLATE, "cron_expression": "0 7 * * *", "timezone": "Europe/Berlin"}}]},
	  {"tool_calls": [{"id": "s2", "name": "schedule", "arguments": {"action": "create_schedule", "name": "Broken",
	     "prompt": "x", "cron_expression": "not a cron"}}]},
	  {"tool_calls": [{"id": "l1", "name": "schedule", "arguments": {"action": "list_schedules"}}]},
	  {"tool_calls": [{"id": "u1", "name": "schedule", "arguments": {"action": "update_schedule", "schedule_id": OWN, "is_active": false}}]},
	  {"tool_calls": [{"id": "u2", "name": "schedule", "arguments": {"action": "update_schedule", "schedule_id": 999, "name": "Nope"}}]},
	  {"tool_calls": [{"id": "r1", "name": "schedule", "arguments": {"action": "read_schedule", "schedule_id": FOREIGN}}]},
	  {"text": "Scheduled."}
	]`
	env := apitest.New(t)
	c, _ := env.UserClient("ada@example.com")
	// Another agent of the same user has the first run of the database: the tool, acting for
	// this agent, must not reach it. The template is the database's first; this agent's run its
	// second.
	other := mkAgent(t, c, map[string]any{"name": "Other", "system_prompt": "x"})
	c.Post(fmt.Sprintf("/agents/%d/scheduled-runs", other.Id), map[string]any{"name": "Theirs", "prompt": "hi", "cron_expression": "0 7 * * *"}).Expect(t, 201)
	script = strings.NewReplacer("TEMPLATE", "1", "FOREIGN", "1", "OWN", "2").Replace(script)
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	a := scriptedAgent(t, c, "Planner", "s.json", "core.ScheduleTool", "create_prompt_template", true)
	ap := fmt.Sprintf("/agents/%d/tools/core.ScheduleTool/operations/", a.Id)
	for _, op := range []string{"create_schedule", "list_schedules", "update_schedule", "read_schedule"} {
		c.Patch(ap+op, map[string]any{"enabled": true, "auto_approve": true}).Expect(t, 200)
	}
	var created struct {
		Data struct{ Task struct{ Id int64 } } `json:"data"`
	}
	c.Post("/tasks", map[string]any{"agent_id": a.Id, "prompt": "Plan my mornings."}).Expect(t, 201).Decode(t, &created)
	tk := runQueued(t, env.App)
	if tk.Status != taskstate.Completed {
		t.Fatalf("task %s (%+v)", tk.Status, tk.Error)
	}
	calls, err := env.App.Store.ToolCalls(context.Background(), tk.ID)
	if err != nil || len(calls) != 7 {
		t.Fatalf("calls = %d, %v", len(calls), err)
	}
	results := map[string]string{}
	for _, call := range calls {
		results[call.ProviderCallID] = string(call.Result)
	}
	if !strings.Contains(results["s1"], `"next_run_at"`) || !strings.Contains(results["s1"], "Europe/Berlin") {
		t.Fatalf("create_schedule result = %s", results["s1"])
	}
	if !strings.Contains(results["s2"], "cron_expression") {
		t.Fatalf("refused create_schedule result = %s", results["s2"])
	}
	if !strings.Contains(results["l1"], "Mornings") || strings.Contains(results["l1"], "Broken") || strings.Contains(results["l1"], "Theirs") {
		t.Fatalf("list_schedules result = %s", results["l1"])
	}
	// An update changes what it names and keeps the rest.
	if u := results["u1"]; !strings.Contains(u, `"is_active":false`) || !strings.Contains(u, `"cron_expression":"0 7 * * *"`) || !strings.Contains(u, "Mornings") {
		t.Fatalf("update_schedule result = %s", u)
	}
	// An unknown run is the service's refusal, told to the model; nothing is written.
	if u := results["u2"]; !strings.Contains(u, "not found") {
		t.Fatalf("update of an unknown run: %s", u)
	}
	if r := results["r1"]; !strings.Contains(r, "not found") || strings.Contains(r, "Theirs") {
		t.Fatalf("read of another agent's run: %s", r)
	}
	var runs struct {
		Data struct {
			ScheduledRuns []struct {
				Name       string
				TemplateId *int64 `json:"template_id"`
			} `json:"scheduled_runs"`
		} `json:"data"`
	}
	c.Get(fmt.Sprintf("/agents/%d/scheduled-runs", a.Id)).Expect(t, 200).Decode(t, &runs)
	if len(runs.Data.ScheduledRuns) != 1 || runs.Data.ScheduledRuns[0].Name != "Mornings" || runs.Data.ScheduledRuns[0].TemplateId == nil {
		t.Fatalf("scheduled runs = %+v", runs.Data)
	}
}
