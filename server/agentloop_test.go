package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// TestAgentLoopEndToEnd is the walkthrough with the scripted driver: a task whose tool
// needs approval pauses, is approved with edited arguments and completes; the worker daemon
// drives it, and an SSE subscriber sees each state.
func TestAgentLoopEndToEnd(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the scripted driver reads its script relative to the working directory
	script := `[
	  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "1+1"}}], "usage": {"input_tokens": 12, "output_tokens": 4}},
	  {"text": "The result is 42.", "usage": {"input_tokens": 30, "output_tokens": 6}}
	]`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t)
	c, u := env.UserClient("ada@example.com") // the first user: an administrator (scripted configs need it)

	agent := scriptedAgent(t, c, "Lab", "script.json", "core.CalculatorTool", "calculate", false)

	// Subscribe to the caller's task topic over real HTTP, and run the worker.
	events := followTasks(t, env, c, u.Id)
	daemon := runWorker(t, env)

	var created gen.TaskResponse
	c.Post("/tasks", map[string]any{"agent_id": agent.Id, "prompt": "What is 6*7?"}).Expect(t, 201).Decode(t, &created)
	id := created.Data.Task.Id
	if created.Data.Task.Status != gen.TaskStatusQUEUED {
		t.Fatalf("created task is %s", created.Data.Task.Status)
	}
	daemon.Notify()
	waitEvent(t, events, id, gen.TaskStatusPENDINGAPPROVAL)
	task := getTask(t, c, id)
	if task.Status != gen.TaskStatusPENDINGAPPROVAL || task.Pending == nil || len(task.Pending.ToolCalls) != 1 {
		t.Fatalf("paused task = %+v", task)
	}
	c.Post(fmt.Sprintf("/tasks/%d/approve", id), map[string]any{"decisions": []map[string]any{
		{"provider_call_id": "c1", "decision": "approve", "arguments": map[string]any{"expression": "6*7"}},
	}}).Expect(t, 200)
	daemon.Notify()
	waitEvent(t, events, id, gen.TaskStatusCOMPLETED)
	task = getTask(t, c, id)
	if task.Answer == nil || *task.Answer != "The result is 42." || task.StepsUsed != 2 || task.Usage.InputTokens != 42 {
		t.Fatalf("completed task = %+v", task)
	}
}

func getTask(t *testing.T, c *apitest.Client, id int64) gen.Task {
	t.Helper()
	var r gen.TaskResponse
	c.Get(fmt.Sprintf("/tasks/%d", id)).Expect(t, 200).Decode(t, &r)
	return r.Data.Task
}

// waitEvent reads task events until task id reaches status.
func waitEvent(t *testing.T, events <-chan string, id int64, status gen.TaskStatus) {
	t.Helper()
	for {
		var ev gen.Task
		if err := json.Unmarshal([]byte(nextEvent(t, events)), &ev); err != nil {
			t.Fatalf("event is no task: %v", err)
		}
		if ev.Id == id && ev.Status == status {
			return
		}
	}
}
