package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

type mulIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type mulOut struct {
	Product int `json:"product"`
}

// TestPluginMCPServerByURL (issue 22, item 9): a plugin declares an MCP server by `url` (a
// streamable HTTP server on loopback, allowed by mcp_allowed_hosts); its tool is in the
// inventory and the registry and a task's call runs on the server. Before, every plugin server
// was declared with the plugin folder as its working directory, which a URL server refuses
// ("args, env and dir apply to stdio servers only"), so none was ever declared. Not parallel:
// the scripted driver reads its script from the working directory.
func TestPluginMCPServerByURL(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "multiply", Description: "Multiplies two integers."},
		func(ctx context.Context, req *sdk.CallToolRequest, in mulIn) (*sdk.CallToolResult, mulOut, error) {
			return nil, mulOut{Product: in.A * in.B}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	mcpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Plugin") != "calc" { // the manifest's static header
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(mcpSrv.Close) // after the service's cleanup, which ends the manager's open stream

	plugins := pluginDir(t, map[string]string{
		"calc/plugin.json": fmt.Sprintf(`{"slug":"calc","class":"Acme\\Calc","name":"acme/calc","version":"1.0.0",
			"mcpServers":[{"name":"web","url":%q,"headers":{"X-Plugin":"calc"}}]}`, mcpSrv.URL+"/mcp"),
	})
	work := t.TempDir()
	t.Chdir(work)
	turns := `[
	  {"tool_calls": [{"id": "m1", "name": "calc:web_multiply", "arguments": {"a": 6, "b": 7}}]},
	  {"text": "Done."}
	]`
	if err := os.WriteFile(filepath.Join(work, "script.json"), []byte(turns+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, "SVC_PLUGINS_DIR="+plugins, "SVC_MCP_ALLOWED_HOSTS=127.0.0.1")
	c, _ := env.UserClient("ada@example.com")

	var inv gen.PluginListResponse
	c.Get("/plugins").Expect(t, http.StatusOK).Decode(t, &inv)
	if len(inv.Data.Plugins) != 1 || inv.Data.Plugins[0].Contributes.McpServers != 1 || inv.Data.Plugins[0].Contributes.Tools != 1 {
		t.Fatalf("inventory = %+v", inv.Data.Plugins)
	}
	tool, ok := env.App.Tools.LookupModelName("calc:web_multiply")
	if !ok {
		t.Fatal("calc:web_multiply is not registered: the URL server was not declared")
	}

	a := scriptedAgent(t, c, "Lab", "script.json", tool.Spec().Class, "call", true)
	c.Post("/tasks", map[string]any{"agent_id": a.Id, "prompt": "6 times 7?"}).Expect(t, 201)
	tk := runQueued(t, env.App)
	if tk.Status != taskstate.Completed {
		t.Fatalf("task is %s (%+v), want COMPLETED", tk.Status, tk.Error)
	}
	calls, err := env.App.Store.ToolCalls(context.Background(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || !strings.Contains(string(calls[0].Result), `42`) {
		t.Fatalf("tool calls = %+v", calls)
	}
}
