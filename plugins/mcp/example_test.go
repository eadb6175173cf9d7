package mcp_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentsvc/svc/plugins/mcp"
	"github.com/agentsvc/svc/tools"
)

// The wiring of a service: one Manager, servers declared by plugins (or an administrator),
// tools synced into the service's registry, the Manager closed on shutdown. The agent loop runs
// the registered tools itself (they implement tools.Executor).
func Example() {
	ctx := context.Background()
	reg := tools.NewRegistry() // the service's registry, core tools already registered

	m := mcp.NewManager(mcp.Options{
		Logger:          slog.Default(),
		CallTimeout:     30 * time.Second, // tool_http_timeout
		RefreshInterval: 5 * time.Minute,
	})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	}()

	_ = m.Add(mcp.ServerConfig{
		Slug: "files", Name: "fs", Command: "node", Args: []string{"server.js"}, Dir: "/srv/plugins/files",
	})
	_ = m.Add(mcp.ServerConfig{
		Slug: "tracker", Name: "issues", URL: "https://mcp.example.com/mcp",
		Secrets: []mcp.SecretDecl{{Key: "token", Label: "API token", Required: true}},
	})
	if err := m.Sync(ctx, reg); err != nil {
		slog.Warn("some MCP servers are unavailable", "err", err)
	}
}
