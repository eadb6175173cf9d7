package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// TestPluginMCPTool is issue 11's walkthrough for MCP: a plugin declares a stdio MCP server (a
// Python script speaking MCP); its tools are in the inventory and the registry as
// `<slug>:<name>`; enabled on an agent, the model's call pauses for approval (MCP tools require
// it by default), runs once approved and its result is the tool turn of the transcript; the
// server's search tool feeds the palette; after the server is killed the next call restarts it.
// Not parallel: the scripted driver reads its script from the working directory.
func TestPluginMCPTool(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the MCP test server is a Python script")
	}
	// A copy of the MCP package's test server at a path of this test's own, so that killing it
	// below touches no other test's server.
	src, err := os.ReadFile("../plugins/mcp/testdata/server.py")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "notes_server.py")
	if err := os.WriteFile(script, src, 0o600); err != nil {
		t.Fatal(err)
	}
	plugins := pluginDir(t, map[string]string{
		"notes/plugin.json": fmt.Sprintf(`{"slug":"notes","class":"Acme\\Notes","name":"acme/notes","version":"1.0.0",
			"mcpServers":[{"name":"py","command":"python3","args":[%q,"--with-search"]}],
			"searchProviders":[{"server":"py","tool":"search"}]}`, script),
	})
	work := t.TempDir()
	t.Chdir(work)
	turns := `[
	  {"tool_calls": [{"id": "m1", "name": "notes:py_echo", "arguments": {"text": "hello from the model"}}]},
	  {"text": "Echoed."}
	]`
	if err := os.WriteFile(filepath.Join(work, "script.json"), []byte(turns+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, "SVC_PLUGINS_DIR="+plugins)
	c, _ := env.UserClient("ada@example.com")

	var inv gen.PluginListResponse
	c.Get("/plugins").Expect(t, http.StatusOK).Decode(t, &inv)
	if len(inv.Data.Plugins) != 1 || !inv.Data.Plugins[0].Enabled || inv.Data.Plugins[0].Contributes.Tools != 6 ||
		inv.Data.Plugins[0].Contributes.McpServers != 1 || inv.Data.Plugins[0].Contributes.SearchProviders != 1 {
		t.Fatalf("inventory = %+v", inv.Data.Plugins)
	}
	spec, ok := env.App.Tools.LookupModelName("notes:py_echo")
	if !ok || spec.Spec().PluginSlug != "notes" || !spec.Spec().Operations[0].RequiresApprovalByDefault {
		t.Fatalf("notes:py_echo registered = %v", ok)
	}
	class := spec.Spec().Class

	var g struct {
		Data struct{ Group gen.Group } `json:"data"`
	}
	c.Post("/groups", map[string]any{"name": "Lab"}).Expect(t, 201).Decode(t, &g)
	c.Post(fmt.Sprintf("/groups/%d/llm-configs", g.Data.Group.Id), map[string]any{
		"name": "script", "driver": "scripted", "model": "script", "base_url": "script.json", "is_default": true,
	}).Expect(t, 201)
	var a gen.AgentResponse
	c.Post("/agents", map[string]any{"name": "Notes", "system_prompt": "Echo.", "principal_id": g.Data.Group.PrincipalId}).
		Expect(t, 201).Decode(t, &a)
	c.Post(fmt.Sprintf("/agents/%d/tools/%s/enable", a.Data.Agent.Id, class), nil).Expect(t, 200)

	run := func() *store.Task {
		t.Helper()
		var created gen.TaskResponse
		c.Post("/tasks", map[string]any{"agent_id": a.Data.Agent.Id, "prompt": "Echo something."}).Expect(t, 201).Decode(t, &created)
		if tk := runQueued(t, env.App); tk.Status != taskstate.PendingApproval {
			t.Fatalf("task is %s, want PENDING_APPROVAL (MCP tools need approval by default)", tk.Status)
		}
		c.Post(fmt.Sprintf("/tasks/%d/approve", created.Data.Task.Id), map[string]any{"decisions": []map[string]any{
			{"provider_call_id": "m1", "decision": "approve"},
		}}).Expect(t, 200)
		tk := runQueued(t, env.App)
		if tk.Status != taskstate.Completed {
			t.Fatalf("task is %s (%+v), want COMPLETED", tk.Status, tk.Error)
		}
		return tk
	}
	toolTurn := func(tk *store.Task) string {
		t.Helper()
		calls, err := env.App.Store.ToolCalls(context.Background(), tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range calls {
			if call.ProviderCallID == "m1" {
				return string(call.Result)
			}
		}
		t.Fatalf("no tool call m1 in %+v", calls)
		return ""
	}
	first := run()
	if got := toolTurn(first); !strings.Contains(got, "hello from the model") {
		t.Fatalf("tool turn = %q", got)
	}

	var hits gen.SearchResponse
	c.Get("/search?q=weather").Expect(t, http.StatusOK).Decode(t, &hits)
	if len(hits.Data.Hits) != 1 || hits.Data.Hits[0].Type != "doc" || hits.Data.Hits[0].Title != "Notes on weather" {
		t.Fatalf("hits = %+v", hits.Data.Hits)
	}

	// Kill the server process (found by its command line); the next call starts it again.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	killed := 0
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(cmdline), script) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(p, "/proc/%d/cmdline", &pid); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	if killed == 0 {
		t.Fatal("no MCP server process was killed")
	}
	if got := toolTurn(run()); !strings.Contains(got, "hello from the model") {
		t.Fatalf("tool turn after the restart = %q", got)
	}
}
