package server

import (
	"context"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/plugins"
	"github.com/agentsvc/svc/plugins/mcp"
	"github.com/agentsvc/svc/skills"
)

// mcpRefresh is how often the tools of every MCP server are listed again, for servers that do
// not announce changes (notifications/tools/list_changed).
const mcpRefresh = 5 * time.Minute

// startMCP declares the MCP servers of the enabled plugins and lists their tools into the tool
// registry. A server that cannot start keeps the service running (logged); its tools appear
// once it answers a later refresh.
func (a *App) startMCP(ctx context.Context, cfg *config.Config) {
	a.MCP = mcp.NewManager(mcp.Options{
		Logger: a.Logger, CallTimeout: time.Duration(cfg.ToolHTTPTimeout) * time.Second, RefreshInterval: mcpRefresh,
		Net: a.Net, AllowedHosts: strings.FieldsFunc(cfg.MCPAllowedHosts, func(r rune) bool { return r == ',' || r == ' ' }),
		IdleTimeout:           time.Duration(cfg.MCPIdleSeconds) * time.Second,
		MaxProcessesPerServer: cfg.MCPMaxProcessesPerServer, MaxProcesses: cfg.MCPMaxProcesses,
	})
	a.closers = append(a.closers, closerFunc(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return a.MCP.Close(ctx)
	}))
	a.reconcileMCP(ctx, nil, a.Plugins.Current())
	a.Plugins.OnReload(a.reconcileMCP)
	a.Plugins.OnReload(func(_ context.Context, _, cur *plugins.Set) {
		for _, p := range a.Skills.Reload(append([]skill.Provider{skills.Provider()}, cur.SkillProviders()...)...) {
			a.Logger.Warn("skill skipped", "source", p.Source, "folder", p.Folder, "err", p.Err)
		}
	})
}

// reconcileMCP brings the MCP servers in line with the plugins after a (re)load: servers of
// plugins that left or changed (another folder or version) are removed with their tools, those
// of new or changed plugins declared, and the tool lists synced into the registry.
func (a *App) reconcileMCP(ctx context.Context, old, cur *plugins.Set) {
	key := func(l *plugins.Loaded) string { return l.Slug + "\x00" + l.Dir + "\x00" + l.Version() }
	kept := map[string]bool{}
	for _, l := range old.MCPPlugins() {
		kept[key(l)] = true
	}
	still := map[string]bool{}
	for _, l := range cur.MCPPlugins() {
		still[key(l)] = true
	}
	for _, l := range old.MCPPlugins() {
		if !still[key(l)] {
			a.MCP.Remove(l.Slug)
		}
	}
	declared := 0
	for _, l := range cur.MCPPlugins() {
		if kept[key(l)] {
			continue
		}
		for _, s := range l.Manifest.MCPServers {
			if err := a.MCP.Add(plugins.MCPServerConfig(l, s)); err != nil {
				a.Logger.Warn("MCP server not declared", "plugin", l.Slug, "server", s.Name, "err", err)
				continue
			}
			declared++
		}
	}
	if declared == 0 {
		return
	}
	if err := a.MCP.Sync(ctx, a.Tools); err != nil {
		a.Logger.Warn("some MCP servers are unavailable", "err", err)
	}
}

// searchProviders are the palette search providers of the current plugins.
func (a *App) searchProviders() []plugins.NamedProvider {
	return a.Plugins.Current().SearchProvidersWith(a.Tools)
}

// closerFunc adapts a function to io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }
