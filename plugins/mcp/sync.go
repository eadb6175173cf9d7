package mcp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

// Sync lists the tools of every declared server (starting servers as needed) and makes reg hold
// exactly one tool per MCP tool: new ones are registered, changed ones replaced, vanished ones
// unregistered. A server that cannot be listed keeps the tools it had. Sync also makes reg the
// registry that list-change notifications and the periodic refresh update, until Close.
//
// It returns nil, or the errors of the servers that failed, joined: svcerr.ErrUnavailable (a
// server that cannot be started, reached or listed, or a closed Manager), svcerr.ErrInvalid (a
// URL the SSRF screen refuses, with netguard.ErrBlocked), svcerr.ErrConflict (a tool name taken
// by another tool of the registry).
func (m *Manager) Sync(ctx context.Context, reg *tools.Registry) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errClosed()
	}
	m.reg = reg
	srvs := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		srvs = append(srvs, s)
	}
	m.mu.Unlock()
	sort.Slice(srvs, func(i, j int) bool { return srvs[i].cfg.id() < srvs[j].cfg.id() })
	var errs []error
	for _, s := range srvs {
		if err := m.syncServer(ctx, reg, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listTools lists every tool of a server (all pages) on its listing connection.
func (m *Manager) listTools(ctx context.Context, srv *server) ([]*sdk.Tool, error) {
	var secrets map[string]string
	if m.opts.ListSecrets != nil {
		secrets = srv.cfg.secretValues(anyMap(m.opts.ListSecrets(srv.cfg)))
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.CallTimeout)
	defer cancel()
	c, err := m.session(ctx, srv, secrets)
	if err != nil {
		return nil, err
	}
	defer m.release(c)
	var out []*sdk.Tool
	for t, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: listing tools: %w: %w", srv.cfg.id(), svcerr.ErrUnavailable, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// syncServer brings reg in line with one server's current tool list.
func (m *Manager) syncServer(ctx context.Context, reg *tools.Registry, srv *server) error {
	srv.syncMu.Lock()
	defer srv.syncMu.Unlock()
	listed, err := m.listTools(ctx, srv)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(listed))
	byName := make(map[string]*sdk.Tool, len(listed))
	for _, t := range listed {
		if _, dup := byName[t.Name]; dup || t.Name == "" {
			continue
		}
		byName[t.Name] = t
		names = append(names, t.Name)
	}
	assigned := assignNames(srv.cfg.Slug, srv.cfg.Name, names)

	var errs []error
	want := map[string]*Tool{}
	for _, n := range names {
		nc := assigned[n]
		t, err := newTool(m, srv, byName[n], nc[0], nc[1])
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp server %s: %w: %w", srv.cfg.id(), svcerr.ErrInvalid, err))
			continue
		}
		want[t.spec.Class] = t
	}
	for class := range srv.registered {
		if _, ok := want[class]; !ok {
			reg.Unregister(class)
			delete(srv.registered, class)
			m.log.Info("mcp tool removed", "server", srv.cfg.id(), "class", class)
		}
	}
	classes := make([]string, 0, len(want))
	for c := range want {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, class := range classes {
		t := want[class]
		if old, ok := srv.registered[class]; ok && old.mcpName == t.mcpName && reflect.DeepEqual(old.spec, t.spec) {
			if cur, ok := reg.Lookup(class); ok && cur == tools.Tool(old) {
				continue // unchanged and still ours
			}
		}
		if err := reg.Replace(t); err != nil {
			errs = append(errs, fmt.Errorf("mcp server %s: tool %q: %w", srv.cfg.id(), t.mcpName, err))
			continue
		}
		if _, ok := srv.registered[class]; !ok {
			m.log.Info("mcp tool registered", "server", srv.cfg.id(), "tool", tools.ModelName(t.spec))
		}
		srv.registered[class] = t
	}
	return errors.Join(errs...)
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
