package plugins_test

import (
	"testing"

	"github.com/agentsvc/svc/plugins"
)

// TestMCPServerConfigOfEachTransport: a plugin's stdio server runs from the plugin folder; its
// HTTP server has no folder, so the MCP manager accepts its declaration (one with a folder was
// refused, "args, env and dir apply to stdio servers only", and a plugin's HTTP server never
// got declared).
func TestMCPServerConfigOfEachTransport(t *testing.T) {
	t.Parallel()
	l := &plugins.Loaded{Slug: "acme", Dir: t.TempDir()}
	stdio := plugins.MCPServerConfig(l, plugins.MCPServer{Name: "py", Command: "python3", Args: []string{"server.py"}})
	if err := stdio.Validate(); err != nil || stdio.Dir != l.Dir {
		t.Fatalf("stdio server: dir %q, %v", stdio.Dir, err)
	}
	web := plugins.MCPServerConfig(l, plugins.MCPServer{Name: "web", URL: "https://mcp.example.com/mcp"})
	if err := web.Validate(); err != nil || web.Dir != "" {
		t.Fatalf("HTTP server: dir %q, %v", web.Dir, err)
	}
}
