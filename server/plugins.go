package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/config"
	"github.com/agentsvc/svc/internal/skill"
	"github.com/agentsvc/svc/plugins"
	"github.com/agentsvc/svc/plugins/mcp"
	"github.com/agentsvc/svc/skills"
	"github.com/agentsvc/svc/tools"
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
	for _, l := range mcpPlugins(old) {
		kept[key(l)] = true
	}
	still := map[string]bool{}
	for _, l := range mcpPlugins(cur) {
		still[key(l)] = true
	}
	for _, l := range mcpPlugins(old) {
		if !still[key(l)] {
			a.MCP.Remove(l.Slug)
		}
	}
	declared := 0
	for _, l := range mcpPlugins(cur) {
		if kept[key(l)] {
			continue
		}
		for _, s := range l.Manifest.MCPServers {
			if err := a.MCP.Add(mcpServer(l, s)); err != nil {
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

// mcpPlugins are the enabled plugins of s that declare MCP servers.
func mcpPlugins(s *plugins.Set) []*plugins.Loaded {
	var out []*plugins.Loaded
	for _, l := range s.List() {
		if l.Enabled() && len(l.Manifest.MCPServers) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// mcpServer is the manager's declaration of a plugin's MCP server (run from the plugin folder).
func mcpServer(l *plugins.Loaded, s plugins.MCPServer) mcp.ServerConfig {
	c := mcp.ServerConfig{
		Slug: l.Slug, Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Dir: l.Dir,
		URL: s.URL, Headers: s.Headers, RequireApproval: s.RequireApproval,
	}
	for _, sec := range s.Secrets {
		c.Secrets = append(c.Secrets, mcp.SecretDecl{Key: sec.Key, Label: sec.Label, Required: sec.Required, Header: sec.Header, Env: sec.Env})
	}
	return c
}

// searchProviders are the palette search providers of the current plugins: those of
// compiled-in plugins, then the MCP tools plugins name in searchProviders.
func (a *App) searchProviders() []plugins.NamedProvider {
	cur := a.Plugins.Current()
	out := cur.SearchProviders()
	for _, l := range cur.List() {
		if !l.Enabled() {
			continue
		}
		for _, sp := range l.Manifest.SearchProviders {
			out = append(out, plugins.NamedProvider{Plugin: l.Slug, Search: mcpSearch(a.Tools, l.Slug, sp)})
		}
	}
	return out
}

// mcpSearch asks the MCP tool sp of plugin slug: arguments {q, limit}, answer {hits: [...]}
// as structured content or as JSON text. The tool is looked up at each search, so one that
// appears after a refresh is used at once.
func mcpSearch(reg *tools.Registry, slug string, sp plugins.SearchProvider) plugins.SearchProviderFunc {
	return func(ctx context.Context, q plugins.Query) ([]plugins.Hit, error) {
		var tool *mcp.Tool
		for _, t := range reg.All() {
			if mt, ok := t.(*mcp.Tool); ok && mt.Spec().PluginSlug == slug && mt.Server().Name == sp.Server && mt.MCPName() == sp.Tool {
				tool = mt
			}
		}
		if tool == nil {
			return nil, fmt.Errorf("MCP tool %s of server %s is not available", sp.Tool, sp.Server)
		}
		res, err := tool.Execute(ctx, tools.Call{Operation: "call", Args: map[string]any{"q": q.Text, "limit": q.Limit}})
		if err != nil {
			return nil, err
		}
		raw := []byte(res.Data)
		if len(raw) == 0 {
			raw = []byte(res.Content)
		}
		var answer struct {
			Hits []struct {
				Type     string   `json:"type"`
				ID       string   `json:"id"`
				Title    string   `json:"title"`
				Subtitle *string  `json:"subtitle"`
				URL      string   `json:"url"`
				Score    *float64 `json:"score"`
			} `json:"hits"`
		}
		if err := json.Unmarshal(raw, &answer); err != nil {
			return nil, fmt.Errorf("MCP search tool %s answered no {hits: [...]}: %w", sp.Tool, err)
		}
		out := make([]plugins.Hit, 0, len(answer.Hits))
		for _, h := range answer.Hits {
			score := 0.5
			if h.Score != nil {
				score = *h.Score
			}
			out = append(out, plugins.Hit{Type: h.Type, ID: h.ID, Title: h.Title, Subtitle: h.Subtitle, URL: h.URL, Score: score})
		}
		return out, nil
	}
}

// closerFunc adapts a function to io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }
