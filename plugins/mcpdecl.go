package plugins

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsvc/svc/plugins/mcp"
	"github.com/agentsvc/svc/tools"
)

// What the plugins declare of MCP: their servers for the MCP manager, and the search providers
// their servers' tools answer.

// MCPPlugins are the enabled plugins of s that declare MCP servers.
func (s *Set) MCPPlugins() []*Loaded {
	var out []*Loaded
	for _, l := range s.List() {
		if l.Enabled() && len(l.Manifest.MCPServers) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// MCPServerConfig is the MCP manager's declaration of a plugin's MCP server: a stdio server runs
// from the plugin folder (its command and args may name the plugin's files relative to it); a
// URL server has no folder (the manager refuses a directory for one).
func MCPServerConfig(l *Loaded, s MCPServer) mcp.ServerConfig {
	c := mcp.ServerConfig{
		Slug: l.Slug, Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env,
		URL: s.URL, Headers: s.Headers, RequireApproval: s.RequireApproval,
	}
	if s.Command != "" {
		c.Dir = l.Dir
	}
	for _, sec := range s.Secrets {
		c.Secrets = append(c.Secrets, mcp.SecretDecl{Key: sec.Key, Label: sec.Label, Required: sec.Required, Header: sec.Header, Env: sec.Env})
	}
	return c
}

// SearchProvidersWith are the palette search providers of s: those of compiled-in plugins,
// then the MCP tools (registered in reg) that manifests name in searchProviders.
func (s *Set) SearchProvidersWith(reg *tools.Registry) []NamedProvider {
	out := s.SearchProviders()
	for _, l := range s.List() {
		if !l.Enabled() {
			continue
		}
		for _, sp := range l.Manifest.SearchProviders {
			out = append(out, NamedProvider{Plugin: l.Slug, Search: mcpSearch(reg, l.Slug, sp)})
		}
	}
	return out
}

// mcpSearch asks the MCP tool sp of plugin slug: arguments {q, limit}, answer {hits: [...]}
// as structured content or as JSON text. The tool is looked up at each search, so one that
// appears after a refresh is used at once.
func mcpSearch(reg *tools.Registry, slug string, sp SearchProvider) SearchProviderFunc {
	return func(ctx context.Context, q Query) ([]Hit, error) {
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
		out := make([]Hit, 0, len(answer.Hits))
		for _, h := range answer.Hits {
			score := 0.5
			if h.Score != nil {
				score = *h.Score
			}
			out = append(out, Hit{Type: h.Type, ID: h.ID, Title: h.Title, Subtitle: h.Subtitle, URL: h.URL, Score: score})
		}
		return out, nil
	}
}
